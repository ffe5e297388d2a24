"""One sending rate for the whole stack: SES takes `AGORA_MAIL_SEND_RATE` mails a second from the
account (14 at first), whichever function sends them.

Every mail of the stack takes a moment on one clock before it goes: an item of the counters table
holding the next free moment (in nanoseconds), which each sender moves on by 1/rate with a
conditional ADD (store/counters.py `SlotClock.take_slot`), then sleeps until the moment it took.
Moments are handed out once and 1/rate apart, so no second ever holds more than the rate,
however many functions and executions send; and whoever has mail takes the moments the others
leave: digests alone get the whole rate, so does an instant burst.

Instant mail goes first. Instant senders (deliver-notifications, drain-outbox's own instant
emails and its mailbox failure emails) take the next free moment whatever it is, and hold the
clock until the end of the moment they took; each takes its next right after it sent, so the hold
lasts while any of them has mail. The digests take a moment only while the clock is not held:
an instant burst waits behind at most the moments the digests had already taken, and the digests
take up again at the first moment no instant sender took (a slow instant sender leaves moments to
them). A digest worker whose deadline comes while it waits puts its users back on the queue
(`SendDeferred`). One item written once per mail: 3 million digests a month are
3 million writes ($3.75 on demand), beside SES's $300.

Why not one paced queue: the digests are built by the worker that claims them (the claim per user
and day, the items taken), and an instant email by the worker that claims its (user, occurrence):
moving the sending out to a single paced consumer would split each claim from its send, and a
queue cannot put one kind of message before another. A clock shared through one item keeps the
claims and the sends where they are and adds one request per mail.

The functions that send mail from an SQS trigger run at most `workers` executions at once
(infra/operations.py reads them from here into the template). That no longer divides the rate:
it is how many senders may wait on the clock together. Nothing here reads the network or the
clock at import; the clock, the sleep and the slot store are given (fakes in the tests and in
`make simulate`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from chalicelib import deps
from chalicelib.domain.ports.notify import SendDeferred
from chalicelib.settings import get_settings


@dataclass(frozen=True)
class Sender:
    """A function that sends mail: its logical id in the template, the most executions of it
    its trigger starts at once (None: not an SQS trigger), and whether its mail goes first."""

    logical_id: str
    workers: int | None
    instant: bool


# Chalice function name -> how it sends.
SENDERS: dict[str, Sender] = {
    # Each execution sends about 10 mails a second of its own round trips (the claim, SES, the
    # record): 4 keep the whole rate for a burst, ahead of the digests' 2, and leave most of a
    # new account's 10 concurrent executions to the API and the mail polls.
    "deliver-notifications": Sender("DeliverNotifications", workers=4, instant=True),
    "deliver-digests": Sender("DeliverDigests", workers=2, instant=False),
    # Instant emails of events with 25 recipients or fewer, and mailbox failure emails.
    "drain-outbox": Sender("DrainOutbox", workers=None, instant=True),
}

# The counters item every sender's moments come from.
SLOT_CLOCK = "mail-send-slots"
# How long a sender that waits for instant mail sleeps at least before it looks again (a clock's
# rounding may wake it a nanosecond before the hold ends).
_RETRY_S = 1e-6


class SlotStore(Protocol):
    """store/counters.py `SlotClock` (a fake in the tests and `make simulate`)."""

    def take_slot(self, name: str, now: int, interval: int, *, first: bool) -> Any: ...


def configured_rate() -> float:
    return float(get_settings().mail_send_rate)


class SendingRate:
    """This sender's way to the shared rate: `wait()` takes the next moment it may send at and
    sleeps until it; at most `rate` of them in any second across every sender of the stack.

    `instant`: takes the next free moment and holds the clock; otherwise (digests) waits while
    instant mail holds it, and `expired` (a deadline's) ends that wait with `SendDeferred`.
    Thread-safe: the moments come from the store one request at a time.
    """

    def __init__(
        self,
        rate: float,
        slots: SlotStore,
        *,
        instant: bool,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        expired: Callable[[], bool] = lambda: False,
    ) -> None:
        if rate <= 0:
            raise ValueError("the rate must be above 0")
        self.rate = rate
        # Whole nanoseconds, rounded up: 14 moments a second are 1.000000008 s from first to
        # fifteenth, never under a second.
        self.interval = math.ceil(1e9 / rate)
        self.instant = instant
        self.slots = slots
        self.clock = clock
        self.sleep = sleep
        self.expired = expired

    def wait(self) -> float:
        """Block until a send may go; answers the moment it may (the clock's)."""
        while True:
            now = self.clock()
            slot = self.slots.take_slot(
                SLOT_CLOCK, round(now * 1e9), self.interval, first=self.instant
            )
            if slot.taken:
                at = slot.at / 1e9
                # A sleep may wake a little early: look at the clock again.
                while now < at:
                    self.sleep(at - now)
                    now = self.clock()
                return now
            if self.expired():
                raise SendDeferred("instant mail is using the sending rate; sent later")
            # Instant mail holds the clock: look again when its hold ends.
            self.sleep(max(slot.at / 1e9 - now, _RETRY_S))


class PacedMail:
    """A mailer (`is_suppressed`, `send`) whose sends wait for their moment; the rest is as given.

    One send at a time: threads that prepare digests side by side would otherwise each take a
    moment and then reach SES together, bunched (the send is a few milliseconds of building the
    message and one SES call).
    """

    def __init__(self, mail: Any, pacer: SendingRate) -> None:
        self.mail = mail
        self.pacer = pacer
        self._one_at_a_time = threading.Lock()

    def is_suppressed(self, address: str) -> bool:
        return bool(self.mail.is_suppressed(address))

    def send(self, group: Any, letter: Any) -> str:
        with self._one_at_a_time:
            self.pacer.wait()
            return str(self.mail.send(group, letter))


def sending_rate(function: str, *, expired: Callable[[], bool] | None = None) -> SendingRate:
    """The shared rate as `function` draws from it, on the stack's slot clock (the counters
    table); `expired`: its deadline, for a sender that waits behind instant mail."""

    return SendingRate(
        configured_rate(),
        deps.slot_clock(),
        instant=SENDERS[function].instant,
        expired=expired or (lambda: False),
    )


def paced(function: str, mail: Any, *, expired: Callable[[], bool] | None = None) -> PacedMail:
    """`mail` sending at `function`'s place in the shared rate."""
    return PacedMail(mail, sending_rate(function, expired=expired))
