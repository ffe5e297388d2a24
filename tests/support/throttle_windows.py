"""The sign-in throttle counts in fixed 15-minute windows of the clock (services/security.py):
a scenario against the real clock that runs across a window's end starts counting afresh midway.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from chalicelib.services.security import FAILURE_WINDOW

T = TypeVar("T")


def in_one_throttle_window(scenario: Callable[[], T]) -> T:
    """What `scenario` answers, from a run that began and ended in the same window: when a window
    ended while it ran, it runs once more, at the start of the next (15 minutes of room)."""
    seconds = int(FAILURE_WINDOW.total_seconds())
    for _ in range(2):
        window = int(time.time()) // seconds
        outcome = scenario()
        if int(time.time()) // seconds == window:
            return outcome
    raise AssertionError("a scenario of a few seconds outlasted a whole 15-minute window")
