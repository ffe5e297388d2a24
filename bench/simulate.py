"""`make simulate`: a simulated day of the scheduled work, at the size docs/benchmarks.md prices.

- The mailbox day (bench/mail_day.py): 10,000 mailboxes polled through the real dispatch,
  scheduling, lease, back-off and poll code, against the fixed 5-minute rhythm.
- The digest day (here): 100,000 digest recipients through the real fan-out (the daily job puts
  them on the queue in batches), the real digest worker (`deliver_batch`: claims, batches, the
  pacer at its share of AGORA_MAIL_SEND_RATE) on as many workers as the template lets its trigger
  start, the real digest service (items, claims, the digest's text, its signed unsubscribe link),
  the digests table in memory (held to the PynamoDB repository's contract:
  tests/store/test_digest_contract.py), a fake clock per worker and a fake SES that notes when
  each mail went and to whom. SQS delivers every 25th batch twice.

The figures go into bench/results.json beside their references (`make bench` keeps them); `make
cost` prices the month from them. `python -m bench.simulate --only digest` runs the digest day
alone.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

# The tests' environment (the token secret that signs unsubscribe links, the settings): the
# simulated code runs as the tests run it.
import tests.conftest  # noqa: F401
from bench.report import (
    Figure,
    agora_logs_to_file,
    machine_description,
    merge_results,
    text_table,
)

DIGEST_RECIPIENTS = 100_000
# The digest run starts at the schedule's hour (app.py: 06:00 UTC).
DAY_START = datetime(2026, 3, 2, 6, 0, tzinfo=UTC)
# SQS delivers a message more than once: every this many batches, a second copy.
DUPLICATE_EVERY = 25

DIGEST_FIGURES = [("digest_100k_s", "s"), ("digest_100k_peak_rate", "mails/s")]
MAIL_DAY_FIGURES = [
    ("mail_day_polls", "polls"),
    ("mail_day_delay_p50_s", "s"),
    ("mail_day_delay_p95_s", "s"),
    ("mail_day_delay_max_s", "s"),
    ("mail_day_failed_logins_per_broken_mailbox", "logins"),
    ("mail_day_concurrency", "executions"),
    ("mail_day_kms_calls", "calls"),
]


class MailDayMissing(RuntimeError):
    """bench/mail_day.py is not here: its figures are not made up."""


# --- the mailbox day (bench/mail_day.py) ------------------------------------------------------------


def mail_day_figures(seed: int) -> list[Figure]:
    try:
        from bench.mail_day import run  # type: ignore[import-not-found, unused-ignore]
    except ImportError as error:
        raise MailDayMissing(
            f"bench/mail_day.py (the mailbox day) cannot be imported: {error}"
        ) from None
    found: dict[str, float] = run(mailboxes=10_000, seed=seed)
    return [
        Figure(name, found.get(name), found.get(f"reference_{name}"), unit)
        for name, unit in MAIL_DAY_FIGURES
    ]


# --- the digest day ---------------------------------------------------------------------------------


class WorkerClock:
    """One execution's time, in seconds since the run began: it passes only when the code sleeps
    (the pacer) or the simulation moves it on (waiting for a message)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)


class FakeSes:
    """SES where the digest service hands its letters over (the Mailer port OutgoingMail fills):
    notes each mail's moment (on the sending worker's clock) and its recipient. The MIME message
    is not built: 100,000 of them would take most of the simulation's 10 minutes, and building
    one is no part of the fan-out (`make bench` and the mail tests cover it)."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, str]] = []
        self.clock: WorkerClock | None = None

    def is_suppressed(self, address: str) -> bool:
        return False

    def send(self, group: Any, letter: Any) -> str:
        assert self.clock is not None and letter.unsubscribe_url
        self.sent.append((self.clock.now, letter.to[1]))
        return f"fake-{len(self.sent)}"


@dataclass(order=True)
class Message:
    visible_at: float
    number: int
    body: str = field(compare=False)


class FakeQueue:
    """The digest queue: messages become visible at a moment; `send` is QueueSender's."""

    def __init__(self) -> None:
        self.waiting: list[Message] = []
        self.numbers = itertools.count()
        self.now = 0.0

    def send(self, bodies: list[str]) -> None:
        for body in bodies:
            heapq.heappush(self.waiting, Message(self.now, next(self.numbers), body))


class ReadOnly:
    """Members or posts as the digest service reads them (`get`, `get_many`), without the
    contract fakes' copy per read: nothing here changes them, and 100,000 digests' copies would
    be half of the simulation's time."""

    def __init__(self, records: dict[str, Any]) -> None:
        self.records = records

    def get(self, record_id: str) -> Any:
        return self.records.get(record_id)

    def get_many(self, record_ids: set[str]) -> dict[str, Any]:
        return {i: self.records[i] for i in record_ids if i in self.records}


@dataclass
class DigestWorld:
    service_parts: dict[str, Any]
    ses: FakeSes
    emails: list[str]


def digest_world(recipients: int) -> DigestWorld:
    """A community of `recipients` members, each with one to three items queued overnight."""
    from tests.support import fakes
    from tests.support.digest_fakes import FakeDigestRepository
    from tests.support.mail_fakes import NamedIdentities

    root = fakes.group("home", name="Home")
    garden = fakes.group("garden", parent_id="home", name="Garden Club")
    groups = fakes.FakeGroupRepository(root, garden)
    from chalicelib.store.posts import PostRecord

    night = DAY_START - timedelta(hours=8)
    posts = ReadOnly(
        {
            f"post-{n}": PostRecord(
                id=f"post-{n}",
                group_id="garden",
                title=f"Post {n}",
                slug=f"post-{n}",
                content=f"<p>Post number {n}</p>",
                author_id="author",
                created_on=night,
            )
            for n in range(50)
        }
    )
    users = ReadOnly({})
    digests = FakeDigestRepository()
    emails = []
    for number in range(recipients):
        user_id = f"user-{number:06d}"
        email = f"member{number}@example.org"
        emails.append(email)
        users.records[user_id] = fakes.FakeRecord(
            id=user_id, email=email, alias=f"Member {number}", memberships={}
        )
        for item in range(1 + number % 3):
            post = (number + item) % 50
            digests.queue(
                user_id,
                f"post-{post}",
                {
                    "kind": "newPost",
                    "groupId": "garden",
                    "groupName": "Garden Club",
                    "postId": f"post-{post}",
                    "commentId": None,
                    "title": f"Post {post}",
                    "url": f"https://community.example/garden/post-{post}",
                    "author": "Ann",
                    "occurredOn": (night + timedelta(minutes=post)).isoformat(),
                    "reason": "All new group posts",
                },
                night + timedelta(minutes=post, seconds=item),
            )
    ses = FakeSes()
    parts = {
        "digests": digests,
        "notifications": fakes.FakeNotificationRepository(),
        "users": users,
        "groups": groups,
        "posts": posts,
        "comments": fakes.FakeCommentRepository(),
        "mail": ses,
        "identities": NamedIdentities(),
    }
    return DigestWorld(parts, ses, emails)


def digest_day(recipients: int = DIGEST_RECIPIENTS) -> dict[str, float]:
    """Send the day's digests to `recipients` members through the fan-out; answers how long it
    took (seconds from the schedule to the last mail), the most mails in any second, and checks
    that everyone got exactly one."""
    from bench.report import REPO_ROOT
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.digests import WORKER, deliver_batch, enqueue_daily_digests
    from chalicelib.jobs.pacing import SENDERS, Pacer, configured_rate, per_worker_rate
    from chalicelib.services.digests import DigestService

    world = digest_world(recipients)
    timeout = _function_timeout(REPO_ROOT, WORKER)

    def service(clock: WorkerClock) -> DigestService:
        return DigestService(
            **world.service_parts, clock=lambda: DAY_START + timedelta(seconds=clock.now)
        )

    # The schedule: everyone onto the queue, at the start of the run.
    queue = FakeQueue()
    scheduler = WorkerClock()
    enqueue_daily_digests(Deadline.unbounded(), service=service(scheduler), queue=queue)

    workers = [WorkerClock() for _ in range(SENDERS[WORKER].workers)]
    rate = per_worker_rate(WORKER, configured_rate())
    pacers = [Pacer(rate, clock=clock, sleep=clock.sleep) for clock in workers]
    delivered = 0
    while queue.waiting:
        # The execution free first takes the next message (waiting for it if need be).
        index = min(range(len(workers)), key=lambda i: workers[i].now)
        clock = workers[index]
        message = heapq.heappop(queue.waiting)
        clock.now = max(clock.now, message.visible_at)
        delivered += 1
        if delivered % DUPLICATE_EVERY == 0:
            # At least once: the same message again, to whichever execution is free next.
            heapq.heappush(queue.waiting, Message(clock.now, next(queue.numbers), message.body))
        started = clock.now
        deadline = Deadline(lambda c=clock, s=started: int((s + timeout - c.now) * 1000))
        world.ses.clock = clock
        queue.now = clock.now
        deliver_batch(
            message.body, deadline, service=service(clock), pacer=pacers[index], queue=queue
        )
    times = sorted(moment for moment, _ in world.ses.sent)
    per_recipient = Counter(to for _, to in world.ses.sent)
    wrong = [email for email in world.emails if per_recipient[email] != 1]
    if wrong or len(per_recipient) != recipients:
        raise RuntimeError(
            f"{len(wrong)} recipient(s) did not get exactly one digest (e.g. {wrong[:3]})"
        )
    return {
        "sent": float(len(times)),
        "seconds": times[-1] if times else 0.0,
        "peak_rate": float(most_in_any_second(times)),
        "batches": float(delivered),
    }


def _function_timeout(root: Any, function: str) -> int:
    import json

    config = json.loads((root / ".chalice" / "config.json").read_text())
    per_function = config.get("lambda_functions", {}).get(function, {})
    return int(per_function.get("lambda_timeout", config.get("lambda_timeout", 60)))


def most_in_any_second(moments: list[float]) -> int:
    """The most moments in any window [t, t + 1 s) (sliding, not only whole seconds)."""
    most, first = 0, 0
    for last, moment in enumerate(moments):
        while moment - moments[first] >= 1.0:
            first += 1
        most = max(most, last - first + 1)
    return most


def digest_figures(recipients: int = DIGEST_RECIPIENTS) -> list[Figure]:
    """The digest day against what SES's rate allows at best: everyone at exactly the rate."""
    from chalicelib.jobs.pacing import configured_rate

    rate = configured_rate()
    found = digest_day(recipients)
    print(
        f"simulate: {found['sent']:,.0f} digests in {found['batches']:,.0f} batch deliveries, "
        f"each recipient once",
        file=sys.stderr,
    )
    return [
        Figure("digest_100k_s", found["seconds"], recipients / rate, "s"),
        Figure("digest_100k_peak_rate", found["peak_rate"], rate, "mails/s"),
    ]


# --- the command ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.simulate", description=__doc__)
    parser.add_argument("--only", choices=["mail", "digest"], help="run one of the two days")
    parser.add_argument("--seed", type=int, default=33, help="the mailbox day's random seed")
    arguments = parser.parse_args(argv)
    agora_logs_to_file("simulate.log")
    started = time.monotonic()
    figures: list[Figure] = []
    try:
        if arguments.only in (None, "mail"):
            figures += mail_day_figures(arguments.seed)
    except MailDayMissing as error:
        print(f"make simulate: {error}", file=sys.stderr)
        return 1
    if arguments.only in (None, "digest"):
        figures += digest_figures()
    print(text_table(figures))
    print(f"\n{time.monotonic() - started:.0f}s in all")
    merge_results(figures, date.today(), machine_description())
    print("wrote bench/results.json (then `make cost` prices the month from it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
