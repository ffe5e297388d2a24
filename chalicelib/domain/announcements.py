"""Domain events: what happened, told once to whoever cares (notifications, feeds, …).

Creating a post or a comment records an event, whatever created it (mail today, any other path
tomorrow); so do comment moderation, event writes and rejected mail. An event is not told where
it happens: the store writes it to the outbox in the same DynamoDB request as the change it
describes (store/outbox.py), and the `drain-outbox` function (jobs/outbox.py) tells the
subscribers, composed once there (`AppSubscribers`, each built by chalicelib/deps.py):
notifications (new posts and comments) and the EventBridge bus (every kind;
services/event_bus.py). A drain
that fails is run again, so delivery is at least once and handlers are idempotent.

Every field is JSON as it is (ids, ISO 8601 UTC dates as text): the bus's `detail` is these fields
in camelCase (README, "Domain events").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TypeAlias, cast, get_args

from chalicelib.domain.json import JsonObject


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


@dataclass(frozen=True)
class RejectionNoticeDue:
    """A rejected mail's proven sender is to be told why, once (CONTRACT §9): the mail-in claimed
    the sender's notice of the `day` (UTC) for this entry before writing its log entry
    (services/mail_in/notices.py); the drain sends it."""

    mailbox: str  # post#<groupId> | comment#system
    group_id: str | None  # None: the email-to-comment mailbox (the root group's name)
    log_entry_id: str
    to: str  # the sender's address
    subject: str
    message_id: str | None  # the rejected mail's, which the notice answers (In-Reply-To)
    reason: str  # the mail log's reason
    day: str  # YYYY-MM-DD


@dataclass(frozen=True)
class MailboxFailing:
    """A mailbox's poll failed at its own server for the third time in a row (once a streak):
    its administrators are told what failed and how to fix it."""

    mailbox: str  # post#<groupId> | comment#system
    group_id: str | None  # None: the email-to-comment mailbox (the root group's administrators)
    reason: str  # chalicelib.mail.pop3.FAILURE_REASONS
    message: str  # the mailbox's lastError
    failures: int
    next_poll_on: str


# Every kind of event.
Announcement: TypeAlias = (
    PostCreated
    | CommentCreated
    | CommentApproved
    | CommentDeleted
    | CommentPurged
    | EventCreated
    | EventUpdated
    | EventMoved
    | EventDeleted
    | MailRejected
    | RejectionNoticeDue
    | MailboxFailing
)

# Every event by its JSON `type`: outbox items (store/outbox.py) and notification chunks
# (services/notify/delivery.py) carry them so.
_BY_TYPE: dict[str, Callable[..., Announcement]] = {
    kind.__name__: kind for kind in get_args(Announcement)
}


def announcement_to_json(event: Announcement) -> JsonObject:
    # Every field is JSON as it is (the module's docstring).
    return {"type": type(event).__name__, **cast(JsonObject, asdict(event))}


def announcement_from_json(data: Mapping[str, object]) -> Announcement:
    values = {k: v for k, v in data.items() if k != "type"}
    return _BY_TYPE[str(data["type"])](**values)


@dataclass(frozen=True)
class Recorded:
    """An event as the outbox recorded it: `id` is its stable id (the outbox item's), the same
    on every delivery, so a consumer of the bus can drop repeats."""

    id: str
    announcement: Announcement


# A handler takes a `Recorded`; the outbox drain (jobs/outbox.py `tell`) tells them in order.
Handler = Callable[[Recorded], None]
