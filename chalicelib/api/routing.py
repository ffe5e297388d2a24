"""The one mechanism every route goes through.

`@route(...)` registers a view on a blueprint and wraps the handler so that, in this order:
the caller is authenticated, the path is validated, the group the privilege applies to is found and
the declared privilege is checked (a caller without it gets 403 whatever the body: CONTRACT §6),
the query is validated, the body is size-checked, parsed strictly and validated, the handler runs,
and its result or error becomes the envelope (CONTRACT §6). Each call is logged as one JSON line.
The registry `ROUTES` describes every route (the OpenAPI document is made from it).

On routes whose privilege depends on a stored record (an event, a comment), the handler checks it;
the body is parsed and validated on its first use, so a handler that checks first answers 403 first.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from chalicelib import deps
from chalicelib.auth import Caller, Need, token_from_headers
from chalicelib.envelope import (
    JSON_HEADERS,
    error_payload,
    failure_payload,
    internal_error_payload,
    success_payload,
    validation_failed,
)
from chalicelib.errors import (
    AgoraError,
    BadRequest,
    Conflict,
    PayloadTooLarge,
    ServiceUnavailable,
    ValidationFailed,
    has_surrogate,
    safe_text,
)
from chalicelib.logs import get_logger
from chalicelib.sanitize import without_controls
from chalicelib.schemas.common import ApiModel, Guid

MAX_BODY_BYTES = 1024 * 1024
# Deepest nesting of arrays and objects a body may have (CONTRACT §6).
MAX_BODY_DEPTH = 64
log = get_logger("http")

# Path parameters by their spec names: GUIDs, or positive integers.
INTEGER_PARAMS = {"eventId", "commentId", "sectionId", "notificationId"}


_UNREAD: Any = object()

# What a route validates its path, query and body into (its Pydantic models): a handler may say
# `call: Call[EventPath, EventListQuery, EventWrite]`; a bare `Call` leaves them `Any`.
PathT = TypeVar("PathT")
QueryT = TypeVar("QueryT")
BodyT = TypeVar("BodyT")


@dataclass
class Call(Generic[PathT, QueryT, BodyT]):
    """What a handler gets: the validated inputs and who is calling.

    `raw_body` (the strictly parsed JSON) and `body` (validated by the route's body model) are
    made on first use, so nothing about the body is looked at before the privilege is checked.
    """

    request: Any
    caller: Caller | None
    path: PathT = None  # type: ignore[assignment]  # set by `_serve` when the route has one
    query: QueryT = None  # type: ignore[assignment]
    # The group named by the route's `group` parameter, already found and privilege-checked.
    group: Any = None
    # What a validation failure answers in `object`: the parsed body unless the view sets another
    # (a view that merges query and body). Services raise without it; `_serve` fills it in.
    submitted: Any = None
    spec: RouteSpec | None = None
    _raw_body: Any = field(default=_UNREAD, repr=False)
    _body: Any = field(default=_UNREAD, repr=False)

    @property
    def signed_in(self) -> Caller:
        assert self.caller is not None, "route declared public but handler needs a caller"
        return self.caller

    @property
    def parsed_body(self) -> Any:
        """The body if it has been parsed (and was JSON), else None."""
        return None if self._raw_body is _UNREAD else self._raw_body

    @property
    def raw_body(self) -> Any:
        if self._raw_body is _UNREAD:
            self._raw_body = _parse_body(self.request, self.spec)
        return self._raw_body

    @property
    def body(self) -> BodyT:
        if self._body is _UNREAD:
            model = self.spec.body_model if self.spec is not None else None
            self._body = None if model is None else validate(model, self.raw_body, "body")
        return self._body


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
    body_required: bool = True
    # The answer carries a secret (a token) although the route needs no sign-in.
    secret: bool = False


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
    body_required: bool = True,
    secret: bool = False,
) -> Callable[[Callable[[Call], Any]], Callable[[Call], Any]]:
    """Declare a route.

    need:  privilege the caller needs; `None` means no token is required (public).
    group: name of the path parameter holding the group the privilege applies to, or
           `body.<field>` when the body names it (the field alone is read before the privilege
           check; a body that names no existing group is left to the body's validation), or
           `query.<param>` for an optional query parameter (absent or unknown: root only).
    query, body: Pydantic models (body may be a TypeAdapter-able annotation such as a union).
    body_required: False where the body's fields may come from the query string instead.
    secret: the answer of this public route carries a secret (never kept by a cache).
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
            body_required=body_required,
            secret=secret,
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

    text = json.dumps(payload, ensure_ascii=False)
    if has_surrogate(text):
        # A lone surrogate that reached an answer cannot be UTF-8: escape it rather than
        # fail to answer at all (values echoed in errors are already made safe).
        text = json.dumps(payload, ensure_ascii=True)
    return Response(body=text, status_code=status, headers={**JSON_HEADERS, **(headers or {})})


def _parse_body(request: Any, spec: RouteSpec | None) -> Any:
    if spec is None or spec.body_model is None:
        return None
    raw = request.raw_body or b""
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLarge(MAX_BODY_BYTES)
    if not raw.strip():
        if not spec.body_required:
            return {}
        raise BadRequest("The request body is empty; this route takes a JSON object.")
    return parse_json(raw)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        # 1e999 parses as infinity, which JSON cannot carry back.
        raise ValueError("number out of range")
    return number


def parse_json(raw: bytes | str) -> Any:
    """Strict JSON (CONTRACT §6): no NaN or Infinity, at most 64 levels deep, no lone surrogate."""
    try:
        data = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        raise _too_deep() from None
    except json.JSONDecodeError as error:
        # Where it went wrong, as an editor counts: line and column from 1.
        raise BadRequest(
            f"The request body is not valid JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno}."
        ) from None
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("The request body is not valid JSON.") from None
    _check_parsed(data)
    return data


def _too_deep() -> BadRequest:
    return BadRequest(f"The request body nests arrays and objects deeper than {MAX_BODY_DEPTH}.")


def _check_parsed(data: Any) -> None:
    """Depth and text of a parsed body, without recursion (a body may be nested on purpose).

    Lone surrogates are refused; C0 control characters other than tab and newline are removed
    from every string, here, once for every route (CONTRACT §6: they are never stored)."""
    if isinstance(data, str) and has_surrogate(data):
        _refuse_surrogate((), data, data)
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(data, 0, ())]
    while stack:
        value, depth, loc = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if depth >= MAX_BODY_DEPTH:
            raise _too_deep()
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        for key, item in items:
            if isinstance(key, str) and has_surrogate(key):
                _refuse_surrogate((*loc, key), key, data)
            if isinstance(item, str):
                if has_surrogate(item):
                    _refuse_surrogate((*loc, key), item, data)
                cleaned = without_controls(item)
                if cleaned is not item:
                    value[key] = cleaned
            else:
                stack.append((item, depth + 1, (*loc, key)))


def _refuse_surrogate(loc: tuple[Any, ...], value: str, data: Any) -> None:
    key = ".".join(safe_text(str(part)) for part in loc) or "body"
    raise ValidationFailed.one(
        key,
        value,
        "contains a lone surrogate (an escape in \\ud800-\\udfff without its pair), "
        "which is not a character",
    )


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
    return deps.security_service().caller_for_token(token_from_headers(request.headers, path))


def _serve(blueprint: Any, spec: RouteSpec, path_values: dict[str, str]) -> Any:
    """One request, its log lines tied by the Lambda request id and a correlation id (the
    caller's `X-Correlation-Id`, else API Gateway's request id, which its access log carries as
    `correlationId`, else a new one), which the answer names and queued work inherits."""
    from chalicelib import metrics
    from chalicelib.logs import invocation
    from chalicelib.store import cache

    request = blueprint.current_request
    headers = request.headers or {}
    gateway_request_id = (getattr(request, "context", None) or {}).get("requestId")
    fields = {"apiRequestId": gateway_request_id} if gateway_request_id else {}
    with (
        invocation(
            _lambda_context(blueprint),
            correlation=headers.get("x-correlation-id") or gateway_request_id,
            **fields,
        ) as bound,
        # The request context: the caller, the group of the path and the people it names are
        # read at most once in the call (and not at all while the warm container remembers them).
        cache.one_call(),
    ):
        response = _serve_request(blueprint, spec, path_values)
        if response.status_code >= 500:
            metrics.emit("ServerErrors", 1)
    response.headers["X-Correlation-Id"] = bound["correlationId"]
    if spec.need is not None or spec.secret:
        # What a signed-in caller sees (mailbox passwords, chat secrets, feed keys, a token) is
        # never kept by a browser's or a proxy's cache (CONTRACT §8), errors included.
        response.headers["Cache-Control"] = "no-store"
    return response


def _lambda_context(blueprint: Any) -> Any:
    try:
        return blueprint.lambda_context
    except Exception:  # noqa: BLE001 - no context outside Lambda (tests calling views directly)
        return None


def _serve_request(blueprint: Any, spec: RouteSpec, path_values: dict[str, str]) -> Any:
    started = time.perf_counter()
    request = blueprint.current_request
    status = 500
    caller: Caller | None = None
    call: Call | None = None
    try:
        if spec.need is not None:
            caller = authenticate(request, spec.path)
        call = Call(request=request, caller=caller, spec=spec)
        if spec.path_model is not None:
            call.path = validate(spec.path_model, path_values, "path")
        if spec.group_param is not None:
            call.group = _group_of(call, spec.group_param)
        if caller is not None and spec.need not in (None, Need.SIGNED_IN):
            # A body that names no existing group leaves the check to the service, after the
            # body's validation has said what is wrong with it.
            if call.group is not None or spec.need is Need.ROOT_ADMIN:
                caller.require(spec.need, call.group)
            elif spec.group_param is not None and spec.group_param.startswith("query."):
                # A query that narrows to a group is optional: without one (or with one that does
                # not exist) the route is the root administrator's.
                caller.require(Need.ROOT_ADMIN)
        if spec.query_model is not None:
            call.query = validate(spec.query_model, dict(request.query_params or {}), "query")
        if spec.body_model is not None and spec.need is not Need.SIGNED_IN:
            # The privilege is checked (or the route is public): the body is validated now.
            # SIGNED_IN handlers check a privilege of their own first and read the body after.
            call.body  # noqa: B018 - validates on first use
        result = spec.handler(call)
        if _is_response(result):
            status = result.status_code
            return result
        status = 200
        return _response(200, success_payload(result))
    except AgoraError as error:
        if isinstance(error, ValidationFailed) and error.submitted is None and call is not None:
            error.submitted = call.submitted if call.submitted is not None else call.parsed_body
        status = error.status
        return _response(status, error_payload(error), error.headers)
    except Exception as error:
        mapped = _aws_failure(error)
        if mapped is not None:
            status = mapped.status
            log.warning(
                "AWS failure",
                extra={"route": spec.path, "method": spec.method, "error": repr(error)},
            )
            return _response(status, error_payload(mapped), mapped.headers)
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


def _group_of(call: Call, param: str) -> Any:
    """The group a route's privilege applies to: from the path, a body field or the query."""

    if not param.startswith(("body.", "query.")):
        return deps.group_service().get(getattr(call.path, param), key=param)
    source, name = param.split(".", 1)
    if source == "query":
        value = (call.request.query_params or {}).get(name)
    else:
        raw = call.raw_body
        value = raw.get(name) if isinstance(raw, dict) else None
    if not isinstance(value, str):
        return None
    from chalicelib.errors import NotFound
    from chalicelib.schemas.common import parse_guid

    group_id = parse_guid(value)
    if group_id is None:
        return None
    try:
        return deps.group_service().get(group_id, key=name)
    except NotFound:
        return None


def _aws_failure(error: Exception) -> AgoraError | None:
    """AWS errors no store or service handled, as the caller should see them (CONTRACT §6)."""
    from chalicelib.aws import error_code, is_unavailable

    if is_unavailable(error):
        return ServiceUnavailable()
    if error_code(error) in ("TransactionCanceledException", "ConditionalCheckFailedException"):
        # A write lost a race with another one (after the store's own bounded retries).
        return Conflict("state", "", "The data changed at the same time; read it again and retry.")
    return None


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
    """Chalice answers some requests before any view runs (405, 415, its own 500): envelope them.
    Every answer, these included, carries the CORS headers its origin is allowed (api/cors.py)."""
    from chalicelib.api.cors import response_headers

    response = get_response(event)
    body = response.body
    if response.status_code >= 400 and isinstance(body, dict) and "Code" in body:
        status = 400 if response.status_code == 415 else response.status_code
        message = _CHALICE_ERRORS.get(response.status_code, str(body.get("Message", "")))
        headers = {k: v for k, v in response.headers.items() if k.lower() == "allow"}
        response = _response(status, failure_payload(message), headers)
    if event.method != "OPTIONS":  # a preflight answers its own CORS headers
        response.headers.update(response_headers(event.headers))
    return response


def not_found_payload() -> dict[str, Any]:
    return failure_payload("There is no such path in this API.")


__all__ = ["Call", "ROUTES", "RouteSpec", "route", "validate", "envelope_middleware", "ApiModel"]
