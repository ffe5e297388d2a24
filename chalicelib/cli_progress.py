"""The CLI's progress line on a terminal (chalicelib/cli.py): results stay on stdout, and a
pipe, a log or CI sees nothing of it."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


class Progress:
    """On a terminal, a status line on stderr that overwrites itself: a bar when the amount of work
    is known (`show(text, done, total)`), a spinner with the time taken while `running()` work
    says nothing; silent otherwise (logs, pipes and CI get only the results on stdout). Result
    lines printed through `line()` go to stdout above it."""

    BAR = 30
    SPINNER = "|/-\\"

    def __init__(self, stream: Any = None) -> None:

        self.stream = stream or sys.stderr
        self.shown = self.stream.isatty()
        self.width = 0
        self.text = ""
        self.lock = threading.Lock()

    @staticmethod
    def bar(text: str, done: int, total: int, width: int = BAR) -> str:
        part = min(max(done, 0), total) / total if total > 0 else 1.0
        filled = round(width * part)
        return f"{text} [{'#' * filled}{'-' * (width - filled)}] {part:4.0%}"

    def show(self, text: str, done: int | None = None, total: int | None = None) -> None:
        if not self.shown:
            return
        with self.lock:
            self.text = self.bar(text, done, total) if done is not None and total else text
            self._draw(self.text)

    def _draw(self, text: str) -> None:
        self.width = max(self.width, len(text))
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()

    def _wipe(self) -> None:
        if self.shown and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0

    def line(self, text: str, file: Any = None) -> None:
        """A result line on stdout (or `file`: stderr for a failure); the status line (when
        shown) is drawn again under it."""
        with self.lock:
            self._wipe()
            print(text, file=file or sys.stdout, flush=True)
            if self.shown and self.text:
                self._draw(self.text)

    def done(self) -> None:
        with self.lock:
            self.text = ""
            self._wipe()

    @contextlib.contextmanager
    def running(self, text: Callable[[], str]) -> Iterator[None]:
        """While the block runs, a spinner and the seconds taken after `text()` (asked again at
        each turn, so a count it reads stays current); wiped at the end."""

        if not self.shown:
            yield
            return
        stop = threading.Event()
        started = time.monotonic()

        def turn() -> None:
            step = 0
            while True:
                spinner = self.SPINNER[step % len(self.SPINNER)]
                self.show(f"{text()} {spinner} {time.monotonic() - started:.0f} s")
                step += 1
                if stop.wait(0.2):
                    return

        ticker = threading.Thread(target=turn, name="cli-progress", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()
            self.done()
