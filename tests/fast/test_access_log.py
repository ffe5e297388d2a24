"""`make run`'s access log (agora_local/access_log.py): a feed key or an unsubscribe token in a URL
is never written."""

from __future__ import annotations

import io
from http.server import BaseHTTPRequestHandler

import pytest

from agora_local.access_log import RedactedAccessLog, redact_secrets

KEY = "Zk3q_9bW0s-ExampleFeedKeyThatIsLongEnough1234"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.unsubscribe-token-example.c2lnbmF0dXJl"


class Handler(RedactedAccessLog, BaseHTTPRequestHandler):
    """The local server's handler's log, without a socket: what it writes goes to `written`."""

    def __init__(self, requestline: str) -> None:  # no socket, no request to handle
        self.requestline = requestline
        self.request_version = "HTTP/1.1"
        self.command = "GET"
        self.client_address = ("127.0.0.1", 50000)
        self.written = io.StringIO()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        import contextlib

        with contextlib.redirect_stderr(self.written):
            super().log_message(format, *args)


def logged(path: str) -> str:
    """What the handler writes for a GET of `path` answered 200, and for the same path refused."""
    handler = Handler(f"GET {path} HTTP/1.1")
    handler.log_request(200, 512)
    handler.log_error("code %d, message %s", 400, f"Bad request ({path!r})")
    return handler.written.getvalue()


@pytest.mark.parametrize(
    ("path", "secret"),
    [
        pytest.param(f"/api/v1/en_US/feed/g1/events.ics?key={KEY}", KEY, id="feed key"),
        pytest.param(f"/api/v1/en_US/feed/g1?KEY={KEY}&x=1", KEY, id="feed KEY first"),
        pytest.param(f"/api/v1/en_US/feed/g1?x=1&key={KEY}", KEY, id="feed key last"),
        pytest.param(f"/api/v1/en_US/unsubscribe?token={TOKEN}", TOKEN, id="token"),
        pytest.param(
            f"/api/v1/en_US/unsubscribe?list=digest&TOKEN={TOKEN}", TOKEN, id="TOKEN last"
        ),
        pytest.param(
            f"/api/v1/en_US/unsubscribe?token={TOKEN}&list=digest", TOKEN, id="token first"
        ),
        # The server decodes a query's names: `%6Bey=` is `key=`, and its value is a feed key.
        pytest.param(f"/api/v1/en_US/feed/g1?%6Bey={KEY}", KEY, id="%6Bey"),
        pytest.param(f"/api/v1/en_US/feed/g1?x=1&k%65Y={KEY}", KEY, id="k%65Y"),
        pytest.param(f"/api/v1/en_US/feed/g1?%4B%45%59={KEY}&x=1", KEY, id="%4B%45%59"),
        pytest.param(f"/api/v1/en_US/unsubscribe?list=digest&to%6Ben={KEY}", KEY, id="to%6Ben"),
    ],
)
def test_the_access_line_of_a_feed_key_or_an_unsubscribe_token_shows_none_of_it(path, secret):
    written = logged(path)

    # Not the secret, nor any part of a token (a JWT's three parts, each readable on its own).
    assert not any(part in written for part in secret.split("."))
    assert written.count("=[redacted]") == 2 and '" 200' in written


def test_other_query_values_are_kept():
    assert redact_secrets("GET /x?offset=5&pageSize=10&monkey=1&tokens=2 HTTP/1.1") == (
        "GET /x?offset=5&pageSize=10&monkey=1&tokens=2 HTTP/1.1"
    )


class JsonLogHandler(Handler):
    """The handler away from a terminal: Agora's JSON `request` record is the request's line."""

    readable = False


def test_away_from_a_terminal_the_access_line_gives_way_to_agoras_record():
    handler = JsonLogHandler(f"GET /api/v1/en_US/unsubscribe?token={TOKEN} HTTP/1.1")

    handler.log_request(200, 512)
    assert handler.written.getvalue() == ""
    handler.log_error("code %d, message %s", 400, "Bad request")  # errors are still written
    assert "Bad request" in handler.written.getvalue()
