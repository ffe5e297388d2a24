"""`make run` in a child process on free ports, for tests and benchmarks that speak real HTTP."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def this_clock() -> dict[str, str]:
    """The variables that shift this process's clock (libfaketime's, under `make test-future`),
    for a child given a clean environment: it runs on the test's clock, as every other process
    of the test does (a CLI a year behind the embedded AWS it signs requests to is refused)."""
    return {
        name: value
        for name, value in os.environ.items()
        if name == "LD_PRELOAD" or name.startswith("FAKETIME")
    }


def on_the_real_clock(env: dict[str, str]) -> dict[str, str]:
    """`env` without the variables of `this_clock`: for a child that talks TLS to the internet
    (pip fetching wheels from PyPI), whose certificate check a shifted clock fails ("certificate
    has expired" five years ahead); what it does depends on no date of ours."""
    return {name: value for name, value in env.items() if name not in this_clock()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RunningAgora:
    process: subprocess.Popen
    base: str
    output: list[str] = field(default_factory=list)
    admin_email: str = ""
    admin_password: str = ""
    aws_endpoint: str = ""
    # The variables it printed for the CLI (AWS_ENDPOINT_URL, region, its key pair, …), and the
    # `export NAME=value` lines themselves, as printed.
    printed: dict[str, str] = field(default_factory=dict)
    export_lines: list[str] = field(default_factory=list)
    # The data folder start_agora made for this run (removed on stop), or "" when given.
    temporary_data_dir: str = ""
    # Its SMTP door's port (AGORA_SMTP_PORT): mail in by push.
    smtp_port: int = 0

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        source: str | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """One JSON call; `source` binds the client to that loopback address (127.0.0.2, …), so
        the server sees another peer address, as API Gateway sees another `sourceIp`."""
        if source is not None:
            status, _, payload = self.raw(method, path, body, headers, source)
            return status, json.loads(payload)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def raw(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        source: str = "127.0.0.1",
    ) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and bytes of one call made from the loopback address `source`."""
        import http.client
        from urllib.parse import urlsplit

        parts = urlsplit(self.base)
        connection = http.client.HTTPConnection(
            parts.hostname, parts.port, timeout=30, source_address=(source, 0)
        )
        try:
            connection.request(
                method,
                path,
                body=json.dumps(body).encode() if body is not None else None,
                headers={"Content-Type": "application/json", **(headers or {})},
            )
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    # The administrator's token of the first `token()`: tests sharing this run sign in once
    # (each sign-in is a full-strength argon2 verification).
    _token: str = field(default="", repr=False)

    def login(self) -> str:
        status, body = self.request(
            "POST",
            "/api/v1/en_US/security/login",
            {"email": self.admin_email, "password": self.admin_password},
        )
        assert status == 200, body
        return body["object"]

    def token(self) -> str:
        """The administrator's token, signed in on first use (login() signs in every time)."""
        if not self._token:
            self._token = self.login()
        return self._token

    def moto_api(self, path: str) -> Any:
        """A JSON page of the embedded AWS's `/moto-api/` (the mail SES accepted, …), asked with
        HTTP Basic of the key pair make run printed."""
        import base64

        pair = f"{self.printed['AWS_ACCESS_KEY_ID']}:{self.printed['AWS_SECRET_ACCESS_KEY']}"
        request = urllib.request.Request(
            f"{self.aws_endpoint}/moto-api/{path}",
            headers={"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def stop(self, how: signal.Signals | None = None) -> None:
        """Stop it with `how`. Unsaid: when its data folder is this run's temporary one (removed
        next), the whole process group is killed at once, since the orderly stop would only write
        a snapshot and an export (most of a second of CPU) to be deleted; otherwise Ctrl-C
        (SIGINT), which saves as a user's stop does."""
        if self.process.poll() is None:
            if how is None and self.temporary_data_dir:
                # Its own session (start_new_session): the group's id is the process's.
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            else:
                self.process.send_signal(how or signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.temporary_data_dir:
            import shutil

            shutil.rmtree(self.temporary_data_dir, ignore_errors=True)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def popen_agora(
    command: list[str],
    cwd: Path,
    env: dict[str, str],
    sigint_ignored: bool = False,
    stderr_too: bool = False,
) -> subprocess.Popen:
    """`make run`'s server (or `command`) started in `cwd`, its output read as text lines
    (`stderr_too`: its stderr in the same pipe, as `make run 2>&1 | tee log`)."""
    return subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if stderr_too else subprocess.DEVNULL,
        text=True,
        # Its own process group: a test's Ctrl-C (SIGINT to the group) reaches it, not pytest.
        start_new_session=True,
        preexec_fn=_ignore_sigint if sigint_ignored else None,
    )


def start_agora(
    extra_env: dict[str, str] | None = None,
    timeout: float = 90,
    command: list[str] | None = None,
    *,
    as_a_user: bool = False,
    sigint_ignored: bool = False,
    stderr_too: bool = False,
) -> RunningAgora:
    """Start `python -m agora_local` (or `command`, such as `make run`) and wait until it says
    it serves. Its data goes to a new temporary folder unless AGORA_DATA_DIR is given, so that a
    test never reads or overwrites the data of a developer's own `make run`.

    `as_a_user`: with none of the test suite's AGORA_* variables (its table prefix, base URL,
    token secret), as a user runs `make run` on a fresh machine.

    `sigint_ignored`: started with SIGINT ignored, as a non-interactive shell starts a background
    job (a CI runner, a supervisor); the process inherits that."""
    import tempfile

    port, aws_port = free_port(), free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("AWS_ENDPOINT_URL", "AGORA_TOKEN_SECRET")
        and not (as_a_user and k.upper().startswith("AGORA_"))
    }
    env.update(
        {
            "AGORA_PORT": str(port),
            "AGORA_AWS_PORT": str(aws_port),
            # Its SMTP door too: make runs side by side never meet on the default 8025.
            "AGORA_SMTP_PORT": str(free_port()),
            "PYTHONPATH": str(REPO_ROOT),
            "PYTHONUNBUFFERED": "1",
            **(extra_env or {}),
        }
    )
    temporary_data_dir = ""
    if "AGORA_DATA_DIR" not in env:
        temporary_data_dir = env["AGORA_DATA_DIR"] = tempfile.mkdtemp(prefix="agora-run-")
    process = popen_agora(
        command or [sys.executable, "-m", "agora_local"], REPO_ROOT, env, sigint_ignored, stderr_too
    )
    running = RunningAgora(
        process=process,
        base=f"http://127.0.0.1:{port}",
        temporary_data_dir=temporary_data_dir,
        smtp_port=int(env["AGORA_SMTP_PORT"]),
    )
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    for line in process.stdout:
        running.output.append(line)
        if match := re.match(r"root administrator: (\S+) / (\S+)", line):
            running.admin_email, running.admin_password = match.groups()
        if match := re.match(r"export ((?:AWS|AGORA)_[A-Z_]+)=(.*)$", line.rstrip("\n")):
            running.export_lines.append(line.rstrip("\n"))
            running.printed[match.group(1)] = "".join(shlex.split(match.group(2)))
        running.aws_endpoint = running.printed.get("AWS_ENDPOINT_URL", "")
        if line.startswith("Ctrl-C stops everything."):
            return running
        if time.monotonic() > deadline:
            break
    running.stop()
    raise RuntimeError("make run did not start:\n" + "".join(running.output))


def run_module(
    module: str,
    *arguments: str,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`python -m module arguments` with this interpreter, in the repository (the CLI, `make
    run`'s server, a helper of tests/support), its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", module, *arguments],
        cwd=REPO_ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
