"""`make simulate`: a simulated day of the scheduled work, at the size docs/benchmarks.md prices.

- The mailbox day (bench/mail_day.py): 10,000 mailboxes polled through the real dispatch,
  scheduling, lease, back-off and poll code, against the fixed 5-minute rhythm.
- The digest day (here): 100,000 digest recipients through the real fan-out (the daily job puts
  them on the queue in batches), the real digest worker (`deliver_batch`: claims, batches, the
  sending clock shared by every sender) on as many workers as the template lets its trigger
  start, the real digest service (items, claims, the digest's text, its signed unsubscribe link),
  the digests table in memory (held to the PynamoDB repository's contract:
  tests/store/test_digest_contract.py), and a fake SES that notes when each mail went and to
  whom. Ten minutes in, a post to 10,000 instant subscribers: the notifications' real fan-out
  (past 25 recipients, chunks on the queue) and the real deliver-notifications worker
  (`deliver_from_queue`: the claim per (user, occurrence), the instant email, its deadline) on
  its trigger's executions. Every execution runs the real blocking code in its thread on one
  simulated clock (bench/sim_time.py), so they meet at the sending clock (store/sending.py's,
  in memory: tests/store/test_slot_clock.py) in the order of their moments. SQS delivers every
  25th message twice.

The figures go into bench/results.json beside their references (`make bench` keeps them); `make
cost` prices the month from them. `python -m bench.simulate --only digest` runs the digest day
alone.

Figures: `digest_100k_s` (the schedule to the last digest), `digest_100k_peak_rate` (the most mails
of the whole stack in any second of the day), `notify_10k_s` (the post to its last instant email),
`notify_10k_peak_rate` (the most mails of the stack in any second of that burst).
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
from types import SimpleNamespace
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
from bench.sim_time import SimulatedTime

DIGEST_RECIPIENTS = 100_000
# A post to this many instant subscribers, this long after the digests began.
INSTANT_RECIPIENTS = 10_000
POST_AT_S = 600.0
# An idle execution polls its queue this often; a failed message is visible again after this.
POLL_S = 1.0
VISIBILITY_S = 300.0
# The digest run starts at the schedule's hour (app.py: 06:00 UTC).
DAY_START = datetime(2026, 3, 2, 6, 0, tzinfo=UTC)
# SQS delivers a message more than once: every this many batches, a second copy.
DUPLICATE_EVERY = 25

DIGEST_FIGURES = [
    ("digest_100k_s", "s"),
    ("digest_100k_peak_rate", "mails/s"),
    ("notify_10k_s", "s"),
    ("notify_10k_peak_rate", "mails/s"),
]
MAIL_DAY_FIGURES = [
    ("mail_day_polls", "polls"),
    ("mail_day_delay_p50_s", "s"),
    ("mail_day_delay_p95_s", "s"),
    ("mail_day_delay_max_s", "s"),
    ("mail_day_failed_logins_per_broken_mailbox", "logins"),
    ("mail_day_concurrency", "executions"),
    ("mail_day_concurrency_peak", "executions"),
    ("mail_day_kms_calls", "calls"),
]


class MailDayMissing(RuntimeError):
    """bench/mail_day.py is not here: its figures are not made up."""


# --- the mailbox day (bench/mail_day.py) ------------------------------------------------------------


def mail_day_figures(seed: int, series: dict[str, Any] | None = None) -> list[Figure]:
    try:
        from bench.mail_day import run  # type: ignore[import-not-found, unused-ignore]
    except ImportError as error:
        raise MailDayMissing(
            f"bench/mail_day.py (the mailbox day) cannot be imported: {error}"
        ) from None
    found: dict[str, float] = run(mailboxes=10_000, seed=seed, series=series)
    return [
        Figure(name, found.get(name), found.get(f"reference_{name}"), unit)
        for name, unit in MAIL_DAY_FIGURES
    ]


# The same day with a share of the groups receiving by push (CONTRACT §13): their connectors
# push only, never polled. Each share's figures beside the all-POP3 day's.
PUSH_SHARES = (0.0, 0.5, 1.0)
PUSH_DAY_BLOCK = ("<!-- push-day:start -->", "<!-- push-day:end -->")


def push_day_figures(
    seed: int, all_pop3: list[Figure], series: dict[str, Any] | None = None
) -> list[Figure]:
    """Polls, the mail-to-post delay (p50, p95) and the month's cost of the 100,000-member
    community (`make cost`'s column, priced with that day's polls and KMS calls) for each share
    of push; the 0% day is the mailbox day already run (`all_pop3`). `series`, when given, gets
    each day's series under its percent (bench/mail_day.py's `simulate`)."""
    from bench.cost import (
        SIZES,
        code_figures,
        infra_counts,
        load_measured,
        load_prices,
        month_total,
        monthly_cost,
    )
    from bench.mail_day import _quiet, simulate

    base = {f.name: f.value for f in all_pop3}
    days: dict[float, dict[str, float]] = {0.0: {k: v for k, v in base.items() if v is not None}}
    for share in PUSH_SHARES[1:]:
        with _quiet():
            kept = None if series is None else series.setdefault(str(round(share * 100)), {})
            days[share] = simulate(10_000, seed, push_share=share, series=kept)
    measured, _ = load_measured()
    prices, infra, code = load_prices(), infra_counts(), code_figures()

    def cost(day: dict[str, float], share: float) -> float:
        figures = {**measured, **{k: day[k] for k in ("mail_day_polls", "mail_day_kms_calls")}}
        return month_total(monthly_cost(SIZES[2], prices, figures, infra, code, push_share=share))

    reference_cost = cost(days[0.0], 0.0)
    figures = []
    for share in PUSH_SHARES:
        day, name = days[share], f"mail_push_day_{round(share * 100)}"
        figures += [
            Figure(f"{name}_polls", day["mail_day_polls"], days[0.0]["mail_day_polls"], "polls"),
            Figure(
                f"{name}_delay_p50_s",
                day["mail_day_delay_p50_s"],
                days[0.0]["mail_day_delay_p50_s"],
                "s",
            ),  # fmt: skip
            Figure(
                f"{name}_delay_p95_s",
                day["mail_day_delay_p95_s"],
                days[0.0]["mail_day_delay_p95_s"],
                "s",
            ),  # fmt: skip
            Figure(
                f"{name}_cost_usd",
                round(cost(day, share), 2),
                round(reference_cost, 2),
                "USD/month",
            ),  # fmt: skip
        ]
    return figures


def push_day_table(figures: list[Figure]) -> str:
    """docs/benchmarks.md's table of the push days."""
    value = {f.name: f.value for f in figures}
    lines = [
        "| groups receiving by push | polls a day | delay p50 | delay p95 | a month, 100,000 members |",
        "|---:|---:|---:|---:|---:|",
    ]
    for share in PUSH_SHARES:
        name = f"mail_push_day_{round(share * 100)}"
        lines.append(
            f"| {round(share * 100)}% | {value[name + '_polls']:,.0f} "
            f"| {value[name + '_delay_p50_s']:,.1f} s | {value[name + '_delay_p95_s']:,.1f} s "
            f"| ${value[name + '_cost_usd']:,.2f} |"
        )
    return "\n".join(lines)


# --- the digest day ---------------------------------------------------------------------------------


class FakeSes:
    """SES where the digest and notification services hand their letters over (the Mailer port
    OutgoingMail fills): notes each mail's moment (on the simulated clock) and its recipient. The MIME message
    is not built: 100,000 of them would take most of the simulation's 10 minutes, and building
    one is no part of the fan-out (`make bench` and the mail tests cover it)."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, str]] = []
        self.clock: SimulatedTime | None = None

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


def _members(count: int, user_id: str, mailbox: str, alias: str) -> tuple[ReadOnly, list[str]]:
    """`count` users of no group (ids `user_id` formatted with their number, mail to
    `mailbox<number>@example.org`, aliases `alias <number>`), and their emails in order."""
    from tests.support import fakes

    users = ReadOnly({})
    emails = []
    for number in range(count):
        email = f"{mailbox}{number}@example.org"
        emails.append(email)
        users.records[user_id.format(number)] = fakes.user(
            id=user_id.format(number), email=email, alias=f"{alias} {number}"
        )
    return users, emails


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
    users, emails = _members(recipients, "user-{:06d}", "member", "Member")
    digests = FakeDigestRepository()
    for number, user_id in enumerate(users.records):
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


class SimQueue:
    """An SQS queue on the simulated clock: `send` is QueueSender's; a message taken is gone
    unless its handler fails (then it is visible again after the visibility timeout); every
    DUPLICATE_EVERY-th is delivered twice (at least once)."""

    def __init__(self, sim: SimulatedTime) -> None:
        self.sim = sim
        self.waiting: list[Message] = []
        self.numbers = itertools.count()
        self.taken = 0
        self.busy = 0  # executions handling a message (they may send more)

    def send(self, bodies: list[str]) -> None:
        for body in bodies:
            heapq.heappush(self.waiting, Message(self.sim.now, next(self.numbers), body))

    def take(self) -> str | None:
        if not self.waiting or self.waiting[0].visible_at > self.sim.now:
            return None
        message = heapq.heappop(self.waiting)
        self.taken += 1
        if self.taken % DUPLICATE_EVERY == 0:
            self.send([message.body])
        return message.body


def worker(sim: SimulatedTime, queue: SimQueue, handle: Any, timeout: int) -> None:
    """One execution of an SQS-triggered function: takes messages while there are any (polling
    an empty queue while another execution may still put some back), each under its deadline."""
    from chalicelib.jobs.base import Deadline

    while True:
        body = queue.take()
        if body is None:
            if not queue.waiting and not queue.busy:
                return
            sim.sleep(POLL_S)
            continue
        queue.busy += 1
        started = sim.now
        deadline = Deadline(lambda s=started: int((s + timeout - sim.now) * 1000))
        try:
            handle(body, deadline)
        except Exception:
            # Failed: visible again after the visibility timeout, as SQS does.
            heapq.heappush(
                queue.waiting, Message(sim.now + VISIBILITY_S, next(queue.numbers), body)
            )
        finally:
            queue.busy -= 1


@dataclass
class InstantWorld:
    parts: dict[str, Any]
    event: Any
    emails: list[str]


class Subscribers:
    """The subscriptions index as the notifications read it: `fans` follow the group's new
    posts by instant email."""

    def __init__(self, fans: list[str]) -> None:
        from chalicelib.store.notifications import sort_key

        self.views = [
            SimpleNamespace(
                user_id=fan,
                email_alert_id=1,
                show_screen_alert=False,
                show_red_label=False,
                sort_key=sort_key("group", "garden", 1, "garden"),
            )
            for fan in fans
        ]

    def subscribers(self, kind: str, target_id: str, notification_id: int) -> list[Any]:
        wanted = (kind, target_id, notification_id) == ("group", "garden", 1)
        return self.views if wanted else []


def instant_world(world: DigestWorld, fans: int) -> InstantWorld:
    """`fans` other members who take the garden's new posts by instant email; the post is one
    of the garden's (its author is not a member any more: "Someone")."""
    from chalicelib.domain.announcements import PostCreated
    from tests.support.digest_fakes import FakeDigestRepository

    users, emails = _members(fans, "fan-{:05d}", "fan", "Fan")
    parts = {
        **{name: world.service_parts[name] for name in ("groups", "posts", "comments", "mail")},
        "identities": world.service_parts["identities"],
        "notifications": Subscribers(sorted(users.records)),
        "users": users,
        "alerts": None,  # nobody asked for screen alerts
        "digests": FakeDigestRepository(),  # the claims per (user, occurrence)
    }
    return InstantWorld(parts, PostCreated("post-0", "garden", "author"), emails)


def send_day(
    recipients: int = DIGEST_RECIPIENTS,
    fans: int = INSTANT_RECIPIENTS,
    post_at: float = POST_AT_S,
    series: dict[str, Any] | None = None,
) -> dict[str, float]:
    """The day's digests to `recipients` members through the fan-out and, `post_at` seconds
    into it, a post told to `fans` instant subscribers through the notifications' fan-out,
    every sender on the one sending clock. Answers when the last digest and the last instant
    mail went (the latter from the post), the most mails of the stack in any second, and in any
    second of the burst; checks that everyone got exactly one of each. `series`, when given,
    gets the mails sent in each whole second of the run (`digest_per_s`, `instant_per_s`), the
    rate and the post's moment (for bench/pictures.py)."""
    from bench.report import REPO_ROOT
    from chalicelib.domain.announcements import Recorded
    from chalicelib.jobs import digests as digest_job
    from chalicelib.jobs import notify as notify_job
    from chalicelib.jobs.base import Deadline
    from chalicelib.mail.outgoing import SENDERS, PacedMail, SendingRate
    from chalicelib.services.notify.delivery import NotifyService
    from chalicelib.services.notify.digests import DigestService
    from chalicelib.settings import get_settings
    from tests.support.digest_fakes import FakeSlotClock

    sim = SimulatedTime()
    world = digest_world(recipients)
    instant = instant_world(world, fans)
    world.ses.clock = sim
    slots = FakeSlotClock()
    rate = get_settings().mail_send_rate
    digest_queue, notify_queue = SimQueue(sim), SimQueue(sim)

    def moment() -> datetime:
        return DAY_START + timedelta(seconds=sim.now)

    def pacer(function: str, deadline: Deadline) -> SendingRate:
        return SendingRate(
            rate, slots, instant=SENDERS[function].instant, clock=sim, sleep=sim.sleep,
            expired=deadline.expired,
        )  # fmt: skip

    # Each job's service is built as the job builds it: its mail paced at the job's place.
    def deliver_digests(body: str, deadline: Deadline) -> None:
        paced = PacedMail(world.service_parts["mail"], pacer(digest_job.WORKER, deadline))
        parts = {**world.service_parts, "mail": paced}
        service = DigestService(**parts, clock=moment)
        digest_job.deliver_batch(body, deadline, service=service, queue=digest_queue, threads=1)

    def deliver_notifications(body: str, deadline: Deadline) -> None:
        rate = pacer(notify_job.WORKER, deadline)
        parts = {**instant.parts, "mail": PacedMail(instant.parts["mail"], rate)}
        service = NotifyService(**parts, fanout=notify_queue, clock=moment)
        notify_job.deliver_from_queue(
            [body], service=service, deadline=deadline, pacer=rate, requeue=notify_queue
        )

    def start(function: str, queue: SimQueue, handle: Any) -> None:
        timeout = _function_timeout(REPO_ROOT, function)
        for _ in range(SENDERS[function].workers or 1):
            sim.start(sim.now, lambda: worker(sim, queue, handle, timeout))

    def schedule() -> None:
        # The daily schedule: everyone onto the queue; the trigger starts its executions.
        service = DigestService(**world.service_parts, clock=moment)
        digest_job.enqueue_daily_digests(Deadline.unbounded(), service=service, queue=digest_queue)
        start(digest_job.WORKER, digest_queue, deliver_digests)

    def post() -> None:
        # The outbox drain tells the notifications of the post: past 25 recipients, a fan-out.
        NotifyService(**instant.parts, fanout=notify_queue, clock=moment)(
            Recorded("event-post-0", instant.event)
        )
        start(notify_job.WORKER, notify_queue, deliver_notifications)

    sim.start(0.0, schedule)
    sim.start(post_at, post)
    sim.run()

    fan_emails = set(instant.emails)
    digest_times = sorted(at for at, to in world.ses.sent if to not in fan_emails)
    instant_times = sorted(at for at, to in world.ses.sent if to in fan_emails)
    everything = sorted(at for at, _ in world.ses.sent)
    _each_once(world.ses.sent, world.emails, "digest")
    _each_once(world.ses.sent, instant.emails, "instant email")
    burst_end = instant_times[-1] if instant_times else post_at
    if series is not None:
        series.update(
            rate=rate,
            post_at_s=post_at,
            digest_per_s=per_second(digest_times, everything),
            instant_per_s=per_second(instant_times, everything),
        )
    return {
        "sent": float(len(digest_times)),
        "seconds": digest_times[-1] if digest_times else 0.0,
        "peak_rate": float(most_in_any_second(everything)),
        "batches": float(digest_queue.taken),
        "instant_sent": float(len(instant_times)),
        "instant_seconds": burst_end - post_at,
        "instant_peak_rate": float(
            most_in_any_second([at for at in everything if post_at <= at <= burst_end])
        ),
    }


def _each_once(sent: list[tuple[float, str]], emails: list[str], what: str) -> None:
    wanted = set(emails)
    per_recipient = Counter(to for _, to in sent if to in wanted)
    wrong = [email for email in emails if per_recipient[email] != 1]
    if wrong:
        raise RuntimeError(
            f"{len(wrong)} recipient(s) did not get exactly one {what} (e.g. {wrong[:3]})"
        )


def _function_timeout(root: Any, function: str) -> int:
    import json

    config = json.loads((root / ".chalice" / "config.json").read_text())
    per_function = config.get("lambda_functions", {}).get(function, {})
    return int(per_function.get("lambda_timeout", config.get("lambda_timeout", 60)))


def per_second(moments: list[float], span: list[float]) -> list[int]:
    """How many of `moments` fall in each whole second [n, n + 1) from 0 to the last of `span`."""
    counts = [0] * (int(span[-1]) + 1 if span else 0)
    for moment in moments:
        counts[int(moment)] += 1
    return counts


def most_in_any_second(moments: list[float]) -> int:
    """The most moments in any window [t, t + 1 s) (sliding, not only whole seconds)."""
    most, first = 0, 0
    for last, moment in enumerate(moments):
        while moment - moments[first] >= 1.0:
            first += 1
        most = max(most, last - first + 1)
    return most


def digest_figures(
    recipients: int = DIGEST_RECIPIENTS,
    fans: int = INSTANT_RECIPIENTS,
    series: dict[str, Any] | None = None,
) -> list[Figure]:
    """The day of digests and an instant burst against what SES's rate allows at best: everyone
    at exactly the rate (the digests' reference is theirs alone; the burst comes out of it)."""
    from chalicelib.settings import get_settings

    rate = get_settings().mail_send_rate
    found = send_day(recipients, fans, series=series)
    print(
        f"simulate: {found['sent']:,.0f} digests in {found['batches']:,.0f} batch deliveries and "
        f"{found['instant_sent']:,.0f} instant emails, each recipient once",
        file=sys.stderr,
    )
    return [
        Figure("digest_100k_s", found["seconds"], recipients / rate, "s"),
        Figure("digest_100k_peak_rate", found["peak_rate"], rate, "mails/s"),
        Figure("notify_10k_s", found["instant_seconds"], fans / rate, "s"),
        Figure("notify_10k_peak_rate", found["instant_peak_rate"], rate, "mails/s"),
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
    # The series the figures come from, for the pictures (bench/pictures.py).
    series: dict[str, Any] = {"mail_days": {}}
    try:
        if arguments.only in (None, "mail"):
            day = mail_day_figures(arguments.seed, series["mail_days"].setdefault("0", {}))
            pushed = push_day_figures(arguments.seed, day, series["mail_days"])
            figures += day + pushed
    except MailDayMissing as error:
        print(f"make simulate: {error}", file=sys.stderr)
        return 1
    if arguments.only in (None, "digest"):
        figures += digest_figures(series=series.setdefault("sends", {}))
    print(text_table(figures))
    print(f"\n{time.monotonic() - started:.0f}s in all")
    merge_results(figures, date.today(), machine_description())
    if arguments.only in (None, "mail"):
        from bench.report import PAGE, write_section

        write_section(PAGE, *PUSH_DAY_BLOCK, push_day_table(pushed))
    print("wrote bench/results.json (then `make cost` prices the month from it)")
    from bench import pictures

    for path in pictures.publish(series):
        print(f"wrote {path.relative_to(pictures.REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
