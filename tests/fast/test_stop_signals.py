"""`make run`'s stop request survives a burst of signals (CI, stop 41: SIGTERM, SIGTERM, SIGINT a
few milliseconds apart left `make run` hung for good, its handler waiting on a lock its own
thread held). The real StopRequest in a real process, hammered by hundreds of signals while it
waits and while the stop that follows runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support import REPO_ROOT

WAITER = """
import time
from agora_local.lifecycle import StopRequest
request = StopRequest()
request.install()
print("waiting", flush=True)
request.wait(poll_seconds=0.001)
# The stop itself goes on while further signals arrive: they change nothing.
end = time.monotonic() + 0.5
while time.monotonic() < end:
    request.wait(poll_seconds=0.0001)
print("stopped once", flush=True)
"""


@pytest.mark.parametrize(
    "burst", [[signal.SIGTERM], [signal.SIGTERM, signal.SIGTERM, signal.SIGINT]]
)
def test_a_burst_of_stop_signals_stops_the_waiter_once(burst):
    for _ in range(3):
        waiter = subprocess.Popen(
            [sys.executable, "-c", WAITER],
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            stdout=subprocess.PIPE,
            text=True,
        )
        assert waiter.stdout is not None
        assert waiter.stdout.readline() == "waiting\n"
        for _ in range(100):
            for number in burst:
                try:
                    os.kill(waiter.pid, number)
                except ProcessLookupError:
                    break
            time.sleep(0.0005)
        try:
            rest, _ = waiter.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            waiter.kill()
            waiter.communicate()
            raise AssertionError("the stop request hung under a burst of signals") from None
        assert waiter.returncode == 0
        assert rest == "stopped once\n"
