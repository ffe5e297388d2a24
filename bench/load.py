"""Load: `make run`'s server under a bounded load from `wrk` (Debian's), on loopback.

wrk runs in its own process with a fixed number of connections (a closed loop: at most that many
requests in flight), first against Agora's home page with the demo data (tests/support/running.py
starts it as `make run` does), then against the bare Chalice app served by `chalice local`, which
is the same Chalice local server.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.cold_start import bare_project
from bench.report import Figure, skipped

DURATION_SECONDS = 30
CONNECTIONS = 4
NAMES = [
    ("load_requests_per_second", "req/s"),
    ("load_p50_ms", "ms"),
    ("load_p99_ms", "ms"),
]
HOME_PAGE = "/api/v1/en_US/system-page/home-page"
UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


@dataclass
class WrkResult:
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    errors: str | None


def to_ms(text: str) -> float:
    found = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if found is None:
        raise ValueError(f"not a wrk duration: {text!r}")
    number, unit = found.groups()
    return float(number) * UNITS_MS[unit]


def parse_wrk(output: str) -> WrkResult:
    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    p50 = re.search(r"^\s+50%\s+(\S+)", output, re.MULTILINE)
    p99 = re.search(r"^\s+99%\s+(\S+)", output, re.MULTILINE)
    if not (rate and p50 and p99):
        raise RuntimeError(f"cannot read wrk's output:\n{output}")
    problems = [
        line.strip() for line in output.splitlines() if "Non-2xx" in line or "Socket errors" in line
    ]
    return WrkResult(
        float(rate.group(1)), to_ms(p50.group(1)), to_ms(p99.group(1)), "; ".join(problems) or None
    )


def run_wrk(wrk: str, url: str, headers: dict[str, str], seconds: int) -> WrkResult:
    command = [wrk, "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "--timeout", "10s"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    done = subprocess.run(
        [*command, url], capture_output=True, text=True, timeout=seconds + 60, check=True
    )
    return parse_wrk(done.stdout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port} after {timeout:.0f}s")


def load_agora(wrk: str, seconds: int) -> WrkResult:
    from tests.support.running import start_agora

    running = start_agora()
    try:
        token = running.login()
        status, body = running.request("GET", HOME_PAGE, headers={"X-Auth": token})
        if status != 200:
            raise RuntimeError(f"home page answered {status}: {body}")
        return run_wrk(wrk, running.base + HOME_PAGE, {"X-Auth": token}, seconds)
    finally:
        running.stop()


def load_bare(wrk: str, seconds: int) -> WrkResult:
    project: Path = bare_project()
    port = free_port()
    chalice = Path(sys.executable).parent / "chalice"
    server = subprocess.Popen(
        [str(chalice), "local", "--host", "127.0.0.1", "--port", str(port), "--no-autoreload"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        return run_wrk(wrk, f"http://127.0.0.1:{port}/", {}, seconds)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def load_figures(seconds: int = DURATION_SECONDS) -> list[Figure]:
    wrk = shutil.which("wrk")
    if wrk is None:
        return skipped(NAMES, "wrk is not installed (`make bench` installs Debian's)")
    agora = load_agora(wrk, seconds)
    bare = load_bare(wrk, seconds)
    note = f"Agora: {agora.errors}" if agora.errors else None
    return [
        Figure(
            "load_requests_per_second",
            agora.requests_per_second,
            bare.requests_per_second,
            "req/s",
            note,
        ),
        Figure("load_p50_ms", agora.p50_ms, bare.p50_ms, "ms", note),
        Figure("load_p99_ms", agora.p99_ms, bare.p99_ms, "ms", note),
    ]
