"""One request through its route, in this order: the caller is authenticated, the path validated,
the route's group found and its privilege checked (gate.py), the query validated, the body
size-checked, parsed strictly and validated, the handler run, and its result or error made the
envelope (responses.py). Each request is logged as one JSON line."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from chalicelib import metrics
from chalicelib.api.routing.call import Call, RouteSpec
from chalicelib.api.routing.gate import admit
from chalicelib.api.routing.inputs import query_values, validate
from chalicelib.api.routing.responses import (
    error_response,
    log,
    success_response,
    unexpected_response,
)
from chalicelib.auth import Need
from chalicelib.domain.audit import Actor, acting_as
from chalicelib.errors import AgoraError, ValidationFailed
from chalicelib.logs import bound_request_id, invocation
from chalicelib.store.per_call import one_call

if TYPE_CHECKING:
    from chalice.app import Response


def serve(blueprint: Any, spec: RouteSpec, path_values: dict[str, str]) -> Response:
    """One request, its log lines tied by the Lambda request id and a correlation id (the
    caller's `X-Correlation-Id`, else API Gateway's request id, which its access log carries as
    `correlationId`, else a new one), which the answer names and queued work inherits."""

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
        one_call(),
    ):
        response = _logged(blueprint, spec, path_values)
        if response.status_code >= 500:
            metrics.emit("ServerErrors", 1)
    response.headers["X-Correlation-Id"] = bound["correlationId"]
    if spec.need is not None or spec.secret:
        # What a signed-in caller sees (mailbox passwords, chat secrets, feed keys, a token) is
        # never kept by a browser's or a proxy's cache (CONTRACT §8), errors included.
        response.headers["Cache-Control"] = "no-store"
    return response


def _logged(blueprint: Any, spec: RouteSpec, path_values: dict[str, str]) -> Response:
    started = time.perf_counter()
    call: Call[Any, Any, Any] = Call(request=blueprint.current_request, caller=None, spec=spec)
    status = 500  # until an answer is made
    try:
        response = answer(call, path_values)
        status = response.status_code
        return response
    finally:
        log.info(
            "request",
            extra={
                "requestId": _request_id(blueprint),
                "route": spec.path,
                "method": spec.method,
                "status": status,
                "durationMs": round((time.perf_counter() - started) * 1000, 2),
                "userId": call.caller.user_id if call.caller is not None else None,
            },
        )


def answer(call: Call[Any, Any, Any], path_values: dict[str, str]) -> Response:
    """The call's answer: the handler's result, or the error that stopped it, as the envelope."""
    spec = call.spec
    assert spec is not None
    try:
        admit(call, path_values)
        read_inputs(call, spec)
        with acting_as(_actor(call)):
            return success_response(spec.handler(call))
    except AgoraError as error:
        if isinstance(error, ValidationFailed) and error.submitted is None:
            error.submitted = call.submitted if call.submitted is not None else call.parsed_body
        return error_response(error)
    except Exception as error:
        return unexpected_response(error, {"route": spec.path, "method": spec.method})


def _actor(call: Call[Any, Any, Any]) -> Actor:
    """Who the changes of this call are recorded as (CONTRACT §12): the signed-in user, through
    the API, with the request's id (Lambda's, which the request's log line carries too)."""
    context = (getattr(call.request, "context", None) or {}).get("requestId")
    request_id = _current_request_id() or context
    user_id = call.caller.user_id if call.caller is not None else None
    return Actor(
        user_id=user_id, system=None if user_id else "api", via="api", request_id=request_id
    )


def read_inputs(call: Call[Any, Any, Any], spec: RouteSpec) -> None:
    """The query and, once the privilege is checked (or the route is public), the body."""
    if spec.query_model is not None:
        # A page for people (text/html) reads the last of a repeated parameter: its refusals are
        # pages, which the envelope of a 400 is not.
        model = spec.query_model if spec.content_type == "application/json" else None
        query = query_values(call.request.query_params, model)
        call.query = validate(spec.query_model, query, "query")
    if spec.body_model is not None and spec.need is not Need.SIGNED_IN:
        # SIGNED_IN handlers check a privilege of their own first and read the body after.
        call.body  # noqa: B018 - validates on first use


def _lambda_context(blueprint: Any) -> Any:
    try:
        return blueprint.lambda_context
    except Exception:  # noqa: BLE001 - no context outside Lambda (tests calling views directly)
        return None


def _current_request_id() -> str | None:
    return bound_request_id()


def _request_id(blueprint: Any) -> str | None:
    context = _lambda_context(blueprint)
    request_id = getattr(context, "aws_request_id", None)
    return None if request_id is None else str(request_id)
