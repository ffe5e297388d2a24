"""Domain errors: the only exceptions a service raises on purpose.

`chalicelib.envelope` turns each into the status and envelope of CONTRACT §6; nothing else builds an
error body.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FieldError:
    key: str
    value: str
    message: str


def safe_text(text: str) -> str:
    """`text` with every lone surrogate (U+D800–U+DFFF) replaced by U+FFFD.

    JSON escapes can carry lone surrogates into a Python string; UTF-8 cannot encode them, so a
    string echoed back unchanged would make the answer itself fail to encode.
    """
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


# An error's `value` holds at most this many characters, a string in the `object` an error
# repeats at most this many (CONTRACT §6): a 500 KB text refused is not sent back whole, twice.
MAX_ERROR_VALUE = 200
MAX_ECHOED_TEXT = 1000
CUT_MARK = "…"


def shortened(text: str, limit: int) -> str:
    """`text`, or its start ending with `…` when it is longer than `limit` characters."""
    if len(text) <= limit:
        return text
    return text[: limit - len(CUT_MARK)] + CUT_MARK


def as_text(value: Any) -> str:
    """An error's `value` is what was sent, as a string (CONTRACT §6), safe to encode, at most
    MAX_ERROR_VALUE characters."""
    return shortened(_full_text(value), MAX_ERROR_VALUE)


def _full_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, bool):
        return "true" if value else "false"

    try:
        return safe_text(json.dumps(value, default=str, ensure_ascii=False))
    except (TypeError, ValueError):
        return safe_text(str(value))


def echoed(submitted: Any) -> Any:
    """The submitted record as an error repeats it: every string (keys too) of more than
    MAX_ECHOED_TEXT characters cut."""
    if isinstance(submitted, str):
        return shortened(submitted, MAX_ECHOED_TEXT)
    if isinstance(submitted, dict):
        return {echoed(k) if isinstance(k, str) else k: echoed(v) for k, v in submitted.items()}
    if isinstance(submitted, list | tuple):
        return [echoed(item) for item in submitted]
    return submitted


@dataclass
class AgoraError(Exception):
    message: str = "The request failed."
    errors: list[FieldError] = field(default_factory=list)
    status: int = 500
    # The record the caller sent (validation failures answer it in `object`).
    submitted: Any = None

    def __str__(self) -> str:
        return self.message

    @property
    def headers(self) -> dict[str, str]:
        """HTTP headers the answer carries besides the envelope's own."""
        return {}


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


class UnsupportedMediaType(AgoraError):
    """A body that does not say it is JSON (CONTRACT §6: 415, key `Content-Type`)."""

    def __init__(self, content_type: str) -> None:
        message = "The request body must be JSON, sent with Content-Type: application/json."
        super().__init__(message, _field_error("Content-Type", content_type, message), 415)


class TooManyRequests(AgoraError):
    def __init__(
        self, message: str = "Too many attempts; try again later.", retry_after: int = 60
    ) -> None:
        super().__init__(message, [], 429)
        self.retry_after = retry_after  # seconds, as the message says them

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class ServiceUnavailable(AgoraError):
    """AWS throttled, failed or timed out beyond the SDK's retries (CONTRACT §6): worth a retry."""

    def __init__(self, retry_after: int = 2) -> None:
        message = "The service is busy or briefly unavailable; try again shortly."
        super().__init__(message, [], 503)
        self.retry_after = retry_after

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}
