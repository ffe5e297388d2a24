"""Structured logs: one JSON object per line, for CloudWatch Logs Insights.

Every line carries, besides its own fields, what ties it to the rest (`invocation`): in Lambda the
function, its request id, whether this was a cold start and the X-Ray trace; everywhere the
correlation id, which the mail poll and the API pass on through SQS to the notifications they
cause, so one query (`filter correlationId = "…"`) follows a mail from its poll to the mails it
made us send. The level is AGORA_LOG_LEVEL (default INFO).

Never pass a secret, a password or a request body to a log call; the request log carries the
request id, route, method, status and duration only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from chalicelib import settings

_RESERVED = set(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}
_context: ContextVar[dict[str, Any] | None] = ContextVar("agora_log_context", default=None)
_cold_start = True


def _lambda_fields() -> dict[str, Any]:
    """What the Lambda runtime tells about this function (nothing outside Lambda)."""
    name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    if not name:
        return {}
    fields: dict[str, Any] = {
        "function": name,
        "functionVersion": os.environ.get("AWS_LAMBDA_FUNCTION_VERSION"),
        "memoryMB": os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"),
    }
    trace = os.environ.get("_X_AMZN_TRACE_ID")
    if trace:
        fields["xrayTraceId"] = trace.split(";", 1)[0].removeprefix("Root=")
    return fields


def current_correlation_id() -> str | None:
    """The correlation id of the work in progress, if any was bound."""
    found = (_context.get() or {}).get("correlationId")
    return str(found) if found else None


def correlation_id() -> str:
    """The correlation id to pass on (in an SQS message); a new one when none was bound."""
    return current_correlation_id() or str(uuid.uuid4())


@contextlib.contextmanager
def invocation(
    lambda_context: Any = None, correlation: str | None = None, **fields: Any
) -> Iterator[dict[str, Any]]:
    """Bind the fields every log line of this piece of work carries: the Lambda request id and
    cold start (given Lambda's context), the correlation id (given, inherited, or new)."""
    global _cold_start
    outer = _context.get() or {}
    bound: dict[str, Any] = {**outer, **fields}
    request_id = getattr(lambda_context, "aws_request_id", None)
    if request_id:
        bound["requestId"] = request_id
        bound["coldStart"] = _cold_start
        _cold_start = False
    bound["correlationId"] = (
        _safe_id(correlation) or outer.get("correlationId") or str(uuid.uuid4())
    )
    token = _context.set(bound)
    try:
        yield bound
    finally:
        _context.reset(token)


def _safe_id(value: Any) -> str | None:
    """A correlation id from outside (a header, a queue message): short and printable only."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > 128 or not all(c.isalnum() or c in "-_.:" for c in value):
        return None
    return value


def lambda_handler(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """app.py's scheduled and SQS functions: their lines carry the invocation's context."""
    import functools

    @functools.wraps(function)
    def handler(event: Any) -> Any:
        with invocation(getattr(event, "context", None)):
            return function(event)

    return handler


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_lambda_fields(),
            **(_context.get() or {}),
        }
        for key, value in vars(record).items():
            if key not in _RESERVED and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is now (Lambda's, or a test's capture), not the one at setup."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


class _SettingsLevel(logging.Filter):
    """AGORA_LOG_LEVEL, read at the first line logged (loggers are made at import, before any
    settings may be read) and again after `reload_level()`."""

    level: int | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self.level is None:
            try:
                self.level = logging.getLevelName(settings.get_settings().log_level)
            except Exception:  # noqa: BLE001 - bad settings are reported where they are used
                self.level = logging.INFO
        return record.levelno >= (self.level or logging.INFO)


_level = _SettingsLevel()


@settings.on_reload
def reload_level() -> None:
    _level.level = None


# Not "agora": Chalice owns the logger named after the app and sets it to ERROR.
_configured = False


def get_logger(name: str) -> logging.Logger:
    global _configured
    if not _configured:
        root = logging.getLogger("chalicelib")
        if not root.handlers:
            handler = _StderrHandler()
            handler.setFormatter(JsonFormatter())
            handler.addFilter(_level)
            root.addHandler(handler)
        root.setLevel(logging.DEBUG)
        root.propagate = False
        _configured = True
    return logging.getLogger(f"chalicelib.{name}")
