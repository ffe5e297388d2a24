"""An event as the store reads it and the rules hold it: a frozen record, not the PynamoDB item
(store/events.py maps one to the other).

A write never changes an event in place: the rules make a changed copy (`dataclasses.replace`)
and hand the store both, the event as read and as changed. `version` is the version it was read
at: the store writes the change only if the stored event is still at that version (else 409).
What the store derives from an event (its list key, what `filter` searches, its calendar months)
it derives itself on every write.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime


@dataclass(frozen=True)
class EventDetails:
    """What an event says of itself: as sent to the API, written in a fixture, or stored."""

    title: str
    all_day: bool
    start_date: datetime
    end_date: datetime | None
    content: str
    organizer: str
    location: str


@dataclass(frozen=True)
class Event(EventDetails):
    id: int
    group_id: str
    author_id: str
    editor_id: str
    created_on: datetime
    modified_on: datetime
    # None for an event no write of the store has versioned yet (a new one).
    version: int | None


# The names of what an event says of itself (`EventDetails`), as stored and as the API names them
# in snake case, in the record's order.
DETAIL_NAMES = tuple(f.name for f in fields(EventDetails))
DETAILS = frozenset(DETAIL_NAMES)


def details_of(event: EventDetails) -> EventDetails:
    """Only what the event says of itself (not its id, group, people or times)."""
    return EventDetails(**{name: getattr(event, name) for name in DETAILS})
