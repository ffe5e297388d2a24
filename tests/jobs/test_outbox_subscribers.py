"""The drain builds only the subscribers a batch's events are for (jobs/outbox.py): an event
nobody is told of (a calendar event's update) builds no notifications, no mailbox notice."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from chalicelib.domain.announcements import (
    CommentCreated,
    EventUpdated,
    MailboxFailing,
    MailRejected,
    PostCreated,
    Recorded,
    RejectionNoticeDue,
)
from chalicelib.jobs.outbox import drain_records
from chalicelib.store.outbox import records
from tests.support import NOW

pytestmark = pytest.mark.fast


class RecordingParts:
    """Builds each subscriber as a recorder of what it was told, and notes what it built."""

    def __init__(self, fail: str = "") -> None:
        self.built: list[str] = []
        self.read_posts: list[set[str]] = []
        self.told: dict[str, list[Any]] = {}
        self.fail = fail

    def _handler(self, name: str) -> Any:
        self.built.append(name)
        told = self.told.setdefault(name, [])

        def handle(item: Recorded) -> None:
            if name == self.fail:
                raise RuntimeError(f"{name} failed")
            told.append(item.announcement)

        return handle

    def posts(self, post_ids: set[str]) -> Mapping[str, Any]:
        self.read_posts.append(post_ids)
        return {}

    def notify(self, reads: Any) -> Any:
        return self._handler("notify")

    def mailbox_failing_notice(self) -> Any:
        return self._handler("mailbox notice")

    def rejection_notices(self) -> Any:
        return self._handler("rejection notices")

    def event_bus(self) -> Any:
        return self._handler("event bus")


def stream(*events: Any, removed: int = 0) -> list[dict[str, Any]]:
    """Stream records (new images) of the outbox items of `events`, then `removed` expiries."""
    found = [
        {
            "eventName": "INSERT",
            "dynamodb": {"SequenceNumber": str(n), "NewImage": item.serialize()},
        }
        for n, item in enumerate(records(events, NOW), start=1)
    ]
    return found + [
        {"eventName": "REMOVE", "dynamodb": {"SequenceNumber": str(100 + n)}}
        for n in range(removed)
    ]


UPDATED = EventUpdated(7, "g1", "u1", "Picnic", "2026-12-01T10:00:00Z", None, False)
FAILING = MailboxFailing("post#g1", "g1", "auth", "refused", 3, "2026-11-26T10:00:00Z")


def test_a_calendar_event_builds_only_the_bus():
    parts = RecordingParts()
    assert drain_records(stream(UPDATED), parts) is None
    assert parts.built == ["event bus"]
    assert parts.read_posts == []
    assert parts.told == {"event bus": [UPDATED]}


def test_new_posts_and_comments_build_notifications_reading_their_posts_once():
    post = PostCreated("p1", "g1", "u1")
    comment = CommentCreated(5, "p2", "g1", "u2", True)
    parts = RecordingParts()
    assert drain_records(stream(post, comment, UPDATED), parts) is None
    assert parts.built == ["notify", "event bus"]
    assert parts.read_posts == [{"p1", "p2"}]
    assert parts.told["notify"] == [post, comment, UPDATED]  # notify passes what is not its
    assert parts.told["event bus"] == [post, comment, UPDATED]


def test_a_failing_mailbox_builds_its_notice_and_no_notifications():
    rejected = MailRejected("post#g1", "g1", "e1", None, "spam")
    parts = RecordingParts()
    assert drain_records(stream(rejected, FAILING), parts) is None
    assert parts.built == ["mailbox notice", "event bus"]
    assert parts.told["mailbox notice"] == [rejected, FAILING]


def test_a_notice_due_to_a_rejected_mails_sender_builds_its_sender_only():
    rejected = MailRejected("post#g1", "g1", "e1", "m@x", "unknown sender s@x")
    due = RejectionNoticeDue(
        "post#g1", "g1", "e1", "s@x", "Hi", "m@x", "unknown sender s@x", "2026-12-07"
    )
    parts = RecordingParts()
    assert drain_records(stream(due, rejected), parts) is None
    assert parts.built == ["rejection notices", "event bus"]
    assert parts.told["rejection notices"] == [due, rejected]


def test_expiries_alone_build_nothing():
    parts = RecordingParts()
    assert drain_records(stream(removed=2), parts) is None
    assert parts.built == []


def test_a_subscriber_that_fails_stops_the_drain_at_that_record():
    parts = RecordingParts(fail="event bus")
    assert drain_records(stream(UPDATED, UPDATED), parts) == "1"
