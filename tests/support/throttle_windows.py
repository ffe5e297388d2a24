"""The sign-in throttle counts in fixed 15-minute windows of the clock (services/security.py):
a scenario against the real clock that runs across a window's end starts counting afresh midway.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from chalicelib.services.security import FAILURE_WINDOW

T = TypeVar("T")

# What a scenario of a dozen sign-ins through the in-process API (test-cost hashes) is given: it
# takes 0.3 s on a quiet machine (pytest --durations), so 10 s holds on a loaded one, and a run
# that lands in a window's last minute waits at most 10 s for the next instead of 60 (three such
# tests waited 30 to 42 s each in one fresh clone's make test that began at 14:56).
IN_PROCESS_SECONDS = 10.0
# What a scenario of three to six dozen sign-ins against `make run` over HTTP is given: 1.8 s
# and 0.8 s with the machine busy (tests/local/test_local.py's guessers), so 20 s holds on a
# loaded one; with the default 60 s, a `make test` that reached them in a window's last minute
# waited up to 60 s there (35 s in a fresh clone's run at 02:14).
MAKE_RUN_SECONDS = 20.0


def in_one_throttle_window(scenario: Callable[[], T], needs: float = 60.0) -> T:
    """What `scenario` answers, from a run that began and ended in the same window. When fewer
    than `needs` seconds are left in the current window, the run waits for the next one to begin.
    (Running again after a window ended midway is no cure: what the first run did after the end
    already counts in the new window, and let a crowd's 25th guess find the throttle shut.)"""
    seconds = FAILURE_WINDOW.total_seconds()
    left = seconds - time.time() % seconds
    if left < needs:
        time.sleep(left + 0.5)
    window = int(time.time() // seconds)
    outcome = scenario()
    if int(time.time() // seconds) != window:
        raise AssertionError(f"the scenario outlasted the {needs:.0f} s it was given")
    return outcome
