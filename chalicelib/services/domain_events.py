"""Domain events: what happened, told once to whoever cares (notifications, feeds, …).

Creating a post or a comment publishes an event here, whatever created it (mail today, any other
path tomorrow); so do comment moderation, event writes and rejected mail. Subscribers are chosen
where the app is composed (`chalicelib.deps.domain_events`), not in the code that creates:
notifications (new posts and comments) and the EventBridge bus (every kind; services/event_bus.py). Events are published after the write they
describe is stored. Delivery is at least once: a mail whose import is retried after a crash may
publish again, so handlers are idempotent.

Every field is JSON as it is (ids, ISO 8601 UTC dates as text): the bus's `detail` is these fields
in camelCase (README, "Domain events").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any

from chalicelib.logs import get_logger

log = get_logger("events")


@dataclass(frozen=True)
class PostCreated:
    post_id: str
    group_id: str
    author_id: str


@dataclass(frozen=True)
class CommentCreated:
    comment_id: int
    post_id: str
    group_id: str
    author_id: str
    is_approved: bool


@dataclass(frozen=True)
class CommentApproved:
    comment_id: int
    post_id: str
    group_id: str
    actor_id: str | None


@dataclass(frozen=True)
class CommentDeleted:
    comment_id: int
    post_id: str
    group_id: str
    actor_id: str | None


@dataclass(frozen=True)
class CommentPurged:
    comment_id: int
    # None when the monthly purge removed it (its index holds keys only).
    post_id: str | None
    group_id: str | None
    actor_id: str | None  # None: the monthly purge


@dataclass(frozen=True)
class _EventFacts:
    """What created, updated and moved events carry: the event as it now stands."""

    event_id: int
    group_id: str
    actor_id: str
    title: str
    start_date: str
    end_date: str | None
    all_day: bool


@dataclass(frozen=True)
class EventCreated(_EventFacts):
    pass


@dataclass(frozen=True)
class EventUpdated(_EventFacts):
    pass


@dataclass(frozen=True)
class EventMoved(_EventFacts):
    pass


@dataclass(frozen=True)
class EventDeleted:
    event_id: int
    group_id: str
    actor_id: str


@dataclass(frozen=True)
class MailRejected:
    mailbox: str  # post#<groupId> | comment#system
    group_id: str | None
    log_entry_id: str
    message_id: str | None
    reason: str


# The events a notification chunk carries through SQS (services/notify.py), by their JSON `type`.
_BY_TYPE = {kind.__name__: kind for kind in (PostCreated, CommentCreated)}


def event_to_json(event: Any) -> dict[str, Any]:
    return {"type": type(event).__name__, **asdict(event)}


def event_from_json(data: dict[str, Any]) -> Any:
    values = {k: v for k, v in data.items() if k != "type"}
    return _BY_TYPE[data["type"]](**values)


Handler = Callable[[Any], None]


class BatchMemo:
    """What handlers read for one batch of events (one mail poll), each value read once.

    A poll that posts a hundred mails into one group publishes a hundred events about the same
    group and author: their subscribers are read for the first and reused for the rest (issue 14's
    budget of DynamoDB requests per mail). It lives only as long as the batch, so a subscription
    changed during a poll counts from the next poll on. Thread-safe: a poll imports concurrently.
    """

    def __init__(self) -> None:
        self._values: dict[Any, Any] = {}
        self._stored: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def remember(self, key: Any, value: Any) -> None:
        """What the publisher stored just now (a new post), so handlers need not read it back."""
        with self._lock:
            self._stored[key] = value

    def stored(self, key: Any) -> Any:
        """What `remember` kept under `key`, else None (read it from the table)."""
        with self._lock:
            return self._stored.get(key)

    def get(self, key: Any, read: Callable[[], Any]) -> Any:
        # Reading under the lock: two workers asking for the same key read it once, not twice.
        with self._lock:
            if key not in self._values:
                self._values[key] = read()
            return self._values[key]


_batch: ContextVar[BatchMemo | None] = ContextVar("domain_events_batch", default=None)


def batch_memo() -> BatchMemo | None:
    """The memo of the batch being published, None outside one (every read is fresh)."""
    return _batch.get()


@contextmanager
def batch() -> Iterator[BatchMemo]:
    """Events published within it belong to one batch (a mail poll): handlers may reuse what they
    read for earlier events of it. Worker threads see it when run in a copy of this context
    (`contextvars.copy_context().run`). Nested batches share the outer memo."""
    outer = _batch.get()
    if outer is not None:
        yield outer
        return
    memo = BatchMemo()
    token = _batch.set(memo)
    try:
        yield memo
    finally:
        _batch.reset(token)


class DomainEvents:
    def __init__(self, handlers: Sequence[Handler] = ()) -> None:
        self.handlers = list(handlers)

    def publish(self, event: Any) -> None:
        self.publish_all([event])

    def publish_all(self, events: Sequence[Any]) -> None:
        """Several events at once (bulk moderation): a handler that can batches them."""
        if not events:
            return
        for handler in self.handlers:
            try:
                batch = getattr(handler, "publish_all", None)
                if batch is not None:
                    batch(list(events))
                else:
                    for event in events:
                        handler(event)
            except Exception:
                # What was created stays created; a failing subscriber is logged, not fatal.
                kinds = sorted({type(event).__name__ for event in events})
                log.exception("event handler failed", extra={"events": kinds})
