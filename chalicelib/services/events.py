"""Events: create, read, replace, move on the calendar, delete; upcoming, expired, calendar lists."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from chalicelib.auth import Caller, Need
from chalicelib.clock import iso, utc_now
from chalicelib.domain import audit
from chalicelib.domain.announcements import (
    EventCreated,
    EventDeleted,
    EventMoved,
    EventUpdated,
)
from chalicelib.domain.events import DETAIL_NAMES, DETAILS, Event, EventDetails, details_of
from chalicelib.domain.groups import Group
from chalicelib.domain.ports.content import EventStore
from chalicelib.domain.ports.people import UserReader
from chalicelib.domain.users import User
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.sanitize import clean_html
from chalicelib.schemas import events as wire
from chalicelib.services.links import group_ref, group_url, user_ref
from chalicelib.services.paging import next_offset

if TYPE_CHECKING:
    from chalicelib.services.groups import GroupService

EventFacts = EventCreated | EventUpdated | EventMoved


# The calendar is not paged (CONTRACT §7): a period answers at most this many events.
CALENDAR_CAP = 1000


def event_url(group: Group, event_id: int) -> str:
    """Permalink: `{AGORA_BASE_URL}/{group slug}/events/{id}`."""
    return f"{group_url(group)}/events/{event_id}"


class EventService:
    def __init__(
        self,
        events: EventStore,
        users: UserReader,
        groups: GroupService,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.events = events
        self.users = users
        self.groups = groups
        self.clock = clock or utc_now

    @staticmethod
    def _announced(kind: type[EventFacts], actor_id: str, event: Event) -> list[EventFacts]:
        """The domain event of a write: the event as the write stores it, handed to the store,
        which puts it in the outbox in the same transaction (domain/announcements.py)."""

        end = event.end_date
        return [
            kind(
                event_id=event.id,
                group_id=event.group_id,
                actor_id=actor_id,
                title=event.title,
                start_date=iso(event.start_date),
                end_date=iso(end) if end is not None else None,
                all_day=event.all_day,
            )
        ]

    # --- single events ---------------------------------------------------------------------------

    def find(self, event_id: int, caller: Caller, need: Need) -> tuple[Event, Group]:
        """The event and its group, once the caller's privilege there is checked."""
        record = self.events.get(event_id)
        if record is None:
            raise NotFound("eventId", event_id, "event")
        group = self.groups.get(record.group_id, key="eventId")
        caller.require(need, group)
        return record, group

    def get(self, event_id: int, caller: Caller) -> wire.EventOut:
        record, group = self.find(event_id, caller, Need.ENTER)
        return self._out_one(record, group)

    def create(self, body: wire.EventCreate, caller: Caller) -> wire.EventOut:
        group = self._target_group(body, body.group_id, caller)
        now = self.clock()
        # Everything the answer needs is read before the write: once the write is done, no
        # failing read can answer 503 for an event that was stored after all.
        people = self.users.get_many({caller.user_id})
        new = Event(
            **vars(stored_details(body)),
            id=self.events.next_id(),
            group_id=group.id,
            author_id=caller.user_id,
            editor_id=caller.user_id,
            created_on=now,
            modified_on=now,
            version=None,
        )
        record = self.events.create(
            new,
            announcements=[
                *self._announced(EventCreated, caller.user_id, new),
                *_audited("event.create", None, new),
            ],
        )
        return self._out([record], group, people)[0]

    def update(
        self, found: tuple[Event, Group], body: wire.EventUpdate, caller: Caller
    ) -> wire.EventOut:
        """Replace the fields of an event `find` returned (its privilege checked before the body
        is read: CONTRACT §6)."""
        record, group = found
        if body.group_id is not None and body.group_id != record.group_id:
            group = self._target_group(body, body.group_id, caller)
        people = self.users.get_many({record.author_id, caller.user_id})  # before the write
        changed = replace(
            record,
            **vars(stored_details(body)),
            group_id=group.id,
            editor_id=caller.user_id,
            modified_on=self.clock(),
        )
        stored = self.events.update(
            record,
            changed,
            announcements=[
                *self._announced(EventUpdated, caller.user_id, changed),
                *_audited("event.update", record, changed),
            ],
        )
        return self._out([stored], group, people)[0]

    def delete(self, event_id: int, caller: Caller) -> wire.EventOut:
        record, group = self.find(event_id, caller, Need.MODERATOR)
        answer = self._out_one(record, group)
        self.events.delete(
            record,
            announcements=[
                EventDeleted(event_id=record.id, group_id=record.group_id, actor_id=caller.user_id),
                *_audited("event.delete", record, None),
            ],
        )
        return answer

    def move(
        self,
        found: tuple[Event, Group],
        move: wire.CalendarMove,
        caller: Caller,
        sent: Mapping[str, object],
    ) -> wire.EventPage:
        """Calendar update: new dates for the event `find` returned (privilege checked before the
        body is read), answered with the calendar of the period.

        `sent` holds the fields as sent: a bad `endDate` is answered as it was written."""
        record, group = found
        all_day = record.all_day if move.all_day is None else move.all_day
        if "end_date" in move.model_fields_set:
            end = move.end_date
        elif record.end_date is not None:
            # A dragged event keeps its duration (up to the calendar's last day).
            end = _later(move.start_date, record.end_date - record.start_date)
        else:
            end = None
        problem = wire.end_date_problem(move.start_date, end, all_day)
        if problem:
            raise ValidationFailed.one("endDate", sent.get("endDate"), problem)
        start, stop = move.calendar_start_date, move.calendar_end_date
        # The calendar is read before the write and the moved event put in its new place after
        # it: once the event has moved, no failing read can answer an error for a done move.
        shown = self.events.overlapping(group.id, start, stop, cap=CALENDAR_CAP)
        people = self.users.get_many(
            {r.author_id for r in shown}
            | {r.editor_id for r in shown}
            | {record.author_id, caller.user_id}
        )
        moved = replace(
            record,
            start_date=move.start_date,
            end_date=end,
            all_day=all_day,
            editor_id=caller.user_id,
            modified_on=self.clock(),
        )
        stored = self.events.update(
            record,
            moved,
            announcements=[
                *self._announced(EventMoved, caller.user_id, moved),
                *_audited("event.move", record, moved),
            ],
        )
        shown = [r for r in shown if r.id != record.id]
        if self.events.overlaps(stored, start, stop):
            shown = sorted([*shown, stored], key=calendar_order)[:CALENDAR_CAP]
        return wire.EventPage(
            offset=shown[-1].id if shown else None, events=self._out(shown, group, people)
        )

    # --- lists -----------------------------------------------------------------------------------

    def upcoming(self, group: Group, query: wire.EventListQuery) -> wire.EventPage:
        return self._page(group, query, upcoming=True)

    def expired(self, group: Group, query: wire.EventListQuery) -> wire.EventPage:
        return self._page(group, query, upcoming=False)

    def calendar(self, group: Group, query: wire.CalendarQuery) -> wire.EventPage:
        records = self.events.overlapping(
            group.id, query.calendar_start_date, query.calendar_end_date, cap=CALENDAR_CAP
        )
        return wire.EventPage(
            offset=records[-1].id if records else None, events=self._out(records, group)
        )

    def _page(self, group: Group, query: wire.EventListQuery, *, upcoming: bool) -> wire.EventPage:
        after = None
        if query.offset:
            after = self.events.position(query.offset)
            if after is None or after.group_id != group.id:
                raise ValidationFailed.one("offset", query.offset, "no event has this id")
        records = self.events.page(
            group.id,
            moment=query.time_stamp or self.clock(),
            upcoming=upcoming,
            limit=query.page_size,
            after=after,
            text=query.search,
        )
        return wire.EventPage(
            offset=next_offset(records, query.offset, lambda r: r.id),
            events=self._out(records, group),
        )

    # --- helpers ---------------------------------------------------------------------------------

    def _target_group(self, body: wire.EventWrite, group_id: str, caller: Caller) -> Group:
        try:
            group = self.groups.get(group_id, key="groupId")
        except NotFound:
            # A body field naming nothing is a validation error of that field, not a 404 of the path.
            submitted = body.model_dump(mode="json", by_alias=True)
            raise ValidationFailed.one(
                "groupId", group_id, "no group has this id", submitted
            ) from None
        caller.require(Need.MODERATOR, group)
        return group

    def _out_one(self, record: Event, group: Group) -> wire.EventOut:
        return self._out([record], group)[0]

    def _out(
        self,
        records: Sequence[Event],
        group: Group,
        people: Mapping[str, User] | None = None,
    ) -> list[wire.EventOut]:
        if people is None:
            people = self.users.get_many(
                {r.author_id for r in records} | {r.editor_id for r in records}
            )
        return [
            wire.EventOut(
                id=r.id,
                group=group_ref(group),
                created_on=r.created_on,
                author=user_ref(people.get(r.author_id)),
                editor=user_ref(people.get(r.editor_id)),
                url=event_url(group, r.id),
                **vars(details_of(r)),
            )
            for r in records
        ]


def calendar_order(event: Event) -> tuple[datetime, int]:
    """Start date ascending, then id: the order of the store's lists (its `start_key`)."""
    return event.start_date, event.id


# What an event's change records (CONTRACT §12), stored attribute → the API's field name: all
# it says of itself, in the record's order, named as the API takes it, and its group.
AUDITED = {
    **{name: wire.EventFields.model_fields[name].alias or name for name in DETAIL_NAMES},
    "group_id": "groupId",
}


def _audited(action: str, read: Event | None, written: Event | None) -> list[audit.AuditEntry]:
    """The audit entry of an event's write: `read` the event before it (None: new), `written`
    the event after it (None: deleted)."""
    event = written or read
    assert event is not None, "a write has an event before or after it"
    return audit.entry(
        action,
        target=("event", event.id),
        group_id=event.group_id,
        before=audit.fields_of(read, AUDITED),
        after=audit.fields_of(written, AUDITED),
    )


def _later(moment: datetime, span: timedelta) -> datetime:
    try:
        return moment + span
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def stored_details(sent: wire.EventFields) -> EventDetails:
    """What an event written through the API or loaded from a fixture stores of what was sent:
    its content sanitised (the store derives the text its `filter` searches)."""
    said = EventDetails(**sent.model_dump(include=set(DETAILS)))
    return replace(said, content=clean_html(said.content))
