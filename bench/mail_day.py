"""A simulated day of mail in: 10,000 mailboxes through the real dispatch, due index, lease,
back-off and poll decisions, with a fake clock and a fake POP3 fleet.

The day: 6,700 mails (the cost table's assumption), Poisson arrivals, a tenth of the mailboxes
getting nine tenths of the mail; 1% of the mailboxes have a wrong password; a POP3 session takes
0.3 to 2 s. Every 5 minutes `chalicelib.jobs.mail_poll.dispatch` Queries the due mailboxes and
writes its SQS messages (several mailboxes each); each message runs on one of the template's
`MaximumConcurrency` executions (infra/operations.py), which polls its mailboxes side by side
through `poll_mailbox` (the lease, the due check, the poll, `record_poll`'s back-off and the
administrators' email), and the mail through the real `MailIngestor` (UIDLs, parsing, the
planner's rules, the post) opening the fake fleet where `open_pop3` opens poplib: a wrong
password fails the login there as a real server does. The stores are the contract-tested fakes
(tests/support/mailbox_fakes.py, tests/support/mail_fakes.py), not moto: a million polls through
moto would take hours.

Figures (seconds of the fake clock): `mail_day_polls` (POP3 sessions opened in the day),
`mail_day_delay_p50_s`, `_p95_s`, `_max_s` (from a mail's arrival to its post, mails of the
mailboxes that can be read), `mail_day_failed_logins_per_broken_mailbox`,
`mail_day_concurrency` (executions needed: the busiest 5 minutes' execution-seconds over 300 s,
rounded up), `mail_day_concurrency_peak` (the most executions running at once, in the busiest
second: what Lambda counts against the account's concurrency, since each dispatch releases its
messages together), `mail_day_kms_calls` (Decrypts: each execution is a warm container that keeps a
password it decrypted, as `chalicelib.secrets` does, and is replaced every CONTAINER_HOURS).

The `reference_` figures are the fixed 5-minute rhythm before it (one message per mailbox per
dispatch, a failed login redelivered by SQS up to 5 times, a Decrypt per poll), computed rather
than simulated: 2.9 million polls of the same shape would only repeat the arithmetic below.
"""

from __future__ import annotations

import json
import logging
import math
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

DAY = 24 * 3600
MAILS_PER_DAY = 6_700
BUSY_SHARE, BUSY_MAIL_SHARE = 0.1, 0.9
BROKEN_SHARE = 0.01
SESSION_SECONDS = (0.3, 2.0)
# What an invocation adds to its slowest poll: the Lambda's own start, reads and writes.
INVOCATION_OVERHEAD_S = 0.2
SQS_LATENCY_S = 0.1
DISPATCH_SECONDS = 300
# Settings were saved during the hour before the day; the day is followed by half an hour in
# which its last mails are fetched (counted in the delays, not in the day's polls).
WARM_UP_S, FLUSH_S = 3600, 1800
CONTAINER_HOURS = 2
# A pushed mail (SES receiving, its S3 action, receive-mail's asynchronous invocation, mail in):
# seconds from its arrival to its post. AWS publishes no figure: an assumption (make run's SMTP
# door, measured, takes a third of a second: mail_push_delay_p95_s).
PUSH_SECONDS = (1.0, 4.0)
START = datetime(2026, 11, 26, tzinfo=UTC)

KEYS = (
    "mail_day_polls",
    "mail_day_delay_p50_s",
    "mail_day_delay_p95_s",
    "mail_day_delay_max_s",
    "mail_day_failed_logins_per_broken_mailbox",
    "mail_day_concurrency",
    "mail_day_concurrency_peak",
    "mail_day_kms_calls",
)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def at(self, seconds: float) -> None:
        self.now = START + timedelta(seconds=seconds)


def seconds_of(moment: datetime) -> float:
    return (moment - START).total_seconds()


@dataclass
class Container:
    """A warm execution: busy until `free_at`, keeping the passwords it decrypted."""

    number: int
    free_at: float = -float("inf")
    born: float = -float("inf")
    kept: dict[bytes, float] = field(default_factory=dict)


class ContainerCipher:
    """`chalicelib.secrets` as each container runs it: a Decrypt (counted) unless the running
    container keeps the plaintext (KEEP_SECONDS, MAX_ENTRIES)."""

    def __init__(self, inner: Any, clock: Clock) -> None:
        from chalicelib import secrets

        self.inner, self.clock = inner, clock
        self.keep, self.max_entries = secrets.KEEP_SECONDS, secrets.MAX_ENTRIES
        self.container: Container | None = None
        self.kms_calls = 0

    def encrypt(self, plaintext: str, context: Any) -> bytes:
        return bytes(self.inner.encrypt(plaintext, context))

    def decrypt(self, ciphertext: bytes, context: Any) -> str:
        now = seconds_of(self.clock())
        kept = self.container.kept if self.container is not None else {}
        if kept.get(ciphertext, -1.0) <= now:
            self.kms_calls += 1
            kept[ciphertext] = now + self.keep
            if len(kept) > self.max_entries:
                kept.pop(next(iter(kept)))
        return str(self.inner.decrypt(ciphertext, context))


class Fleet:
    """The POP3 servers at the poplib seam: each mailbox's arrivals reach its maildrop when a
    session opens; a wrong password is refused at login as `Pop3Mailbox` refuses it."""

    def __init__(self, clock: Clock, arrivals: dict[str, list[float]], broken: set[str]) -> None:
        from tests.support.mail_fakes import FakeMaildrop

        self.clock = clock
        self.arrivals = arrivals  # scope -> arrival seconds, sorted, consumed as they arrive
        self.broken = broken
        self.maildrops = {scope: FakeMaildrop() for scope in arrivals}
        self.waiting: dict[str, list[float]] = {scope: [] for scope in arrivals}
        self.failed_logins = 0
        self.sessions = 0
        self.session_end = 0.0  # this session's end, set by the runner
        self.delays: list[float] = []

    def __call__(self, mailbox: Any) -> Any:
        from chalicelib.mail.pop3 import MailboxError

        self.sessions += 1
        scope = mailbox.scope
        now = seconds_of(self.clock())
        pending = self.arrivals[scope]
        while pending and pending[0] <= now:
            arrived = pending.pop(0)
            self.maildrops[scope].deliver(_mail(scope, arrived))
            self.waiting[scope].append(arrived)
        if scope in self.broken:
            self.failed_logins += 1
            raise MailboxError(
                f"pop3s://{scope}@pop.example:995: log in (PASS) failed: -ERR [AUTH] failed",
                reason="login",
            )
        # Every mail listed now is posted by the end of this session.
        self.delays += [self.session_end - arrived for arrived in self.waiting[scope]]
        self.waiting[scope] = []
        return self.maildrops[scope](mailbox)


def _mail(scope: str, arrived: float) -> bytes:
    """A plain text mail from a member to the group's address (written out: the standard
    library's EmailMessage would cost the day more than the polls)."""
    stamp = f"{arrived:.6f}"
    return (
        f"From: {scope}@members.example\r\n"
        f"To: {scope}@example.org\r\n"
        f"Subject: News of {scope} at {stamp}\r\n"
        "Date: Thu, 26 Nov 2026 08:00:00 +0000\r\n"
        f"Message-ID: <{scope}.{stamp}@mail.example>\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "\r\n"
        "A few words.\r\n"
    ).encode()


def _arrivals(rng: random.Random, scopes: list[str], mails: float) -> dict[str, list[float]]:
    busy = set(rng.sample(scopes, max(1, int(len(scopes) * BUSY_SHARE))))
    per_busy = mails * BUSY_MAIL_SHARE / len(busy)
    per_quiet = mails * (1 - BUSY_MAIL_SHARE) / max(1, len(scopes) - len(busy))
    found: dict[str, list[float]] = {}
    for scope in scopes:
        rate = (per_busy if scope in busy else per_quiet) / DAY
        times, moment = [], 0.0
        while True:  # a Poisson process: exponential gaps
            moment += rng.expovariate(rate)
            if moment >= DAY:
                break
            times.append(moment)
        found[scope] = times
    return found


def _take(containers: list[Container], ready_at: float) -> Container:
    """The execution a message runs on: the warm one that finished last among those free (Lambda
    keeps reusing its warmest containers; the others go cold), else the first to be free."""
    free = [c for c in containers if c.free_at <= ready_at]
    if free:
        return max(free, key=lambda c: (c.free_at, -c.number))
    return min(containers, key=lambda c: (c.free_at, c.number))


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


@contextmanager
def _quiet() -> Iterator[None]:
    """A million polls' log lines would cost more than the polls."""
    from chalicelib.logs import get_logger

    get_logger("bench")  # configures the package's logger first, so the level set here holds
    logger = logging.getLogger("chalicelib")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def simulate(
    mailboxes: int,
    seed: int,
    mails: float = MAILS_PER_DAY,
    push_share: float = 0.0,
    *,
    series: dict[str, list[float]] | None = None,
) -> dict[str, float]:
    """The day; `push_share` of the groups (those whose password is right) receive by push
    (push-only connectors: never polled), their mail posted PUSH_SECONDS after it arrives.
    `series`, when given, gets the day's series the figures come from (for bench/pictures.py):
    `polls_per_hour` (the POP3 sessions opened in each hour of the day) and `delays_s` (each
    mail's seconds from its arrival to its post)."""
    day = _Day(mailboxes, seed, mails, push_share)
    day.save_settings()
    tally = day.run()
    if series is not None:
        series.update(polls_per_hour=tally.hourly, delays_s=list(day.fleet.delays))
    posted = len(day.posts.rows)
    if posted < day.day_mails:
        raise AssertionError(f"mail lost: {day.day_mails} arrived, {posted} posted")
    return {
        "mail_day_polls": float(tally.polls),
        "mail_day_delay_p50_s": _percentile(day.fleet.delays, 0.50),
        "mail_day_delay_p95_s": _percentile(day.fleet.delays, 0.95),
        "mail_day_delay_max_s": max(day.fleet.delays, default=0.0),
        "mail_day_failed_logins_per_broken_mailbox": tally.failed_logins / len(day.broken),
        "mail_day_concurrency": float(math.ceil(tally.busiest / DISPATCH_SECONDS)),
        "mail_day_concurrency_peak": float(most_at_once(tally.executions)),
        "mail_day_kms_calls": float(day.cipher.kms_calls),
    }


@dataclass
class _Tally:
    """What the day counts: the POP3 sessions and failed logins of the polls that start within
    it (and in which hour), its executions, the busiest dispatch interval's execution-seconds."""

    polls: int = 0
    hourly: list[float] = field(default_factory=lambda: [0.0] * (DAY // 3600))
    failed_logins: int = 0
    executions: list[tuple[float, float]] = field(default_factory=list)
    busiest: float = 0.0


class _Day:
    """The fleet, its arrivals and the stores, made from the seed: mailboxes g00000..., a share
    of them broken, a share of the readable ones receiving by push."""

    def __init__(self, mailboxes: int, seed: int, mails: float, push_share: float) -> None:
        from chalicelib.services.mailboxes import MailboxDirectory, MailboxSettingsService
        from infra.operations import MAX_CONCURRENCY
        from tests.support.mail_fakes import FakeMailPosts
        from tests.support.mailbox_fakes import FakeCipher, FakeLeases, FakeMailboxRepository

        self.rng = rng = random.Random(seed)
        self.clock = clock = Clock()
        self.scopes = scopes = [f"g{n:05d}" for n in range(mailboxes)]
        self.broken = broken = set(rng.sample(scopes, max(1, round(mailboxes * BROKEN_SHARE))))
        arrivals = _arrivals(rng, scopes, mails)
        self.day_mails = sum(1 for s in scopes if s not in broken for t in arrivals[s] if t < DAY)

        # Its own random numbers: the all-POP3 day draws exactly what it drew before push existed.
        self.push_rng = random.Random(seed + 1)
        readable = sorted(set(scopes) - broken)
        self.pushed = set(self.push_rng.sample(readable, round(push_share * len(readable))))
        self.pushes = sorted((t, s) for s in self.pushed for t in arrivals[s])
        for scope in self.pushed:
            arrivals[scope] = []  # they never reach a maildrop

        self.store = FakeMailboxRepository()
        self.cipher = ContainerCipher(FakeCipher(), clock)
        self.service = MailboxSettingsService(
            self.store, self.cipher, clock, max_wait=timedelta(minutes=15),
            inbound_domain="example.org",
        )  # fmt: skip
        self.directory = MailboxDirectory(self.service)
        self.leases = FakeLeases()
        self.fleet = Fleet(clock, arrivals, broken)
        self.posts = FakeMailPosts()
        self.ingestor = _ingestor(scopes, self.posts, clock, self.fleet)
        cap = MAX_CONCURRENCY["prod"]["PollMailbox"]
        self.containers = [Container(number) for number in range(cap)]

    def save_settings(self) -> None:
        """Saved during the hour before the day (due 5 minutes after each save)."""
        from chalicelib.schemas.connectors import MailboxSettingsUpdate
        from chalicelib.services.mailboxes import EMAIL_TO_POST

        for scope in self.scopes:
            self.clock.at(-WARM_UP_S + self.rng.random() * WARM_UP_S)
            if scope in self.pushed:
                update = MailboxSettingsUpdate.model_validate({"isEnabled": True})
            else:
                update = MailboxSettingsUpdate.model_validate(
                    {
                        "serverName": "pop.example",
                        "serverPort": 995,
                        "serverUsername": scope,
                        "serverPassword": "right" if scope not in self.broken else "wrong",
                        "isEnabled": True,
                        "isSSL": True,
                        "deleteProcessed": True,
                    }  # fmt: skip
                )
            self.service._save(scope, EMAIL_TO_POST, update, "ann")

    def run(self) -> _Tally:
        """Every dispatch from the hour before the day to the flush after it."""
        from chalicelib.jobs.base import Deadline

        tally = _Tally()
        deadline = Deadline.unbounded()
        tick = -WARM_UP_S + DISPATCH_SECONDS
        next_push = 0
        while tick <= DAY + FLUSH_S:
            next_push = self.receive_pushes(next_push, tick)
            executed = self.dispatch(tick, deadline, tally)
            if 0 <= tick < DAY:
                tally.busiest = max(tally.busiest, executed)
            tick += DISPATCH_SECONDS
        return tally

    def receive_pushes(self, next_push: int, tick: float) -> int:
        """The mail pushed since the last tick, each at its own moment (no poll involved): the
        index of the first push still to come."""
        while next_push < len(self.pushes) and self.pushes[next_push][0] < tick:
            arrived, scope = self.pushes[next_push]
            next_push += 1
            self.clock.at(arrived)
            mailbox = self.store.get(scope)
            assert mailbox is not None
            self.ingestor.receive(mailbox, _mail(scope, arrived), self.clock())
            self.fleet.delays.append(self.push_rng.uniform(*PUSH_SECONDS))
        return next_push

    def dispatch(self, tick: float, deadline: Any, tally: _Tally) -> float:
        """One dispatch and the executions of its messages: their execution-seconds."""
        from chalicelib.jobs.mail_poll import dispatch

        self.clock.at(tick)
        bodies: list[str] = []
        dispatch(source=self.directory, now=self.clock(), send=bodies.extend)
        executed = 0.0
        for body in bodies:
            executed += self.execute(body, tick, deadline, tally)
        return executed

    def execute(self, body: str, tick: float, deadline: Any, tally: _Tally) -> float:
        """One message on the execution `_take` gives it, its mailboxes polled side by side:
        its duration."""
        from chalicelib.jobs.mail_poll import parse_message

        keys, due_by, _ = parse_message(body)
        ready_at = tick + SQS_LATENCY_S
        container = _take(self.containers, ready_at)
        start = max(ready_at, container.free_at)
        if start - container.born > CONTAINER_HOURS * 3600:
            container.kept, container.born = {}, start  # recycled by Lambda
        self.cipher.container = container
        slowest = 0.0
        for key in keys:
            slowest = max(slowest, self.poll(key, start, due_by, deadline, tally))
        duration = slowest + INVOCATION_OVERHEAD_S
        container.free_at = start + duration
        if 0 <= start < DAY:
            tally.executions.append((start, start + duration))
        return duration

    def poll(self, key: Any, start: float, due_by: Any, deadline: Any, tally: _Tally) -> float:
        """One mailbox's poll, through `poll_mailbox`: its POP3 session's seconds."""
        from chalicelib.jobs.mail_poll import MailPoll, poll_mailbox

        session = self.rng.uniform(*SESSION_SECONDS)
        self.clock.at(start)
        self.fleet.session_end = start + session
        before_sessions, before_failed = self.fleet.sessions, self.fleet.failed_logins
        parts = MailPoll(
            self.directory, self.service, self.leases, lambda: self.ingestor, self.clock
        )
        poll_mailbox(key, deadline, parts, due_by=due_by)
        if 0 <= start < DAY:
            tally.polls += self.fleet.sessions - before_sessions
            tally.hourly[int(start // 3600)] += self.fleet.sessions - before_sessions
            tally.failed_logins += self.fleet.failed_logins - before_failed
        return session


def _ingestor(scopes: list[str], posts: Any, clock: Clock, fleet: Fleet) -> Any:
    """The real MailIngestor and planner on the fakes: a public group per scope under the root,
    each with its own member (one person in all 10,000 groups would make every mail's sender
    check read 10,000 memberships), the mailboxes opened on the fleet."""
    from chalicelib.services.mail_in.ingest import MailIngestor
    from chalicelib.services.mail_in.planner import MailPlanner
    from tests.support.fakes import FakeUserRepository
    from tests.support.mail_fakes import (
        FakeCounters,
        FakeMailComments,
        FakeMailGroups,
        FakeMailLog,
        FakeOutbox,
        add_user,
    )

    permissions = {
        "post": ["member", "moderator", "administrator"],
        "comment": ["member", "moderator", "administrator"],
        "commentWithoutApproval": ["member", "moderator", "administrator"],
    }
    root = SimpleNamespace(id="root", slug="root", parent_id=None, access="public",
                           permissions=permissions, name="Home")  # fmt: skip
    groups = [
        SimpleNamespace(
            id=s, slug=s, parent_id="root", access="public", permissions=permissions, name=s
        )  # fmt: skip
        for s in scopes
    ]
    users = FakeUserRepository()
    for scope in scopes:
        add_user(users, scope, {scope: "member"}, email=f"{scope}@members.example")
    log = FakeMailLog()
    return MailIngestor(
        planner=MailPlanner(
            users=users,
            groups=FakeMailGroups(root, *groups),
            posts=posts,
            comments=FakeMailComments(),
            counters=FakeCounters(),
            mail=log,
            clock=clock,
            base_url="https://community.example",
        ),
        mail=log,
        outbox=FakeOutbox(),
        clock=clock,
        open_mailbox=fleet,
        workers=1,
    )


def most_at_once(executions: list[tuple[float, float]]) -> int:
    """The most executions running at the same moment (each from its start to its end; one that
    ends as another starts is not counted twice): Lambda's concurrency at the busiest second."""
    moments = sorted([(start, 1) for start, _ in executions] + [(end, -1) for _, end in executions])
    running = most = 0
    for _, change in moments:  # at the same moment an end (-1) sorts before a start (+1)
        running += change
        most = max(most, running)
    return most


def reference(mailboxes: int) -> dict[str, float]:
    """The fixed 5-minute rhythm: every enabled mailbox, one SQS message each, every dispatch.

    A mail waits for the next dispatch (uniform over 5 minutes) and its session; a wrong
    password fails its message, which SQS delivers again up to 5 times (visibility 30 minutes):
    every dispatch's message fails 5 times, 1,440 logins a day. Each poll decrypts its password.
    """
    low, high = SESSION_SECONDS
    mean_session = (low + high) / 2
    dispatches = DAY // DISPATCH_SECONDS
    broken = max(1, round(mailboxes * BROKEN_SHARE))
    polls = mailboxes * dispatches + broken * dispatches * 4  # the redeliveries
    # Delay = U(0, 300) + U(low, high): quantiles of the sum of two uniforms.
    return {
        "mail_day_polls": float(polls),
        "mail_day_delay_p50_s": DISPATCH_SECONDS / 2 + mean_session,
        "mail_day_delay_p95_s": _uniform_sum_quantile(0.95, DISPATCH_SECONDS, low, high),
        "mail_day_delay_max_s": DISPATCH_SECONDS + high,
        "mail_day_failed_logins_per_broken_mailbox": float(dispatches * 5),
        "mail_day_concurrency": float(
            math.ceil(mailboxes * (mean_session + INVOCATION_OVERHEAD_S) / DISPATCH_SECONDS)
        ),
        # Every mailbox's message released at once: as many executions as the trigger allows.
        "mail_day_concurrency_peak": float(min(mailboxes, _poll_cap())),
        "mail_day_kms_calls": float(polls),
    }


def _poll_cap() -> int:
    from infra.operations import MAX_CONCURRENCY

    return int(MAX_CONCURRENCY["prod"]["PollMailbox"])


def _uniform_sum_quantile(share: float, wait: float, low: float, high: float) -> float:
    """The `share` quantile of U(0, wait) + U(low, high) (wait much longer than high - low)."""
    width = high - low
    tail = 1 - share
    # Above wait + low the density falls linearly: P(X > x) = (wait + high - x)**2 / (2 w width).
    edge = width / (2 * wait)
    if tail <= edge:
        return wait + high - math.sqrt(2 * wait * width * tail)
    return share * wait + low + width / 2  # the flat middle: U(0, wait) shifted by the mean


def run(
    mailboxes: int = 10_000,
    seed: int = 34,
    mails_per_day: float = MAILS_PER_DAY,
    series: dict[str, list[float]] | None = None,
) -> dict[str, float]:
    """The simulated day's figures and the fixed 5-minute reference's, `reference_` before
    each name (`mails_per_day`: a smaller fleet's test keeps each mailbox's traffic; `series`:
    see `simulate`)."""
    with _quiet():
        figures = simulate(mailboxes, seed, mails_per_day, series=series)
    figures.update({f"reference_{k}": v for k, v in reference(mailboxes).items()})
    return figures


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.mail_day", description=__doc__)
    parser.add_argument("--mailboxes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=34)
    args = parser.parse_args()
    print(json.dumps(run(args.mailboxes, args.seed), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
