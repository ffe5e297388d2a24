"""A request's inputs as the route's models: the body read within its size, anything validated."""

from __future__ import annotations

from typing import Any, TypeVar, overload

from pydantic import BaseModel, TypeAdapter, ValidationError

from chalicelib.api.routing.strict_json import parse_json
from chalicelib.envelope import validation_failed
from chalicelib.errors import BadRequest, PayloadTooLarge

MAX_BODY_BYTES = 1024 * 1024

ModelT = TypeVar("ModelT", bound=BaseModel)


def read_body(raw: bytes | None, *, required: bool) -> Any:
    """The body as strict JSON; an empty one is `{}` where its fields may come from the query."""
    raw = raw or b""
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLarge(MAX_BODY_BYTES)
    if not raw.strip():
        if not required:
            return {}
        raise BadRequest("The request body is empty; this route takes a JSON object.")
    return parse_json(raw)


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
    from chalicelib.schemas.common import JSON_TYPES

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
