"""Domain errors: the only exceptions a service raises on purpose.

`chalicelib.envelope` turns each into the status and envelope of CONTRACT §6; nothing else builds an
error body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FieldError:
    key: str
    value: str
    message: str


def as_text(value: Any) -> str:
    """An error's `value` is what was sent, as a string (CONTRACT §6)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    import json

    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


@dataclass
class AgoraError(Exception):
    message: str = "The request failed."
    errors: list[FieldError] = field(default_factory=list)
    status: int = 500
    # The record the caller sent (validation failures answer it in `object`).
    submitted: Any = None

    def __str__(self) -> str:
        return self.message


def _field_error(key: str, value: Any, message: str) -> list[FieldError]:
    return [FieldError(key=key, value=as_text(value), message=message)]


class ValidationFailed(AgoraError):
    def __init__(self, errors: list[FieldError], submitted: Any = None, message: str = "") -> None:
        super().__init__(message or "The request is not valid.", errors, 400, submitted)

    @classmethod
    def one(cls, key: str, value: Any, message: str, submitted: Any = None) -> ValidationFailed:
        return cls(_field_error(key, value, message), submitted)


class BadRequest(AgoraError):
    def __init__(self, message: str, key: str = "body") -> None:
        super().__init__(message, _field_error(key, "", message), 400)


class Unauthorized(AgoraError):
    def __init__(
        self,
        message: str = "Sign in first: the request has no valid token.",
        errors: list[FieldError] | None = None,
    ) -> None:
        super().__init__(message, errors or [], 401)


class Forbidden(AgoraError):
    def __init__(self, message: str = "You are not allowed to do this.") -> None:
        super().__init__(message, [], 403)


class NotFound(AgoraError):
    def __init__(self, key: str, value: Any, what: str = "") -> None:
        message = f"{what or key} {as_text(value)!r} does not exist."
        super().__init__(message, _field_error(key, value, message), 404)


class Conflict(AgoraError):
    def __init__(self, key: str, value: Any, message: str) -> None:
        super().__init__(message, _field_error(key, value, message), 409)


class PayloadTooLarge(AgoraError):
    def __init__(self, limit: int) -> None:
        message = f"The request body is larger than {limit} bytes."
        super().__init__(message, _field_error("body", "", message), 413)


class TooManyRequests(AgoraError):
    def __init__(self, message: str = "Too many attempts; try again later.") -> None:
        super().__init__(message, [], 429)
