"""What the domain events' publisher (services/event_bus.py) needs of EventBridge: PutEvents's
answer, as much of it as the retries read (chalicelib/aws.py `put_events` answers it)."""

from __future__ import annotations

from typing import TypedDict


class PutEventsEntryResult(TypedDict, total=False):
    EventId: str
    ErrorCode: str
    ErrorMessage: str


class PutEventsAnswer(TypedDict, total=False):
    FailedEntryCount: int
    Entries: list[PutEventsEntryResult]
