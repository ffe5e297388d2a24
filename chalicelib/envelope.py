"""The response envelope (spec "Response envelope", CONTRACT §6), in one place.

Every answer, success or error, is built here: `{success, message, timestamp, errors, object}`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from chalicelib.clock import iso, utc_now
from chalicelib.errors import (
    MAX_ERROR_VALUE,
    AgoraError,
    FieldError,
    ValidationFailed,
    as_text,
    echoed,
    shortened,
)
from chalicelib.schemas.messages import people_message

# Headers as Chalice's Response takes them (a value may be a list: one header sent several times).
Headers = dict[str, str | list[str]]
JSON_HEADERS: Headers = {"Content-Type": "application/json"}
GENERIC_ERROR = "Something went wrong on our side; it has been logged."


def jsonable(obj: Any) -> Any:
    """A Pydantic model (or list of them) as the JSON the spec shows: camelCase, dates with `Z`."""
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", by_alias=True)
    if isinstance(obj, list | tuple):
        return [jsonable(item) for item in obj]
    if isinstance(obj, dict):
        return {key: jsonable(value) for key, value in obj.items()}
    if isinstance(obj, datetime):
        return iso(obj)
    return obj


def envelope(
    *, success: bool, message: str, obj: Any = None, errors: list[FieldError] | None = None
) -> dict[str, Any]:
    return {
        "success": success,
        "message": message,
        "timestamp": iso(utc_now()),
        "errors": [
            {"key": e.key, "value": shortened(e.value, MAX_ERROR_VALUE), "message": e.message}
            for e in (errors or [])
        ],
        "object": jsonable(obj),
    }


def success_payload(obj: Any, message: str = "OK") -> dict[str, Any]:
    return envelope(success=True, message=message, obj=obj)


def error_payload(error: AgoraError) -> dict[str, Any]:
    return envelope(
        success=False, message=error.message, obj=echoed(error.submitted), errors=error.errors
    )


def internal_error_payload() -> dict[str, Any]:
    return envelope(success=False, message=GENERIC_ERROR)


def failure_payload(message: str) -> dict[str, Any]:
    """For errors raised outside our views (unknown route, method not allowed, gateway limits)."""
    return envelope(success=False, message=message)


def _key_of(loc: tuple[Any, ...], ctx: dict[str, Any] | None, prefix: str) -> str:
    # A cross-field rule (model validator) names its field through the error's context.
    if ctx and "field" in ctx:
        return str(ctx["field"])
    parts = [str(part) for part in loc]
    if parts and parts[0] in ("body", "query", "path"):
        parts = parts[1:]
    key = ".".join(parts)
    return key or prefix


def _value_at(submitted: Any, loc: tuple[Any, ...]) -> Any:
    value = submitted
    for part in loc:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            return None
    return value


def _readable(error: ErrorDetails) -> str:
    return people_message(error)


def validation_failed(
    exc: ValidationError, submitted: Any, *, prefix: str = "body"
) -> ValidationFailed:
    """Pydantic's errors as envelope entries: the spec's field name as `key`, the sent value."""
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for error in exc.errors(include_url=False):
        loc = tuple(error.get("loc", ()))
        ctx: dict[str, Any] | None = error.get("ctx") or {}
        if ctx and ctx.get("relative") and "field" in ctx:
            # A rule of a nested model names its field within that model: the path goes on.
            loc, ctx = (*loc, ctx["field"]), None
        key = _key_of(loc, ctx, prefix)
        message = _readable(error)
        if (key, message) in seen:
            continue
        seen.add((key, message))
        sent = _value_at(submitted, loc) if loc else error.get("input")
        if isinstance(sent, dict | list) and not loc:
            sent = None
        errors.append(FieldError(key=key, value=as_text(sent), message=message))
    return ValidationFailed(errors, submitted)
