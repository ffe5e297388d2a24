"""What every job shares: a deadline so that a run stops cleanly before Lambda's time limit."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Stop starting new work this long before Lambda would kill the function (or a tenth of the
# function's time, for short ones).
SAFETY_MARGIN_MS = 30_000


@dataclass
class Deadline:
    """`expired()` turns true when the run must stop and leave the rest for the next run."""

    remaining_ms: Callable[[], int]
    margin_ms: int = -1

    def __post_init__(self) -> None:
        if self.margin_ms < 0:
            self.margin_ms = min(SAFETY_MARGIN_MS, self.remaining_ms() // 10)

    def expired(self) -> bool:
        return self.remaining_ms() <= self.margin_ms

    @classmethod
    def from_lambda(cls, context: Any) -> Deadline:
        if context is not None and hasattr(context, "get_remaining_time_in_millis"):
            return cls(context.get_remaining_time_in_millis)
        return cls.unbounded()

    @classmethod
    def after_seconds(cls, seconds: float) -> Deadline:
        end = time.monotonic() + seconds
        return cls(lambda: int((end - time.monotonic()) * 1000), margin_ms=0)

    @classmethod
    def unbounded(cls) -> Deadline:
        return cls(lambda: 10**12, margin_ms=0)
