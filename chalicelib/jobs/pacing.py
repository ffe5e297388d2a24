"""One sending rate for the whole stack: SES takes `AGORA_MAIL_SEND_RATE` mails a second from the
account (14 at first), whichever function sends them.

Each function that sends mail gets a share of the rate; its trigger runs at most `workers`
executions at once (infra/operations.py reads them from here into the template), and each
execution paces its own sends at `share × rate ÷ workers` with a `Pacer`. The sum of
workers × per-worker rate is never above the rate (tests/fast/test_pacing.py checks it on the
generated template). The digests get most of it: 100,000 digests are sent in
100,000 ÷ (13/14 × 14) s, within 1.1 × 100,000 ÷ 14 s; instant notifications keep the rest.

A process that runs a job in itself (`send-digests` on the command line, `make run`'s scheduler)
is all of that job's workers at once: it paces at the job's whole share.

Nothing here reads the network or the clock at import; the clock and the sleep are given (a fake
one in the tests and in `make simulate`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sender:
    """A function that sends mail: its logical id in the template, the most executions of it
    its trigger starts at once, and its share of the sending rate."""

    logical_id: str
    workers: int
    share: float


# Chalice function name -> its part of the rate. The shares add up to 1.
SENDERS: dict[str, Sender] = {
    "deliver-digests": Sender("DeliverDigests", workers=2, share=13 / 14),
    "deliver-notifications": Sender("DeliverNotifications", workers=2, share=1 / 14),
}

# A sliver over each interval: float rounding never lets rate + 1 sends into one second.
_SLACK_S = 1e-6


def job_rate(function: str, rate: float) -> float:
    """Mails a second all executions of `function` may send together."""
    return rate * SENDERS[function].share


def per_worker_rate(function: str, rate: float) -> float:
    """Mails a second one execution of `function` may send (its workers share its part)."""
    sender = SENDERS[function]
    return job_rate(function, rate) / sender.workers


def configured_rate() -> float:
    from chalicelib.settings import get_settings

    return float(get_settings().mail_send_rate)


class Pacer:
    """Lets through at most `rate` sends a second: consecutive sends are at least 1/rate apart.

    So any second holds at most ⌈rate⌉ of them (exactly `rate` for a whole number). `wait()`
    blocks until the next send may go and takes its turn; thread-safe (a worker sending from
    several threads shares one pacer).
    """

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("the rate must be above 0")
        self.rate = rate
        self.interval = 1.0 / rate + _SLACK_S
        self.clock = clock
        self.sleep = sleep
        self._next: float | None = None
        self._lock = threading.Lock()

    def wait(self) -> float:
        """Block until a send may go; answers the moment it may (the clock's)."""
        with self._lock:
            now = self.clock()
            if self._next is not None:
                # A sleep may wake a little early: look at the clock again.
                while now < self._next:
                    self.sleep(self._next - now)
                    now = self.clock()
            self._next = now + self.interval
            return now


class PacedMail:
    """A mailer (`is_suppressed`, `send`) whose sends wait for the pacer; the rest is as given.

    One send at a time: threads that prepare digests side by side would otherwise each take a
    turn and then reach SES together, bunched (the send is a few milliseconds of building the
    message and one SES call).
    """

    def __init__(self, mail: Any, pacer: Pacer) -> None:
        self.mail = mail
        self.pacer = pacer
        self._one_at_a_time = threading.Lock()

    def is_suppressed(self, address: str) -> bool:
        return bool(self.mail.is_suppressed(address))

    def send(self, group: Any, letter: Any) -> str:
        with self._one_at_a_time:
            self.pacer.wait()
            return str(self.mail.send(group, letter))


# One pacer per function in this process (a warm Lambda container keeps it between invocations,
# so a new invocation does not start with a burst).
_pacers: dict[tuple[str, float], Pacer] = {}
_pacers_lock = threading.Lock()


def worker_pacer(function: str) -> Pacer:
    """This execution's pacer for `function`, at its per-worker rate."""
    rate = per_worker_rate(function, configured_rate())
    with _pacers_lock:
        key = (function, rate)
        if key not in _pacers:
            _pacers[key] = Pacer(rate)
        return _pacers[key]


def in_process_pacer(function: str) -> Pacer:
    """A pacer at the whole of `function`'s part: one process doing all of that job's work."""
    return Pacer(job_rate(function, configured_rate()))
