"""make run's access log and its answer during a stop (the local server's handler uses both).

- A feed key (`key=`) or an unsubscribe token (`token=`) in a URL stands for its user's sign-in or
  choice: the log shows that one was sent, never which.
- One line per request. On a terminal it is the access line, made readable (the request, its
  status, how long it took), and Agora's own JSON `request` record of it is left out; elsewhere
  (a file, a pipe: what log tools read) the JSON record is the line and the access line is not
  written.
- A request that arrives once a stop has begun is answered 503 with `Retry-After`, in the
  envelope, instead of being cut: nothing is acknowledged that the last snapshot may miss, and the
  client is told to come back.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote_plus

from chalicelib.envelope import failure_payload

# A query parameter: its separator, its name and its value, as far as a log line shows them.
_QUERY_PARAMETER = re.compile(r"([?&;])([^=&;\s\"'?]*)=([^&;\s\"']*)")
_SECRET_NAMES = ("key", "token")
# The logger of Agora's own per-request record (chalicelib/api/routing).
REQUEST_LOGGER = "chalicelib.http"
STOPPING_MESSAGE = "Agora is stopping (make run); try again once it has started again."
# Seconds a client waits before it tries again: a stop saves and ends in a few seconds.
STOPPING_RETRY_AFTER = 10


def redact_secrets(text: str) -> str:
    """An access-log text with every `key=` and `token=` query value replaced, its name read as
    the server reads it (percent-decoded, any case: `%6Bey=` is `key=`)."""

    def shown(parameter: re.Match[str]) -> str:
        separator, name, _ = parameter.groups()
        if unquote_plus(name).strip().lower() in _SECRET_NAMES:
            return f"{separator}{name}=[redacted]"
        return parameter.group(0)

    return _QUERY_PARAMETER.sub(shown, text)


# Set on a handler thread while it serves a request whose access line is the request's one line.
_serving = threading.local()


class _AccessLineInstead(logging.Filter):
    """Leaves out Agora's `request` record of a request whose access line is written."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (getattr(_serving, "access_line", False) and record.getMessage() == "request")


def _leave_request_records_to_access_lines() -> None:
    logger = logging.getLogger(REQUEST_LOGGER)
    if not any(isinstance(f, _AccessLineInstead) for f in logger.filters):
        logger.addFilter(_AccessLineInstead())


class RedactedAccessLog:
    """http.server's access and error log lines, with feed keys and tokens left out; one line a
    request (`readable`: the access line, else Agora's own record)."""

    readable = True
    _started: float | None = None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  http.server's name
        shown = (redact_secrets(arg) if isinstance(arg, str) else arg for arg in args)
        super().log_message(format, *shown)  # type: ignore[misc]

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        if not self.readable:
            return
        took = ""
        if self._started is not None:
            took = f" {(time.perf_counter() - self._started) * 1000:.1f} ms"
        self.log_message(
            '"%s" %s%s', getattr(self, "requestline", ""), getattr(code, "value", code), took
        )


class OneLineAccessLog(RedactedAccessLog, BaseHTTPRequestHandler):
    """The local server's handler's side: times each request and marks its thread while it is
    served, so that Agora's record of it gives way to the readable line."""

    def serve_one(self, handle: Any) -> None:
        self._started = time.perf_counter()
        _serving.access_line = self.readable
        if self.readable:
            _leave_request_records_to_access_lines()
        try:
            handle()
        finally:
            _serving.access_line = False

    def answer_stopping(self) -> None:
        """Read the request line and headers and answer 503 with Retry-After (the body, unread,
        goes with the connection, which closes)."""
        self._started = time.perf_counter()
        self.close_connection = True
        raw = self.rfile.readline(65537)
        if not raw:
            return  # a kept-alive connection the client had left open
        self.raw_requestline = raw
        if not self.parse_request():
            return  # http.server answered it (400, 414, …)
        body = json.dumps(failure_payload(STOPPING_MESSAGE)).encode()
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Retry-After", str(STOPPING_RETRY_AFTER))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True
