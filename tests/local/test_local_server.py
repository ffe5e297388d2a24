"""`make run`'s API server (agora_local/run.py local_server), in this process over real HTTP: one
readable log line per request on a terminal, tokens left out of it, and a request that arrives
during a stop answered 503 with Retry-After instead of cut (issue 51)."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from agora_local.access_log import STOPPING_RETRY_AFTER
from agora_local.lifecycle import Intake
from agora_local.run import local_server
from tests.support.running import free_port

HOME = "/api/v1/en_US/system-page/home-page"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.an-unsubscribe-token.c2ln"


@dataclass
class Served:
    port: int
    intake: Intake

    def call(self, method: str, path: str, body: bytes | None = None) -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        connection.close()
        return response


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """The server as make run makes it for a terminal (Chalice's local app can be made once a
    process: one server for the module)."""
    intake = Intake()
    port = free_port()
    server = local_server("127.0.0.1", port, intake, readable_log=True)
    serving = threading.Thread(target=server.server.serve_forever, daemon=True)
    serving.start()
    yield Served(port, intake)
    server.server.shutdown()
    server.server.server_close()


def lines_about(text: str, path: str) -> list[str]:
    return [line for line in text.splitlines() if path.split("?")[0] in line]


@pytest.mark.slow
def test_a_request_is_one_readable_line_on_a_terminal_without_its_token(served, aws, capsys):
    capsys.readouterr()
    response = served.call("GET", f"{HOME}?token={TOKEN}")
    assert response.status == 401

    [line] = lines_about(capsys.readouterr().err, HOME)
    assert not line.startswith("{")  # not Agora's JSON record: the access line
    assert f'"GET {HOME}?token=[redacted] HTTP/1.1" 401' in line and line.endswith(" ms")
    assert TOKEN not in line


@pytest.mark.slow
def test_a_request_during_a_stop_is_answered_503_with_retry_after(served, aws, capsys):
    """Last in the module: the stop closes the intake for good."""
    capsys.readouterr()
    assert served.intake.close(timeout=5)

    login = json.dumps({"email": "ann@agora.example", "password": "not read"}).encode()
    for method, path, body in (
        ("POST", "/api/v1/en_US/security/login", login),
        ("GET", HOME, None),
    ):
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = json.loads(response.read())
        connection.close()
        assert response.status == 503
        assert response.headers["Retry-After"] == str(STOPPING_RETRY_AFTER)
        assert response.headers["Connection"] == "close"
        assert answer["success"] is False and "stopping" in answer["message"]

    logged = capsys.readouterr().err
    assert len(lines_about(logged, HOME)) == 1 and '" 503 ' in lines_about(logged, HOME)[0]
