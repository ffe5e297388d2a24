"""The throttle tests' window helper (tests/support/throttle_windows.py): a scenario starts with
room enough in its window, and one that outlasts the window fails instead of counting twice."""

from __future__ import annotations

import pytest

from tests.support import throttle_windows

WINDOW = 15 * 60


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock(100 * WINDOW + WINDOW - 10)  # 10 s left in a window
    monkeypatch.setattr(throttle_windows.time, "time", fake.time)
    monkeypatch.setattr(throttle_windows.time, "sleep", fake.sleep)
    return fake


def test_too_little_room_waits_for_the_next_window_and_runs_once(clock):
    runs: list[float] = []
    assert throttle_windows.in_one_throttle_window(lambda: runs.append(clock.now) or "ok") == "ok"
    assert len(runs) == 1 and runs[0] // WINDOW == 101 and clock.slept == [10.5]


def test_room_enough_runs_at_once(clock):
    clock.now -= 100  # 110 s left
    assert throttle_windows.in_one_throttle_window(lambda: "ok", needs=60) == "ok"
    assert clock.slept == []


def test_a_scenario_that_outlasts_its_window_fails(clock):
    def slow() -> None:
        clock.now += WINDOW

    with pytest.raises(AssertionError, match="outlasted the 60 s"):
        throttle_windows.in_one_throttle_window(slow)
