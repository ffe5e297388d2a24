"""Mail-in at scale: the 5-minute dispatch over 10,000 mailboxes, and leases under a race.

Dispatch (`chalicelib.jobs.mail_poll.dispatch`, in-process moto): 10,000 enabled email-to-post
mailboxes, all due at once (its busiest run), and 1,000 disabled ones, written 25 to a
BatchWriteItem. Dispatch finds the due ones through the sharded `due-mailboxes` index and sends
them ten to an SQS message, ten messages to a SendMessageBatch (counted as SQS acknowledges them;
the reference: one message per mailbox, as before). Its references: the time of sending the same 10,000 bodies alone (the SQS
floor); the DynamoDB requests of a Scan of the mailboxes table (the job without the index, in the same
1 MB pages); one
SQS message per enabled mailbox.

Lease race (`poll_mailbox` with the real `acquire_lease`/`release_lease` of store/mail.py, against
the embedded moto server of `make run`, so the 50 threads race through HTTP as Lambda containers
would): 200 mailboxes, each dispatched DELIVERIES times (overlapping schedules, redelivered
messages), 50 pollers. One poller is killed mid-poll: its thread stops inside the poll and never
releases its lease (a Lambda container that died), and its message comes back (SQS redelivers what
a dead function did not finish) every REDELIVERY_SECONDS until someone polls the mailbox. The
lease is LEASE_SECONDS through `MailPoll(lease_for=…)` (production keeps
`mail_poll.LEASE`, 5 minutes): the takeover time's reference is that lease.
"""

from __future__ import annotations

import json
import logging
import queue
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.report import Figure, skipped
from bench.world import in_process_aws
from tests.fixtures import counting_dynamodb

DISPATCHED, DISABLED = 10_000, 1_000
# When the bench's dispatch runs: not a minute at which it also counts the whole fleet.
DISPATCHED_AT = datetime(2026, 11, 26, 8, 7, tzinfo=UTC)
RACE_MAILBOXES, RACE_POLLERS, DELIVERIES = 200, 50, 3
LEASE_SECONDS = 2.0
REDELIVERY_SECONDS = 0.1
# A poll's fake work: long enough for duplicate deliveries to meet on one mailbox.
POLL_WORK_SECONDS = 0.02
# The poll (counted from the first) whose poller dies in it: well inside the run.
KILLED_POLL = 60

DISPATCH_NAMES = [
    ("mail_dispatch_10k_s", "s"),
    ("mail_dispatch_10k_ddb_requests", "requests"),
    ("mail_dispatch_10k_sqs_messages", "messages"),
]
RACE_NAMES = [
    ("lease_race_polled_twice_at_once", "polls"),
    ("lease_race_skipped", "mailboxes"),
    ("lease_race_takeover_s", "s"),
]


def mailbox_figures() -> list[Figure]:
    return dispatch_figures() + lease_race_figures()


# --- dispatch ------------------------------------------------------------------------------------


def write_mailboxes(enabled: int, disabled: int) -> list[str]:
    """Email-to-post mailboxes of as many groups, 25 to a BatchWriteItem; the enabled scopes."""
    from chalicelib.services.mailboxes import EMAIL_TO_POST
    from chalicelib.store.mailboxes import MailboxRecord, due_index_values

    scopes = [str(uuid.uuid4()) for _ in range(enabled + disabled)]
    due = DISPATCHED_AT - timedelta(minutes=1)
    with MailboxRecord.batch_write() as batch:
        for index, scope in enumerate(scopes):
            is_enabled = index < enabled
            # Every enabled mailbox due at once: the dispatch's busiest run.
            rhythm = due_index_values(scope, due) if is_enabled else {}
            batch.save(
                MailboxRecord(
                    scope,
                    kind=EMAIL_TO_POST,
                    server_name="pop.example.org",
                    server_port=995,
                    server_username=f"group-{index}",
                    password=b"kms ciphertext of about this size, 64 bytes or so.............",
                    is_enabled=is_enabled,
                    enabled_kind=EMAIL_TO_POST if is_enabled else None,
                    next_poll_on=due if is_enabled else None,
                    **rhythm,
                )
            )
    return scopes[:enabled]


def dispatch_figures(enabled: int = DISPATCHED, disabled: int = DISABLED) -> list[Figure]:
    from chalicelib.aws import client as aws_client
    from chalicelib.aws import send_batches
    from chalicelib.jobs.mail_poll import dispatch
    from chalicelib.settings import get_settings
    from chalicelib.store.mailboxes import MailboxRecord

    queue_name = get_settings().mailbox_queue
    with in_process_aws():
        write_mailboxes(enabled, disabled)
        sqs = aws_client("sqs")
        with acknowledged_messages(sqs, queue_name) as acknowledged:
            sqs.get_queue_url(QueueName=queue_name)  # the client's connection, made once
            with counting_dynamodb() as counter:
                started = time.perf_counter()
                sent = dispatch(now=DISPATCHED_AT)
                seconds = time.perf_counter() - started
                requests, operations = counter.total, set(counter.requests)
                messages = sum(acknowledged)
            # PynamoDB's Meta is declared on the model class, unseen by the type checker.
            scanned, scan_requests = scan_pages(MailboxRecord.Meta.table_name)  # type: ignore[attr-defined]
            bodies = [json.dumps({"mailbox": f"post#{uuid.uuid4()}"}) for _ in range(enabled)]
            started = time.perf_counter()
            send_batches(queue_name, bodies, "bench message(s)")
            floor_seconds = time.perf_counter() - started
    notes = []
    if sent != enabled:
        notes.append(f"dispatch sent {sent} of {enabled}")
    if "Scan" in operations:
        notes.append("made a Scan")
    note = "; ".join(notes) or None
    return [
        Figure("mail_dispatch_10k_s", seconds, floor_seconds, "s", note),
        Figure(
            "mail_dispatch_10k_ddb_requests",
            requests,
            scan_requests,
            "requests",
            note or f"the Scan read {scanned} items",
        ),
        Figure("mail_dispatch_10k_sqs_messages", messages, enabled, "messages", note),
    ]


def scan_pages(table: str) -> tuple[int, int]:
    """(items, requests) of a Scan of the whole table, the job without the sparse index: it
    reads the same 1 MB pages as a full Scan, counting instead of returning the items (moto takes
    as long to serialise an item as the rest of the bench takes to read it)."""
    from chalicelib.aws import client as aws_client

    dynamodb = aws_client("dynamodb")
    items = requests = 0
    start: dict[str, Any] | None = None
    while True:
        page = dynamodb.scan(
            TableName=table, Select="COUNT", **({"ExclusiveStartKey": start} if start else {})
        )
        items, requests = items + page["ScannedCount"], requests + 1
        start = page.get("LastEvaluatedKey")
        if not start:
            return items, requests


@contextmanager
def acknowledged_messages(sqs: Any, queue_name: str) -> Iterator[list[int]]:
    """The messages SQS acknowledged, one count per SendMessageBatch.

    moto's SendMessage reads every message already queued (its queue attributes count them), so
    a queue of 10,000 costs it quadratic time that SQS does not have: after counting a batch the
    bench empties moto's copy of the queue, which no figure reads.
    """
    from moto.sqs.models import sqs_backends

    counts: list[int] = []

    def on_send(parsed: dict[str, Any], **_: Any) -> None:
        counts.append(len(parsed.get("Successful", [])))
        for regions in sqs_backends.values():
            for backend in regions.values():
                queue = backend.queues.get(queue_name)
                if queue is not None:
                    queue._messages.clear()

    event = "after-call.sqs.SendMessageBatch"
    sqs.meta.events.register(event, on_send)
    try:
        yield counts
    finally:
        sqs.meta.events.unregister(event, on_send)


# --- lease race ----------------------------------------------------------------------------------


class PollerKilled(BaseException):
    """Ends the killed poller's thread after the race (a BaseException: poll_mailbox's `except
    Exception` does not log it as a failed poll). Its `finally` still asks to release the lease,
    which by then is another owner's or gone: the conditional delete changes nothing."""


@dataclass
class RaceLog:
    """Who polls what, as the fake ingestor sees it (one lock: the figures are exact)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    active: Counter[str] = field(default_factory=Counter)
    polls: Counter[str] = field(default_factory=Counter)
    overlaps: int = 0
    refused: int = 0  # polls that found the lease held: the race happened
    started: int = 0
    killed_key: str | None = None
    killed_at: float | None = None
    taken_over_at: float | None = None
    wake_the_killed: threading.Event = field(default_factory=threading.Event)


class RaceSource:
    """The mailbox directory of the race: every key is an enabled mailbox (no DynamoDB)."""

    def mailbox(self, key: str) -> Any:
        from chalicelib.services.mailboxes import EMAIL_TO_POST, Mailbox, scope_of_key

        return Mailbox(
            scope=str(scope_of_key(key)),
            kind=EMAIL_TO_POST,
            server_name="pop.example.org",
            server_port=995,
            server_username=key,
            has_password=True,
            password="secret",
        )

    def record_last_processed(self, key: str, when: Any) -> None:
        pass

    def record_poll(self, mailbox: Any, when: Any, **_: Any) -> Any:
        return mailbox.poll_state


class RaceIngestor:
    """Stands in for POP3: notes the poll, works a little; the KILLED_POLL-th poll never returns
    (its thread is stopped: it holds its lease and polls nothing any more)."""

    def __init__(self, log: RaceLog) -> None:
        self.log = log

    def poll(self, mailbox: Any, should_stop: Any) -> Any:
        from chalicelib.services.mail_in.ingest import PollResult

        key = mailbox.key
        with self.log.lock:
            self.log.started += 1
            if self.log.active[key]:
                self.log.overlaps += 1
            self.log.active[key] += 1
            self.log.polls[key] += 1
            if key == self.log.killed_key and self.log.taken_over_at is None:
                self.log.taken_over_at = time.monotonic()
            dies = self.log.killed_key is None and self.log.started == KILLED_POLL
            if dies:
                self.log.killed_key, self.log.killed_at = key, time.monotonic()
                # Dead from here on: it polls nothing, so it is no longer "at" the mailbox.
                self.log.active[key] -= 1
                self.log.polls[key] -= 1
        if dies:
            self.log.wake_the_killed.wait()
            raise PollerKilled
        time.sleep(POLL_WORK_SECONDS)
        with self.log.lock:
            self.log.active[key] -= 1
        return PollResult(mailbox=key, seen=1)


def lease_race_figures(
    mailboxes: int = RACE_MAILBOXES,
    pollers: int = RACE_POLLERS,
    lease_seconds: float = LEASE_SECONDS,
) -> list[Figure]:
    try:
        from tests.fixtures import embedded_moto_server
    except ImportError as error:
        return skipped(RACE_NAMES, f"no embedded moto server: {error}")
    # The server's access log (one line a request) is not the bench's to print.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with embedded_moto_server():
        log = race(mailboxes, pollers, lease_seconds)
    takeover = (
        log.taken_over_at - log.killed_at
        if log.taken_over_at is not None and log.killed_at is not None
        else None
    )
    never_polled = sum(1 for index in range(mailboxes) if not log.polls[race_key(index)])
    note = None if takeover is not None else "the killed poller's mailbox was never taken over"
    return [
        Figure(
            "lease_race_polled_twice_at_once",
            log.overlaps,
            0,
            "polls",
            f"{sum(log.polls.values())} polls; {log.refused} found the lease held",
        ),
        Figure("lease_race_skipped", never_polled, 0, "mailboxes"),
        Figure("lease_race_takeover_s", takeover, lease_seconds, "s", note),
    ]


def race_key(index: int) -> str:
    return f"post#race-{index:04d}"


def race(mailboxes: int, pollers: int, lease_seconds: float) -> RaceLog:
    """Every mailbox dispatched DELIVERIES times in a shuffled queue; `pollers` threads take
    messages and poll. A message whose poller died comes back until its mailbox is polled."""
    from chalicelib import deps
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.mail_poll import MailPoll, poll_mailbox

    deps.mail().prepare()  # the table's client, made once before the threads share it
    log = RaceLog()
    source, ingestor = RaceSource(), RaceIngestor(log)
    messages: queue.Queue[str | None] = queue.Queue()
    keys = [race_key(i) for i in range(mailboxes) for _ in range(DELIVERIES)]
    random.Random(28).shuffle(keys)
    for key in keys:
        messages.put(key)
    lease = timedelta(seconds=lease_seconds)
    parts = MailPoll(source, source, deps.mail(), lambda: ingestor, lease_for=lease)

    def poller() -> None:
        while (key := messages.get()) is not None:
            try:
                line = poll_mailbox(key, Deadline.unbounded(), parts).line
            except PollerKilled:
                return
            if line.endswith("another worker is polling it"):
                with log.lock:
                    log.refused += 1

    def redeliver_the_killed() -> None:
        """SQS's visibility timeout, shortened: the dead poller's message comes back every
        REDELIVERY_SECONDS to a fresh poller, until that poller gets the lease."""
        while log.taken_over_at is None and not stop.wait(REDELIVERY_SECONDS):
            if log.killed_key is not None:
                poll_mailbox(log.killed_key, Deadline.unbounded(), parts)

    stop = threading.Event()
    threads = [threading.Thread(target=poller, name=f"poller-{i}") for i in range(pollers)]
    redelivery = threading.Thread(target=redeliver_the_killed, name="redelivery")
    for thread in [*threads, redelivery]:
        thread.start()
    for _ in threads:
        messages.put(None)  # after every delivery: each poller stops once the queue is drained
    # Every poller but the dead one done, and the dead one's mailbox taken over (or given up).
    give_up = time.monotonic() + 10 * lease_seconds + 120
    while time.monotonic() < give_up and (
        redelivery.is_alive() or sum(t.is_alive() for t in threads) > 1
    ):
        time.sleep(0.05)
    stop.set()
    redelivery.join()
    log.wake_the_killed.set()
    for thread in threads:
        thread.join()
    return log
