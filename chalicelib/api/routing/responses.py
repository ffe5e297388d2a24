"""Response mapping: a handler's result or error as the envelope (CONTRACT §6), AWS failures no
store handled as the status a caller should see, and Chalice's own answers reshaped alike."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from chalice import Response

from chalicelib.api.cors import response_headers
from chalicelib.aws import error_code, is_unavailable
from chalicelib.envelope import (
    JSON_HEADERS,
    error_payload,
    failure_payload,
    internal_error_payload,
    success_payload,
)
from chalicelib.errors import (
    AgoraError,
    Conflict,
    ServiceUnavailable,
    UnsupportedMediaType,
    has_surrogate,
)
from chalicelib.logs import get_logger

if TYPE_CHECKING:
    from chalice.app import Response

log = get_logger("http")

# DynamoDB's answers to a write that lost a race with another one (after the store's retries).
RACE_CODES = ("TransactionCanceledException", "ConditionalCheckFailedException")


def json_response(
    status: int, payload: dict[str, Any], headers: Mapping[str, str] | None = None
) -> Response:
    text = json.dumps(payload, ensure_ascii=False)
    if has_surrogate(text):
        # A lone surrogate that reached an answer cannot be UTF-8: escape it rather than
        # fail to answer at all (values echoed in errors are already made safe).
        text = json.dumps(payload, ensure_ascii=True)
    return Response(body=text, status_code=status, headers={**JSON_HEADERS, **(headers or {})})


def success_response(result: Any) -> Response:
    """A handler's result: a Response of its own as it is, anything else as `object`."""
    if is_response(result):
        response: Response = result
        return response
    return json_response(200, success_payload(result))


def error_response(error: AgoraError) -> Response:
    return json_response(error.status, error_payload(error), error.headers)


def aws_failure(error: Exception) -> AgoraError | None:
    """AWS errors no store or service handled, as the caller should see them (CONTRACT §6)."""

    if is_unavailable(error):
        return ServiceUnavailable()
    if error_code(error) in RACE_CODES:
        return Conflict("state", "", "The data changed at the same time; read it again and retry.")
    return None


def unexpected_response(error: Exception, route: Mapping[str, str]) -> Response:
    """An exception no handler mapped: an AWS failure's status, else 500 (logged either way)."""
    mapped = aws_failure(error)
    if mapped is not None:
        log.warning("AWS failure", extra={**route, "error": repr(error)})
        return error_response(mapped)
    log.exception("unexpected error", extra=dict(route))
    return json_response(500, internal_error_payload())


def is_response(result: object) -> bool:
    return isinstance(result, Response)


# --- Chalice's own answers, reshaped into the envelope --------------------------------------------

CHALICE_ERRORS = {
    400: "The request is not valid.",
    403: "Not found.",
    404: "Not found.",
    405: "This method is not allowed on this path.",
    413: "The request body is too large.",
    415: UnsupportedMediaType("").message,
    500: "Something went wrong on our side; it has been logged.",
}


def enveloped(response: Response) -> Response:
    """Chalice's own error answer (`{"Code", "Message"}`) as the envelope; others as they are."""
    body = response.body
    if response.status_code < 400 or not isinstance(body, dict) or "Code" not in body:
        return response
    status = response.status_code
    message = CHALICE_ERRORS.get(status, str(body.get("Message", "")))
    headers = {k: str(v) for k, v in response.headers.items() if k.lower() == "allow"}
    payload = failure_payload(message)
    if status == 415:
        payload = error_payload(UnsupportedMediaType(""))
    return json_response(status, payload, headers)


def envelope_middleware(event: Any, get_response: Callable[[Any], Response]) -> Response:
    """Chalice answers some requests before any view runs (405, 415, its own 500): envelope them.
    Every answer, these included, carries the CORS headers its origin is allowed (api/cors.py)."""

    response = enveloped(get_response(event))
    if event.method != "OPTIONS":  # a preflight answers its own CORS headers
        response.headers.update(response_headers(event.headers))
    return response


def not_found_payload() -> dict[str, Any]:
    return failure_payload("There is no such path in this API.")
