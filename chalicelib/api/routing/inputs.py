"""A request's inputs as the route's models: the body read within its size, anything validated."""

from __future__ import annotations

from typing import Any, TypeVar, overload

from pydantic import BaseModel, TypeAdapter, ValidationError

from chalicelib.api.routing.strict_json import parse_json
from chalicelib.envelope import validation_failed
from chalicelib.errors import (
    BadRequest,
    FieldError,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationFailed,
    as_text,
)
from chalicelib.schemas.common import JSON_TYPES

MAX_BODY_BYTES = 1024 * 1024

# The charsets a JSON body may name: JSON between systems is UTF-8 (RFC 8259 §8.1).
JSON_CHARSETS = frozenset({"utf-8", "utf8"})

ModelT = TypeVar("ModelT", bound=BaseModel)


def read_body(raw: bytes | None, *, required: bool, content_type: str | None) -> Any:
    """The body as strict JSON; an empty one is `{}` where its fields may come from the query."""
    raw = raw or b""
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLarge(MAX_BODY_BYTES)
    if not raw.strip():
        if not required:
            return {}
        raise BadRequest("The request body is empty; this route takes a JSON object.")
    require_json(content_type)
    return parse_json(raw)


def require_json(content_type: str | None) -> None:
    """A body is read only when it says it is JSON (CONTRACT §6), whatever it holds.

    A `text/plain`, form or typeless body is what a page on another site can make a browser send
    without asking first (a CORS "simple" request): reading it as JSON let such a page sign in
    with guesses in a visitor's name, spending their throttle. A body that says
    `application/json` makes the browser ask (a preflight), which only allowed origins pass.
    """
    media_type, *parameters = (content_type or "").split(";")
    if media_type.strip().lower() != "application/json" or not all(
        _is_json_charset(parameter) for parameter in parameters
    ):
        raise UnsupportedMediaType(content_type or "")


def _is_json_charset(parameter: str) -> bool:
    name, _, value = parameter.partition("=")
    if not name.strip() and not value:
        return True  # an empty parameter, as in `application/json;`
    return name.strip().lower() == "charset" and value.strip().strip('"').lower() in JSON_CHARSETS


def query_values(params: Any, model: Any = None) -> dict[str, str]:
    """The query string, one value a name. A parameter of `model` sent more than once is a 400
    with its key: the document gives each one value (a repeated one is an array there), and which
    of the values counted would be a guess (Chalice's dict kept the last). Names the route does
    not read are left alone, as their single values are."""
    if not params:
        return {}
    getlist = getattr(params, "getlist", None)
    sent = {name: getlist(name) if getlist else [params[name]] for name in params}
    declared = _parameter_names(model)
    repeated = [
        FieldError(
            key=name, value=as_text(values), message=f"is sent {len(values)} times: send it once"
        )
        for name, values in sent.items()
        if len(values) > 1 and name in declared
    ]
    if repeated:
        submitted = {
            name: values[0] if len(values) == 1 else values for name, values in sent.items()
        }
        raise ValidationFailed(repeated, submitted)
    return {name: values[-1] for name, values in sent.items()}


def _parameter_names(model: Any) -> set[str]:
    fields = getattr(model, "model_fields", None) or {}
    return {name for name in fields} | {field.alias for field in fields.values() if field.alias}


@overload
def validate(
    model: type[ModelT], data: Any, prefix: str = "body", *, json_types: bool | None = None
) -> ModelT: ...
@overload
def validate(
    model: Any, data: Any, prefix: str = "body", *, json_types: bool | None = None
) -> Any: ...
def validate(model: Any, data: Any, prefix: str = "body", *, json_types: bool | None = None) -> Any:
    """`data` as `model`, or the validation failure of CONTRACT §6 with `data` as `object`.

    A body's booleans and integers must be JSON's own (`json_types`, the default for a body);
    the path's and the query string's are text, read as the document's types."""

    strict = prefix == "body" if json_types is None else json_types
    context = JSON_TYPES if strict else None
    try:
        if isinstance(model, type) and issubclass(model, BaseModel):
            if prefix == "body" and not isinstance(data, dict):
                raise BadRequest("The request body must be a JSON object.")
            return model.model_validate(data, context=context)
        return TypeAdapter(model).validate_python(data, context=context)
    except ValidationError as error:
        raise validation_failed(error, data, prefix=prefix) from None
