"""Events, listed by group and start date, and a calendar table for period views.

Upcoming and expired lists are one Query each on the `group-start` index, whose range key
`start_key` is the start date followed by the zero-padded id: ordering is total (two events may start
at the same moment), and `offset` turns into an ExclusiveStartKey with one GetItem.

The calendar cannot use that index alone: an event that started long before the period but still
runs in it would be found only by reading every earlier event. So each event also has one small item
per calendar month it touches in the `event-calendar` table (hash: group, range: `YYYY-MM#start_key`).
A period is then one Query between its first and last month, which reads only events touching those
months; a multi-day event shows in every month it spans. The month items and the event are written
in one transaction, which is why an event's duration is capped (schemas/events.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta

from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import TransactWriteError
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.aws import error_code, is_unavailable
from chalicelib.clock import utc_now
from chalicelib.domain.events import Event
from chalicelib.domain.ports.content import EventListing, EventStore
from chalicelib.errors import Conflict
from chalicelib.sanitize import html_to_text
from chalicelib.store import outbox
from chalicelib.store.base import (
    UtcAttribute,
    ensure_fits,
    forget,
    frozen,
    global_index,
    nullable,
    query_page,
    read_through,
    register,
    remember_last,
    sort_moment,
    table_meta,
    transact,
)
from chalicelib.store.counters import CounterRecord, CounterRepository

EVENT_COUNTER = "events"
# The event's texts by their keys in the API, for a record too large to store.
EVENT_TEXTS = {
    "content": "content",
    "title": "title",
    "location": "location",
    "organizer": "organizer",
}
ID_DIGITS = 12
# Above any "<moment>#<digits>" key of the same moment (ASCII "~" sorts after digits).
AFTER_ALL_IDS = "~"


def start_key_of(start: datetime, event_id: int) -> str:
    return f"{sort_moment(start)}#{event_id:0{ID_DIGITS}d}"


def event_search_text(title: str, content: str, location: str, organizer: str) -> str:
    # One line per field: a filter never matches across two fields.
    return "\n".join([title, html_to_text(content), location, organizer]).lower()


def month_of(moment: datetime) -> str:
    utc = moment.astimezone(UTC)
    return f"{utc.year:04d}-{utc.month:02d}"  # strftime would write year 1 as "1"


def occupied_until(start: datetime, end: datetime | None, all_day: bool) -> datetime:
    """Exclusive end of the time an event takes: an all-day event without endDate takes its day."""
    if end is not None:
        return end
    return after(start, timedelta(days=1)) if all_day else start


# The calendar's last moment: an all-day event on 9999-12-31 takes its day up to there.
LAST_MOMENT = datetime.max.replace(tzinfo=UTC)


def after(moment: datetime, span: timedelta) -> datetime:
    """`moment + span`, or the calendar's last moment when that is beyond it."""
    try:
        return moment + span
    except OverflowError:
        return LAST_MOMENT


def last_moment_before(until: datetime, start: datetime) -> datetime:
    """The last moment of [start, until) (the end is exclusive), or `start` when it is empty."""
    if until <= start:
        return start
    return until - timedelta(microseconds=1)


def months_between(first: datetime, last: datetime) -> list[str]:
    """Every `YYYY-MM` from the month of `first` to the month of `last`, inclusive."""
    year, month = first.astimezone(UTC).year, first.astimezone(UTC).month
    end = (last.astimezone(UTC).year, last.astimezone(UTC).month)
    months = []
    while (year, month) <= end:
        months.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return months


@register
class EventRecord(Model):
    Meta = table_meta("events")

    id = NumberAttribute(hash_key=True)
    group_id = UnicodeAttribute()
    author_id = UnicodeAttribute()
    editor_id = UnicodeAttribute()
    created_on = UtcAttribute()
    modified_on = UtcAttribute()
    all_day = BooleanAttribute(default=False)
    start_date = UtcAttribute()
    end_date = nullable(UtcAttribute(null=True))
    title = UnicodeAttribute()
    content = UnicodeAttribute(default="")
    organizer = UnicodeAttribute(default="")
    location = UnicodeAttribute(default="")
    # Lower-cased title, text, location and organizer, for the case-insensitive `filter`.
    search_text = UnicodeAttribute(default="")
    # Derived by refresh_keys(): see the module docstring.
    start_key = UnicodeAttribute()

    version = VersionAttribute()

    by_group_start = global_index(
        "group-start", "group_id", "start_key", range_type=UnicodeAttribute
    )

    @classmethod
    def of(cls, event: Event) -> EventRecord:
        """The item that stores `event` (at the version it was read at), its keys derived."""
        record = cls.placed(event)
        record.refresh_keys()
        return record

    @classmethod
    def placed(cls, event: Event) -> EventRecord:
        """`event` as an item with its list key but no search text: what its place in a list,
        its calendar items and its delete need, without an HTML parse of its content (about
        13 ms for 100 KB) that nothing of theirs reads."""
        values = {f.name: getattr(event, f.name) for f in dataclasses.fields(Event)}
        if values["version"] is None:
            del values["version"]  # a new event: PynamoDB writes it only where none is stored
        record = cls(**values)
        record.start_key = start_key_of(event.start_date, event.id)
        return record

    def as_event(self) -> Event:
        """The record as the rules hold it (domain/events.py)."""
        version = None if self.version is None else int(self.version)
        return frozen(self, Event, id=int(self.id), version=version)

    def refresh_keys(self) -> None:
        """The list key and what the `filter` searches, derived from the event: every write
        calls this, so the rule lives here only."""
        self.start_key = start_key_of(self.start_date, int(self.id))
        self.search_text = event_search_text(
            self.title, self.content or "", self.location or "", self.organizer or ""
        )

    def calendar_entries(self) -> list[CalendarEntryRecord]:
        until = occupied_until(self.start_date, self.end_date, self.all_day)
        # The end is exclusive: an event ending at midnight on the 1st does not touch that month.
        last = last_moment_before(until, self.start_date)
        return [
            CalendarEntryRecord(
                group_id=self.group_id,
                month_key=f"{month}#{self.start_key}",
                event_id=int(self.id),
                start_date=self.start_date,
                occupied_until=until,
            )
            for month in months_between(self.start_date, last)
        ]


@register
class CalendarEntryRecord(Model):
    """One per (event, month it touches): what the calendar Query reads and filters on."""

    Meta = table_meta("event-calendar")

    group_id = UnicodeAttribute(hash_key=True)
    month_key = UnicodeAttribute(range_key=True)
    event_id = NumberAttribute()
    start_date = UtcAttribute()
    occupied_until = UtcAttribute()


# Where a page ended: the `offset` of the next page names it (chalicelib.store.base).
POSITION = "event-position"


class EventRepository(EventStore):
    def position(self, event_id: int) -> Event | None:
        """The event an `offset` names, for its place in the list: from the warm container's
        memory when a page ended there lately (this container's own edits forget it)."""
        found: Event | None = read_through(POSITION, int(event_id), lambda: self.get(event_id))
        return found

    def next_id(self) -> int:
        return CounterRepository().next_value(EVENT_COUNTER)

    def reserve_ids(self, count: int) -> range:
        """`count` consecutive new ids in one atomic request (bulk loads)."""

        counter = CounterRecord(EVENT_COUNTER)
        counter.update(actions=[CounterRecord.value.add(count)])
        last = int(counter.value)
        return range(last - count + 1, last + 1)

    def get(self, event_id: int) -> Event | None:
        try:
            return EventRecord.get(event_id).as_event()
        except EventRecord.DoesNotExist:
            return None

    def get_many(self, event_ids: Iterable[int]) -> dict[int, Event]:
        return {key: record.as_event() for key, record in self.stored_items(event_ids).items()}

    def stored_items(self, event_ids: Iterable[int]) -> dict[int, EventRecord]:
        """The items themselves, with their calendar items to replace (the fixture loader)."""
        ids = list(dict.fromkeys(event_ids))
        if not ids:
            return {}
        return {int(e.id): e for e in EventRecord.batch_get(ids)}

    # --- writes: the event and its calendar items change together ---------------------------

    def create(self, event: Event, *, announcements: Sequence[object] = ()) -> Event:
        """`announcements`: the domain events the write announces, as the service made them;
        their outbox items go in the same transaction (so for `update` and `delete`)."""
        record = EventRecord.of(event)
        ensure_fits(record, EVENT_TEXTS)
        entries = record.calendar_entries()
        items = _outbox_items(announcements)

        def fill(write: TransactWrite) -> None:
            write.save(record, condition=EventRecord.id.does_not_exist())
            for entry in entries:
                write.save(entry)
            outbox.add_to(write, items)

        _commit(event.id, fill)
        return record.as_event()

    def update(self, read: Event, changed: Event, *, announcements: Sequence[object] = ()) -> Event:
        """Store `changed` in place of `read`, if the stored event is still the one read."""
        before = {entry.month_key: entry for entry in EventRecord.placed(read).calendar_entries()}
        record = EventRecord.of(dataclasses.replace(changed, version=read.version))
        ensure_fits(record, EVENT_TEXTS)
        forget(POSITION, [read.id])
        after = record.calendar_entries()
        kept = {entry.month_key for entry in after} if record.group_id == read.group_id else set()
        items = _outbox_items(announcements)
        # The version condition (added by PynamoDB) makes a concurrent edit fail as a whole,
        # so the calendar items always describe the stored event.

        def fill(write: TransactWrite) -> None:
            write.save(record)
            for key, entry in before.items():
                if key not in kept:
                    write.delete(entry)
            for entry in after:
                write.save(entry)
            outbox.add_to(write, items)

        _commit(read.id, fill)
        return record.as_event()

    def delete(self, event: Event, *, announcements: Sequence[object] = ()) -> None:
        forget(POSITION, [event.id])
        record = EventRecord.placed(event)
        entries = record.calendar_entries()
        items = _outbox_items(announcements)

        def fill(write: TransactWrite) -> None:
            write.delete(record)
            for entry in entries:
                write.delete(entry)
            outbox.add_to(write, items)

        _commit(event.id, fill)

    def put_many(self, records: Iterable[EventRecord]) -> None:
        """Bulk load (fixtures, tests): batch writes, not transactions."""
        with EventRecord.batch_write() as events, CalendarEntryRecord.batch_write() as entries:
            for record in records:
                record.refresh_keys()
                if record.version is None:
                    record.version = 1
                events.save(record)
                for entry in record.calendar_entries():
                    entries.save(entry)

    # --- reads ---------------------------------------------------------------------------------

    def listed(self, group_id: str, listing: EventListing) -> list[Event]:
        """Events starting after `moment` ascending (upcoming) or before it descending (expired)."""
        upcoming, after, text = listing.upcoming, listing.after, listing.text
        moment = listing.moment
        if upcoming:
            condition = EventRecord.start_key > f"{sort_moment(moment)}#{AFTER_ALL_IDS}"
        else:
            condition = EventRecord.start_key < f"{sort_moment(moment)}#"
        place = None
        # An offset event now on the other side of `moment` sits before the whole list (DynamoDB
        # refuses a start key outside the key condition): the page starts at the beginning.
        if after is not None and _inside(start_key_of_event(after), moment, upcoming):
            place = EventRecord.placed(after)
        records = query_page(
            EventRecord.by_group_start,
            group_id,
            limit=listing.limit,
            forward=upcoming,
            after=place,
            range_key_condition=condition,
            filter_condition=EventRecord.search_text.contains(text) if text else None,
        )
        return remember_last(POSITION, records.mapped(EventRecord.as_event))

    @staticmethod
    def overlaps(event: Event, start: datetime, end: datetime) -> bool:
        """Whether the event overlaps [start, end), as `overlapping` decides it."""
        until = occupied_until(event.start_date, event.end_date, event.all_day)
        return event.start_date < end and (until > start or event.start_date >= start)

    def overlapping(
        self, group_id: str, start: datetime, end: datetime, *, cap: int
    ) -> list[Event]:
        """Events overlapping [start, end), start date ascending, at most `cap` of them.

        Items come month by month, each month by start date; an event already seen in an earlier
        month of the period is skipped. The new events of a month all start in that month, so the
        first `cap` distinct events are the `cap` earliest-starting ones.
        """
        last = last_moment_before(end, start)
        low = f"{month_of(start)}#"
        high = f"{month_of(last)}#{AFTER_ALL_IDS}"
        overlaps = (CalendarEntryRecord.start_date < end) & (
            (CalendarEntryRecord.occupied_until > start) | (CalendarEntryRecord.start_date >= start)
        )
        entries = CalendarEntryRecord.query(
            group_id,
            CalendarEntryRecord.month_key.between(low, high),
            filter_condition=overlaps,
            page_size=200,
        )
        ids: dict[int, None] = {}
        for entry in entries:
            ids.setdefault(int(entry.event_id), None)
            if len(ids) >= cap:
                break
        found = self.get_many(ids)
        events = [found[event_id] for event_id in ids if event_id in found]
        return sorted(events, key=start_key_of_event)


def start_key_of_event(event: Event) -> str:
    """The event's place in its group's list (and in a calendar period)."""
    return start_key_of(event.start_date, event.id)


def _inside(start_key: str, moment: datetime, upcoming: bool) -> bool:
    if upcoming:
        return start_key > f"{sort_moment(moment)}#{AFTER_ALL_IDS}"
    return start_key < f"{sort_moment(moment)}#"


def _outbox_items(announcements: Sequence[object]) -> list[Model]:
    if not announcements:
        return []

    return outbox.records(announcements, utc_now())


def _commit(event_id: int, fill: Callable[[TransactWrite], None]) -> None:
    """One transaction for the event and its calendar items; its cancellation on a changed or
    deleted event (after the store's retries of a mere race) is a 409 (CONTRACT §6, key `state`).
    A cancellation for throttling is left to the router (503)."""

    try:
        transact(EventRecord._get_connection().connection, fill)
    except TransactWriteError as error:
        if error_code(error) == "TransactionCanceledException" and not is_unavailable(error):
            raise Conflict(
                "state",
                int(event_id),
                "The event was changed or deleted at the same time; read it again and retry.",
            ) from error
        raise
