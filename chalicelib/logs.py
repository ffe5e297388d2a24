"""Structured logs: one JSON object per line, for CloudWatch Logs Insights; plain text for people.

Lambda, `make run` and the tests write JSON lines. A one-shot CLI command (`for_people()`) writes
its results on stdout, and on stderr only the log lines a person must see: plain text
(`warning: message (key=value …)`), at WARNING and above; `AGORA_LOG_FORMAT=json` gives it the JSON
lines at AGORA_LOG_LEVEL instead, `AGORA_LOG_FORMAT=text` gives `make run` the plain lines. Either
way a field is written as data (`{"lines": […]}`), never as a Python repr (`PollReport(…)`).

Every line carries, besides its own fields, what ties it to the rest (`invocation`): in Lambda the
function, its request id, whether this was a cold start and the X-Ray trace; everywhere the
correlation id, which the mail poll and the API pass on through SQS to the notifications they
cause, so one query (`filter correlationId = "…"`) follows a mail from its poll to the mails it
made us send. The level is AGORA_LOG_LEVEL (default INFO).

Never pass a secret, a password or a request body to a log call; the request log carries the
request id, route, method, status and duration only.

The JSON itself is Powertools' (`LambdaPowertoolsFormatter`: timestamp, level, location, the
`extra` fields, the exception with its parsed stack trace, the X-Ray trace id), made at the first
line logged so that `import app` does not pay for importing it. What stays ours, and why:

- `invocation` binds the fields in a ContextVar that nests: a poll's correlation id inside the
  function's request id, restored when the inner work ends. Powertools' `set_correlation_id` and
  `append_keys` are global to a Logger (the API under `make run` serves threads), and its
  `append_context_keys` drops a key on exit even when an outer block had set it.
- `coldStart`, `requestId` and `function` under the names the README's queries use; Powertools'
  `inject_lambda_context` decorates a handler taking `(event, context)`, not Chalice's event.
- The level is AGORA_LOG_LEVEL, read through settings (the only module that reads the
  environment), not POWERTOOLS_LOG_LEVEL.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from chalicelib import settings

_context: ContextVar[dict[str, Any] | None] = ContextVar("agora_log_context", default=None)
_cold_start = True


def _lambda_fields() -> dict[str, Any]:
    """What the Lambda runtime tells about this function (nothing outside Lambda)."""
    name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    if not name:
        return {}
    return {
        "function": name,
        "functionVersion": os.environ.get("AWS_LAMBDA_FUNCTION_VERSION"),
        "memoryMB": os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"),
    }


def current_correlation_id() -> str | None:
    """The correlation id of the work in progress, if any was bound."""
    found = (_context.get() or {}).get("correlationId")
    return str(found) if found else None


def bound_request_id() -> str | None:
    """The Lambda request id of the work in progress (an API request's), if one was bound."""
    found = (_context.get() or {}).get("requestId")
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

    @functools.wraps(function)
    def handler(event: Any) -> Any:
        with invocation(getattr(event, "context", None)):
            return function(event)

    return handler


def _powertools_formatter() -> logging.Formatter:
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
    from aws_lambda_powertools.logging.types import LogRecord

    class BoundFieldsFormatter(LambdaPowertoolsFormatter):
        """Powertools' JSON line, with the Lambda fields and what `invocation` bound."""

        def serialize(self, log: LogRecord) -> str:
            bound = {**_lambda_fields(), **(_context.get() or {})}
            # A field the call site passed in `extra` wins over a bound one of the same name.
            return super().serialize({**log, **{k: v for k, v in bound.items() if k not in log}})

    return BoundFieldsFormatter(
        json_default=as_data,
        utc=True,
        use_rfc3339=True,
        log_record_order=["timestamp", "level", "name", "message"],
        name="%(name)s",
        service=settings.SERVICE,
    )


class JsonFormatter(logging.Formatter):
    """One JSON object per line (Powertools' formatter, made when the first line is written)."""

    _formatter: logging.Formatter | None = None

    def format(self, record: logging.LogRecord) -> str:
        if self._formatter is None:
            self._formatter = _powertools_formatter()
        return self._formatter.format(record)


def as_data(value: Any) -> Any:
    """A log field as JSON data: a dataclass or Pydantic model as its fields, a set or tuple as
    a list, a date as ISO 8601; anything else as its text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", by_alias=True)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):
        return isoformat()
    return str(value)


# The attributes every LogRecord has: the rest are the `extra` fields of the call.
_RECORD_FIELDS = frozenset(
    {*vars(logging.LogRecord("", 0, "", 0, "", (), None)), "message", "asctime", "taskName"}
)


class TextFormatter(logging.Formatter):
    """One line for a person: `warning: what happened (mailbox="post#…" count=2)`, a failure's
    exception as its type and message (no stack trace; AGORA_LOG_FORMAT=json has it)."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"{record.levelname.lower()}: {record.getMessage()}"
        fields = {k: v for k, v in vars(record).items() if k not in _RECORD_FIELDS}
        if fields:
            shown = " ".join(
                f"{key}={json.dumps(value, ensure_ascii=False, default=as_data)}"
                for key, value in fields.items()
            )
            text += f" ({shown})"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text += f": {type(error).__name__}: {error}"
        return text


_for_people = False


@contextlib.contextmanager
def for_people() -> Iterator[None]:
    """While a one-shot command runs, its logs are plain text at WARNING and above on stderr,
    unless AGORA_LOG_FORMAT says `json` (or this runs in Lambda, whose logs stay JSON)."""
    global _for_people
    before, _for_people = _for_people, True
    try:
        yield
    finally:
        _for_people = before


def _format_setting() -> str | None:
    try:
        found: str | None = settings.get_settings().log_format
    except Exception:  # noqa: BLE001 - bad settings are reported where they are used
        return None
    return found


def _plain_text() -> bool:
    chosen = _format_setting()
    if chosen is not None:
        return chosen == "text"
    return _for_people and not os.environ.get("AWS_LAMBDA_FUNCTION_NAME")


class _Formatter(logging.Formatter):
    """JSON or plain text, as the settings in force and the process (`for_people`) say."""

    _json = JsonFormatter()
    _text = TextFormatter()

    def format(self, record: logging.LogRecord) -> str:
        return (self._text if _plain_text() else self._json).format(record)


class _SettingsLevel(logging.Filter):
    """AGORA_LOG_LEVEL of the settings in force, asked at each line (loggers are made at import,
    before any settings may be read; the settings are cached, so the question costs a look-up, and
    the level follows `reload_settings()` with no hook of its own)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            level: int = logging.getLevelName(settings.get_settings().log_level)
        except Exception:  # noqa: BLE001 - bad settings are reported where they are used
            level = logging.INFO
        if _for_people and _plain_text():
            # A person running a command reads its results on stdout: only what went wrong here.
            level = max(level, logging.WARNING)
        return record.levelno >= level


_level = _SettingsLevel()


class _StderrHandler(logging.StreamHandler):
    """Writes a line to whatever `sys.stderr` is now (Lambda's, or a test's capture), not the one
    at setup, when the level in force keeps it: one step per line, which asks the level, formats
    the line and writes it (logging's own `StreamHandler` reads its stream three times a line)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass

    def handle(self, record: logging.LogRecord) -> bool:
        if not _level.filter(record):
            return False
        self.acquire()
        try:
            self.emit(record)
        finally:
            self.release()
        return True

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr
            stream.write(self.format(record) + self.terminator)
            stream.flush()
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - logging's own rule: a line that fails is reported
            self.handleError(record)


# Not "agora": Chalice owns the logger named after the app and sets it to ERROR.
_configured = False


def get_logger(name: str) -> logging.Logger:
    global _configured
    if not _configured:
        root = logging.getLogger("chalicelib")
        if not root.handlers:
            handler = _StderrHandler()
            handler.setFormatter(_Formatter())
            root.addHandler(handler)
        root.setLevel(logging.DEBUG)
        root.propagate = False
        _configured = True
    return logging.getLogger(f"chalicelib.{name}")
