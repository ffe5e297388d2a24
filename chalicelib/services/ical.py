"""The group calendar feed: iCalendar (RFC 5545) of a group's events, made with `icalendar`.

One VEVENT per event that starts `LOOK_BACK` ago or later (at most `MAX_EVENTS`, earliest first):

- UID `event-<id>@<host of AGORA_BASE_URL>`: stable, so a calendar app updates an event in place.
- DTSTAMP and LAST-MODIFIED are the event's `modifiedOn`: an unchanged calendar is byte-for-byte
  the same, so its ETag holds and readers get a 304.
- All-day events have DATE values; DTEND is exclusive (RFC 5545 §3.6.1): the day after the last
  day the event occupies (an all-day event without `endDate` takes its one day); DURATION in its
  place where that day would be after 9999-12-31. Timed events have UTC DATE-TIME values.
- ORGANIZER is free text in Agora. RFC 5545 wants a calendar address there, so the text goes in
  `CN` and the address is `mailto:` the text when it is an email address, else the conventional
  `invalid:nomail` (as Apple Calendar writes for people without one).
- DESCRIPTION is the plain text of the sanitised HTML; URL the event's permalink.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from email.utils import parseaddr
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from chalicelib.domain.events import Event
from chalicelib.domain.groups import Group
from chalicelib.domain.ports.content import EventStore
from chalicelib.sanitize import html_to_text
from chalicelib.services.events import event_url
from chalicelib.services.links import base_url

if TYPE_CHECKING:
    from icalendar import Event as CalendarEvent
    from icalendar import vCalAddress

LOOK_BACK = timedelta(days=90)
MAX_EVENTS = 1000
CONTENT_TYPE = "text/calendar"
NO_ADDRESS = "invalid:nomail"


class IcalService:
    def __init__(self, events: EventStore, clock: Callable[[], datetime]) -> None:
        self.events = events
        self.clock = clock

    def calendar(self, group: Group) -> str:
        records = self.events.page(
            group.id,
            moment=self.clock() - LOOK_BACK,
            upcoming=True,
            limit=MAX_EVENTS,
            after=None,
            text=None,
        )
        return render_calendar(group, records)


def etag_of(body: str) -> str:
    return '"' + hashlib.sha256(body.encode()).hexdigest()[:32] + '"'


def matches(if_none_match: str | None, etag: str) -> bool:
    """`If-None-Match` (a list, possibly weak validators, or `*`) names this representation."""
    if not if_none_match:
        return False
    candidates = [c.strip() for c in if_none_match.split(",")]
    return "*" in candidates or any(c.removeprefix("W/") == etag for c in candidates)


def all_day_span(start: datetime, end: datetime | None) -> tuple[date, int]:
    """First day of an all-day event and the number of days it occupies (at least one)."""
    first = start.astimezone(UTC).date()
    if end is None:
        return first, 1
    end = end.astimezone(UTC)
    # An end at midnight is exclusive; any later time still occupies that day.
    last = end.date() - timedelta(days=1) if end.time() == time(0) else end.date()
    return first, max((last - first).days + 1, 1)


def add_all_day_span(event: CalendarEvent, start: datetime, end: datetime | None) -> None:
    """DTSTART and its exclusive DTEND (RFC 5545 §3.6.1); or, when that day would be after
    9999-12-31 (which no DATE can write), DURATION in days, which says the same: the event
    still ends after the day it starts, not on it."""
    first, days = all_day_span(start, end)
    event.add("dtstart", first)
    if (date.max - first).days >= days:
        event.add("dtend", first + timedelta(days=days))
    else:
        event.add("duration", timedelta(days=days))


# icalendar (70 ms at `import app`, bench/hidden_imports.py --cost) is imported when a calendar
# is written: only the calendar feed's route needs it.
def organizer_value(text: str) -> vCalAddress:
    from icalendar import vCalAddress

    name, address = parseaddr(text)
    is_address = "@" in address and " " not in address and address == text.strip("<> ")
    value = vCalAddress(f"mailto:{address}" if is_address else NO_ADDRESS)
    value.params["CN"] = name or text
    return value


def plain_text(markup: str) -> str:
    """Text of sanitised HTML with its paragraphs and line breaks kept as lines."""

    lines = re.sub(r"(?i)<br\s*/?>|</(p|div|li|h[1-6]|blockquote|pre|tr)>", "\n", markup)
    return re.sub(r"\n{3,}", "\n\n", html_to_text(lines)).strip()


def render_calendar(group: Group, records: Sequence[Event]) -> str:
    from icalendar import Calendar
    from icalendar import Event as CalendarEvent

    host = urlsplit(base_url()).hostname or "localhost"
    calendar = Calendar()
    calendar.add("prodid", "-//Agora//Group events//EN")
    calendar.add("version", "2.0")
    calendar.add("calscale", "GREGORIAN")
    calendar.add("method", "PUBLISH")
    # Names the calendar in Apple, Google and Outlook when subscribed.
    calendar.add("x-wr-calname", group.name)
    for record in records:
        event = CalendarEvent()
        event.add("uid", f"event-{record.id}@{host}")
        modified = record.modified_on.astimezone(UTC)
        event.add("dtstamp", modified)
        event.add("last-modified", modified)
        if record.all_day:
            add_all_day_span(event, record.start_date, record.end_date)
        else:
            start = record.start_date.astimezone(UTC)
            event.add("dtstart", start)
            event.add("dtend", (record.end_date or record.start_date).astimezone(UTC))
        event.add("summary", record.title)
        if record.location:
            event.add("location", record.location)
        if record.organizer:
            event.add("organizer", organizer_value(record.organizer))
        description = plain_text(record.content or "")
        if description:
            event.add("description", description)
        event.add("url", event_url(group, record.id))
        calendar.add_component(event)
    text: bytes = calendar.to_ical()
    return text.decode("utf-8")
