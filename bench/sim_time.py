"""Simulated time for executions that run the real, blocking code side by side (`make simulate`).

Each simulated execution (a Lambda worker, the schedule, the drain) runs in its own thread, and
exactly one runs at a time: the one whose moment comes first. Time passes only when the running
one sleeps (the sending clock's wait, an empty queue's poll): it is put aside until its moment,
and the next due runs, the clock moved on to its moment. So the code under test runs as written,
blocking calls and all, and the executions meet at the sending clock in the order their moments
say, as Lambda's would; the run is the same every time.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable


class SimulatedTime:
    """`clock()` is the simulated seconds; `sleep(s)` blocks the calling execution that long;
    `start(at, work)` adds an execution that begins at `at`; `run()` runs them all to the end."""

    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()
        self._due: list[tuple[float, int, threading.Event]] = []
        self._order = itertools.count()
        self._idle = threading.Event()
        self._errors: list[BaseException] = []
        self._threads: list[threading.Thread] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        turn = threading.Event()
        with self._lock:
            heapq.heappush(self._due, (self.now + max(seconds, 0.0), next(self._order), turn))
            self._next()
        turn.wait()

    def start(self, at: float, work: Callable[[], None]) -> None:
        turn = threading.Event()
        with self._lock:
            heapq.heappush(self._due, (max(at, self.now), next(self._order), turn))
        thread = threading.Thread(target=self._execute, args=(turn, work), daemon=True)
        self._threads.append(thread)
        thread.start()

    def run(self) -> None:
        """Run every execution (and those they start) until none is left; raises the first
        error one of them raised."""
        with self._lock:
            self._next()
        self._idle.wait()
        for thread in self._threads:
            thread.join()
        if self._errors:
            raise self._errors[0]

    def _execute(self, turn: threading.Event, work: Callable[[], None]) -> None:
        turn.wait()
        try:
            work()
        except BaseException as error:  # reported by run(); the others still end
            self._errors.append(error)
        finally:
            with self._lock:
                self._next()

    def _next(self) -> None:
        """Hand the run to the execution due first (under the lock), or say all are done."""
        if not self._due:
            self._idle.set()
            return
        at, _, turn = heapq.heappop(self._due)
        self.now = max(self.now, at)
        turn.set()
