"""The outbox drain: tells the subscribers (notifications, the event bus) what the outbox recorded.

- `handle_stream_batch`: the `drain-outbox` function, triggered by the outbox table's DynamoDB
  stream. It tells the records in order and stops at the first that fails, answering it as the
  batch's only failure (ReportBatchItemFailures): Lambda checkpoints everything before it and
  delivers it, and what follows it, again; after the event source's retries the batch's place
  goes to the drain's dead-letter queue.
- `drain_in_process`: `make run`, the CLI and the tests have no event source mapping; they read
  the same stream (store/outbox.py `reader`, which keeps this process's place in it) and run the
  same `drain_records`.

Delivery is at least once. Each notification is claimed per (occurrence, user) before it is
sent (services/notify/delivery.py), so a record delivered twice sends no mail twice; the bus's consumers
drop repeats by `domainEventId`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from chalicelib import deps
from chalicelib.domain.announcements import (
    CommentCreated,
    Handler,
    MailboxFailing,
    PostCreated,
    Recorded,
    RejectionNoticeDue,
)
from chalicelib.logs import get_logger

if TYPE_CHECKING:
    from chalicelib.domain.posts import Post
    from chalicelib.services.notify.delivery import BatchReads
    from chalicelib.store.outbox import StreamReader

log = get_logger("jobs.outbox")

# The outbox's store and the notifications' reads are imported when the drain runs: at the top
# they would add 264 ms (the store) to every function's `import app` (bench/hidden_imports.py --cost).

# This function, as the sending rate knows it (chalicelib/mail/outgoing.py `SENDERS`).
DRAIN = "drain-outbox"
# Records told per `drain_records` call in process (Lambda's batch size is the event source's).
BATCH = 100


def handle_stream_batch(event: dict[str, Any]) -> dict[str, Any]:
    """The Lambda handler's work: the partial batch response of one stream batch."""
    failed = drain_records(event.get("Records") or [])
    return {"batchItemFailures": [] if failed is None else [{"itemIdentifier": failed}]}


def drain_records(
    records: Sequence[dict[str, Any]], parts: SubscriberParts | None = None
) -> str | None:
    """Tell the subscribers each new outbox item of these stream records, in order. Answers
    None when all were told, else the sequence number of the first that failed (nothing after it
    was told). `parts`: what builds the subscribers (the app's unless a test says)."""
    from chalicelib.store.outbox import from_image

    told: list[tuple[str, Recorded | None]] = []
    for record in records:
        sequence = str(record["dynamodb"]["SequenceNumber"])
        # Expiry (REMOVE) and rewrites announce nothing new.
        if record.get("eventName") != "INSERT":
            told.append((sequence, None))
            continue
        try:
            item_id, event = from_image(record["dynamodb"]["NewImage"])
        except Exception:
            log.exception("outbox record unreadable", extra={"sequence": sequence})
            return sequence
        told.append((sequence, Recorded(item_id, event)))
    announcements = [item.announcement for _, item in told if item is not None]
    subscribers = subscribers_of_batch(announcements, parts)
    for sequence, item in told:
        if item is None:
            continue
        try:
            tell(subscribers, item)
        except Exception:
            log.exception(
                "domain event not delivered; it is delivered again",
                extra={"domainEventId": item.id, "event": type(item.announcement).__name__},
            )
            return sequence
    return None


# The events notifications are about (services/notify/delivery.py); the notice of a failing mailbox
# (services/mailbox_alerts.py) is told `MailboxFailing`; the bus is told every kind.
NOTIFIED = (PostCreated, CommentCreated)
NOTICED = (MailboxFailing,)
# A rejected mail's sender told why (services/mail_in/notices.py).
ANSWERED = (RejectionNoticeDue,)


class SubscriberParts(Protocol):
    """What builds each subscriber (`AppSubscribers`; a test's fake records what it built)."""

    def posts(self, post_ids: set[str]) -> Mapping[str, Post]: ...

    def notify(self, reads: BatchReads) -> Handler: ...

    def mailbox_failing_notice(self) -> Handler: ...

    def rejection_notices(self) -> Handler: ...

    def event_bus(self) -> Handler: ...


class AppSubscribers:
    """The subscribers as the app composes them (each built by chalicelib/deps.py), the one
    composition: the drain and the tests build them through `subscribers_of_batch`. The mail they
    send themselves (instant emails of small events, mailbox failure emails, rejection notices)
    takes its moments from the stack's one sending rate, as instant mail (mail/outgoing.py)."""

    def posts(self, post_ids: set[str]) -> Mapping[str, Post]:
        return deps.posts().get_many(post_ids)

    def notify(self, reads: BatchReads) -> Handler:
        return deps.notify_service(reads=reads, sender=DRAIN)

    def mailbox_failing_notice(self) -> Handler:
        notice: Handler = deps.mailbox_failing_notice(DRAIN)
        return notice

    def rejection_notices(self) -> Handler:
        notices: Handler = deps.rejection_notices(DRAIN)
        return notices

    def event_bus(self) -> Handler:
        return deps.event_bus_publisher()


def subscribers_of_batch(
    announcements: Sequence[object], parts: SubscriberParts | None = None
) -> list[Handler]:
    """The subscribers (`parts`: the app's, `AppSubscribers`, unless a test says) that some event
    of the batch is for, in the order they are told (`tell`), and only those: a batch of calendar events builds no
    notifications (ten repositories and an SQS sender). Notifications read what the batch shares once: its posts in one
    BatchGetItem (not one GetItem each: a mail poll of a hundred posts is drained in batches of a
    hundred), each subscriber list once (`BatchReads`)."""
    parts = parts or AppSubscribers()
    handlers: list[Handler] = []
    notified = [a for a in announcements if isinstance(a, NOTIFIED)]
    if notified:
        from chalicelib.services.notify.delivery import BatchReads

        wanted = {a.post_id for a in notified}
        handlers.append(parts.notify(BatchReads(parts.posts(wanted))))
    if any(isinstance(a, NOTICED) for a in announcements):
        handlers.append(parts.mailbox_failing_notice())
    if any(isinstance(a, ANSWERED) for a in announcements):
        handlers.append(parts.rejection_notices())
    if announcements:
        handlers.append(parts.event_bus())
    return handlers


def tell(subscribers: Sequence[Handler], item: Recorded) -> None:
    """Tell every subscriber, in order, even when one fails; then raise the first failure, so the
    drain tells the event again (each subscriber is idempotent: what was told is not told
    twice)."""
    failure: Exception | None = None
    for subscriber in subscribers:
        try:
            subscriber(item)
        except Exception as error:
            log.exception(
                "event handler failed", extra={"events": [type(item.announcement).__name__]}
            )
            failure = failure or error
    if failure is not None:
        raise failure


def drain_in_process(reader: StreamReader | None = None) -> int:
    """Read the outbox stream here and tell what is new; answers how many records were told.
    A record that fails stays where it is: the next drain tells it (and what follows) again."""
    from chalicelib.store import outbox

    reader = reader or outbox.reader()
    told = 0
    for shard, records in reader.read():
        for start in range(0, len(records), BATCH):
            chunk = records[start : start + BATCH]
            failed = drain_records(chunk)
            done = chunk if failed is None else _before(chunk, failed)
            if done:
                reader.commit(shard, done[-1]["dynamodb"]["SequenceNumber"], len(done))
                told += len(done)
            if failed is not None:
                break  # this shard waits for the next drain, in order
    return told


def _before(records: list[dict[str, Any]], sequence: str) -> list[dict[str, Any]]:
    for index, record in enumerate(records):
        if record["dynamodb"]["SequenceNumber"] == sequence:
            return records[:index]
    return records
