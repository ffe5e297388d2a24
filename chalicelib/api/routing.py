"""The one mechanism every route goes through.

`@route(...)` registers a view on a blueprint and wraps the handler so that, in this order:
the body is size-checked and parsed, the caller is authenticated, path, query and body are validated
with Pydantic, the group named by the path is found and the declared privilege is checked, the
handler runs, and its result or error becomes the envelope (CONTRACT §6). Each call is logged as one
JSON line. The registry `ROUTES` describes every route (the OpenAPI document is made from it).
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from chalicelib.auth import Caller, Need, token_from_headers
from chalicelib.envelope import (
    JSON_HEADERS,
    error_payload,
    failure_payload,
    internal_error_payload,
    success_payload,
    validation_failed,
)
from chalicelib.errors import AgoraError, BadRequest, PayloadTooLarge, ValidationFailed
from chalicelib.logs import get_logger
from chalicelib.schemas.common import ApiModel, Guid

MAX_BODY_BYTES = 1024 * 1024
log = get_logger("http")

# Path parameters by their spec names: GUIDs, or positive integers.
INTEGER_PARAMS = {"eventId", "commentId", "sectionId", "notificationId"}


@dataclass
class Call:
    """What a handler gets: the validated inputs and who is calling."""

    request: Any
    caller: Caller | None
    path: Any = None
    query: Any = None
    body: Any = None
    # The group named by the route's `group` path parameter, already found and privilege-checked.
    group: Any = None
    raw_body: Any = None
    # What a validation failure answers in `object`: the parsed body unless the view sets another
    # (a view that merges query and body). Services raise without it; `_serve` fills it in.
    submitted: Any = None

    @property
    def signed_in(self) -> Caller:
        assert self.caller is not None, "route declared public but handler needs a caller"
        return self.caller


@dataclass(frozen=True)
class RouteSpec:
    method: str
    path: str
    handler: Callable[..., Any]
    need: Need | None
    group_param: str | None
    path_model: type[BaseModel] | None
    query_model: type[BaseModel] | None
    body_model: Any
    response_model: Any
    summary: str
    tag: str
    content_type: str = "application/json"
    path_params: tuple[str, ...] = field(default=())


ROUTES: list[RouteSpec] = []


def _path_model(path: str, name: str) -> type[BaseModel] | None:
    params = re.findall(r"{(\w+)}", path)
    if not params:
        return None
    fields: dict[str, Any] = {}
    for param in params:
        annotation = int if param in INTEGER_PARAMS else Guid
        fields[param] = (annotation, ...)
    # Built on first use, like every API model (cold start).
    return create_model(f"{name}Path", __config__=ConfigDict(defer_build=True), **fields)


def route(
    blueprint: Any,
    method: str,
    path: str,
    *,
    need: Need | None = Need.SIGNED_IN,
    group: str | None = None,
    query: type[BaseModel] | None = None,
    body: Any = None,
    response: Any = None,
    summary: str = "",
    content_type: str = "application/json",
) -> Callable[[Callable[[Call], Any]], Callable[[Call], Any]]:
    """Declare a route.

    need:  privilege the caller needs; `None` means no token is required (public).
    group: name of the path parameter holding the group the privilege applies to.
    query, body: Pydantic models (body may be a TypeAdapter-able annotation such as a union).
    response: the model of `object`, for the OpenAPI document.
    """

    if need in (Need.ENTER, Need.MODERATOR, Need.GROUP_ADMIN) and group is None:
        # Checked here it could not be; a handler that loads the group checks it itself
        # (`call.signed_in.require(...)`) and declares SIGNED_IN, so nothing passes unchecked.
        raise ValueError(f"{path}: {need.value} needs the group's path parameter (group=...)")

    def decorate(handler: Callable[[Call], Any]) -> Callable[[Call], Any]:
        path_model = _path_model(path, _camel(handler.__name__))
        spec = RouteSpec(
            method=method,
            path=path,
            handler=handler,
            need=need,
            group_param=group,
            path_model=path_model,
            query_model=query,
            body_model=body,
            response_model=response,
            summary=summary or (handler.__doc__ or "").strip().split("\n")[0],
            tag=blueprint._import_name.rsplit(".", 1)[-1],
            content_type=content_type,
            path_params=tuple(re.findall(r"{(\w+)}", path)),
        )
        ROUTES.append(spec)

        @functools.wraps(handler)
        def view(**path_values: str) -> Any:
            return _serve(blueprint, spec, path_values)

        # Any content type reaches the view, which answers a non-JSON body with the envelope
        # rather than Chalice's own 415.
        blueprint.route(path, methods=[method], content_types=_ANY_CONTENT)(view)
        return handler

    return decorate


_ANY_CONTENT = [
    "application/json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "application/octet-stream",
    "application/xml",
    "text/xml",
    "text/html",
]


def _camel(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))


def _response(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    from chalice import Response

    return Response(
        body=json.dumps(payload, ensure_ascii=False),
        status_code=status,
        headers={**JSON_HEADERS, **(headers or {})},
    )


def _parse_body(request: Any, spec: RouteSpec) -> Any:
    raw = request.raw_body or b""
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLarge(MAX_BODY_BYTES)
    if spec.body_model is None:
        return None
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("The request body is not valid JSON.") from None


def validate(model: Any, data: Any, prefix: str = "body") -> Any:
    """`data` as `model`, or the validation failure of CONTRACT §6 with `data` as `object`."""
    from pydantic import TypeAdapter

    try:
        if isinstance(model, type) and issubclass(model, BaseModel):
            if prefix == "body" and not isinstance(data, dict):
                raise BadRequest("The request body must be a JSON object.")
            return model.model_validate(data)
        return TypeAdapter(model).validate_python(data)
    except ValidationError as error:
        raise validation_failed(error, data, prefix=prefix) from None


def authenticate(request: Any, path: str) -> Caller:
    from chalicelib.services.security import SecurityService

    return SecurityService.default().caller_for_token(token_from_headers(request.headers, path))


def _serve(blueprint: Any, spec: RouteSpec, path_values: dict[str, str]) -> Any:
    started = time.perf_counter()
    request = blueprint.current_request
    status = 500
    caller: Caller | None = None
    call: Call | None = None
    try:
        raw_body = _parse_body(request, spec)
        if spec.need is not None:
            caller = authenticate(request, spec.path)
        call = Call(request=request, caller=caller, raw_body=raw_body, submitted=raw_body)
        if spec.path_model is not None:
            call.path = validate(spec.path_model, path_values, "path")
        if spec.query_model is not None:
            call.query = validate(spec.query_model, dict(request.query_params or {}), "query")
        if spec.body_model is not None:
            call.body = validate(spec.body_model, raw_body, "body")
        if spec.group_param is not None:
            from chalicelib.services.groups import GroupService

            group_id = getattr(call.path, spec.group_param)
            call.group = GroupService.default().get(group_id, key=spec.group_param)
        if caller is not None and spec.need not in (None, Need.SIGNED_IN):
            caller.require(spec.need, call.group)
        result = spec.handler(call)
        if _is_response(result):
            status = result.status_code
            return result
        status = 200
        return _response(200, success_payload(result))
    except AgoraError as error:
        if isinstance(error, ValidationFailed) and error.submitted is None and call is not None:
            error.submitted = call.submitted
        status = error.status
        return _response(status, error_payload(error))
    except Exception:
        status = 500
        log.exception("unexpected error", extra={"route": spec.path, "method": spec.method})
        return _response(500, internal_error_payload())
    finally:
        log.info(
            "request",
            extra={
                "requestId": _request_id(blueprint),
                "route": spec.path,
                "method": spec.method,
                "status": status,
                "durationMs": round((time.perf_counter() - started) * 1000, 2),
                "userId": caller.user_id if caller else None,
            },
        )


def _is_response(result: Any) -> bool:
    from chalice import Response

    return isinstance(result, Response)


def _request_id(blueprint: Any) -> str | None:
    try:
        return blueprint.lambda_context.aws_request_id
    except Exception:  # noqa: BLE001 - no context outside Lambda (tests calling views directly)
        return None


# --- Chalice's own answers, reshaped into the envelope --------------------------------------------

_CHALICE_ERRORS = {
    400: "The request is not valid.",
    403: "Not found.",
    404: "Not found.",
    405: "This method is not allowed on this path.",
    413: "The request body is too large.",
    415: "The request body must be JSON.",
    500: "Something went wrong on our side; it has been logged.",
}


def envelope_middleware(event: Any, get_response: Callable[[Any], Any]) -> Any:
    """Chalice answers some requests before any view runs (405, 415, its own 500): envelope them."""
    response = get_response(event)
    body = response.body
    if response.status_code >= 400 and isinstance(body, dict) and "Code" in body:
        status = 400 if response.status_code == 415 else response.status_code
        message = _CHALICE_ERRORS.get(response.status_code, str(body.get("Message", "")))
        headers = {k: v for k, v in response.headers.items() if k.lower() == "allow"}
        return _response(status, failure_payload(message), headers)
    return response


def not_found_payload() -> dict[str, Any]:
    return failure_payload("There is no such path in this API.")


__all__ = ["Call", "ROUTES", "RouteSpec", "route", "validate", "envelope_middleware", "ApiModel"]
