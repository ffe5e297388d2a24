"""Calendar rules (CONTRACT §8, spec "Events" and the iCal feed) without AWS: end dates, all-day
spans, the months an event touches, the feed's representation and the event service's privileges,
moves and lists on the in-memory repositories."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest

from chalicelib.api.routing import validate
from chalicelib.auth import Caller, Need
from chalicelib.domain.announcements import EventCreated, EventDeleted, EventMoved
from chalicelib.domain.events import Event
from chalicelib.errors import Conflict, Forbidden, ValidationFailed
from chalicelib.schemas.events import (
    MAX_EVENT_DURATION,
    CalendarMove,
    CalendarQuery,
    EventCreate,
    EventListQuery,
    EventUpdate,
    end_date_problem,
)
from chalicelib.services import ical
from chalicelib.services.events import EventService
from chalicelib.services.groups import GroupService
from chalicelib.store.base import sort_moment
from chalicelib.store.events import months_between, occupied_until, start_key_of
from tests.support import NOW, fakes

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
GARDEN = str(uuid.uuid5(uuid.NAMESPACE_URL, "garden"))
LAWN = str(uuid.uuid5(uuid.NAMESPACE_URL, "lawn"))
ROOT = str(uuid.uuid5(uuid.NAMESPACE_URL, "root"))


# --- dates ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("end", "all_day", "problem"),
    [
        (None, True, None),
        (None, False, "is required unless the event lasts all day (allDay true)"),
        (NOW, False, None),
        (NOW + HOUR, False, None),
        (NOW - timedelta(seconds=1), False, "must not be before startDate"),
        (NOW - timedelta(seconds=1), True, "must not be before startDate"),
        (NOW + MAX_EVENT_DURATION, False, None),
        (
            NOW + MAX_EVENT_DURATION + timedelta(seconds=1),
            True,
            "must be at most 731 days after startDate",
        ),
    ],
)
def test_an_end_date_is_checked_against_the_start_and_the_kind(end, all_day, problem):
    assert end_date_problem(NOW, end, all_day) == problem


@pytest.mark.parametrize(
    ("end", "all_day", "until"),
    [
        (None, True, NOW + DAY),
        (None, False, NOW),
        (NOW + HOUR, False, NOW + HOUR),
        (NOW + HOUR, True, NOW + HOUR),
    ],
)
def test_an_event_occupies_its_span_or_its_day_when_all_day_without_end(end, all_day, until):
    assert occupied_until(NOW, end, all_day) == until


@pytest.mark.parametrize(
    ("first", "last", "months"),
    [
        (NOW, NOW, ["2026-11"]),
        (NOW, NOW + timedelta(days=45), ["2026-11", "2026-12", "2027-01"]),
        (
            datetime(2026, 1, 31, tzinfo=UTC),
            datetime(2026, 3, 1, tzinfo=UTC),
            ["2026-01", "2026-02", "2026-03"],
        ),
        (NOW, NOW - 30 * DAY, []),
    ],
)
def test_an_event_touches_every_month_from_its_start_to_its_end(first, last, months):
    assert months_between(first, last) == months


def test_start_keys_order_by_moment_then_id_whatever_the_offset_of_the_moment():
    plus_two = datetime(2026, 11, 21, 12, 0, tzinfo=UTC).astimezone(timezone(timedelta(hours=2)))
    assert sort_moment(plus_two) == sort_moment(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    keys = [start_key_of(NOW, 10), start_key_of(NOW, 9), start_key_of(NOW - HOUR, 99)]
    assert sorted(keys) == [keys[2], keys[1], keys[0]]
    assert len(sort_moment(NOW)) == len(sort_moment(NOW.replace(microsecond=5)))


# --- the iCal feed --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "span"),
    [
        (NOW, None, (date(2026, 11, 21), 1)),
        (NOW, datetime(2026, 11, 23, tzinfo=UTC), (date(2026, 11, 21), 2)),
        (NOW, datetime(2026, 11, 23, 0, 1, tzinfo=UTC), (date(2026, 11, 21), 3)),
        (NOW, NOW, (date(2026, 11, 21), 1)),
    ],
)
def test_an_all_day_span_counts_the_days_up_to_its_exclusive_end(start, end, span):
    assert ical.all_day_span(start, end) == span


@pytest.mark.parametrize(
    ("start", "end", "written"),
    [
        (NOW, None, {"DTSTART": "20261121", "DTEND": "20261122"}),
        (datetime(9999, 12, 30, tzinfo=UTC), None, {"DTSTART": "99991230", "DTEND": "99991231"}),
        (datetime(9999, 12, 31, tzinfo=UTC), None, {"DTSTART": "99991231", "DURATION": "P1D"}),
        (
            datetime(9999, 12, 30, tzinfo=UTC),
            datetime(9999, 12, 31, 12, tzinfo=UTC),
            {"DTSTART": "99991230", "DURATION": "P2D"},
        ),
    ],
)
def test_an_all_day_event_ends_after_the_day_it_starts_up_to_the_last_date(start, end, written):
    from icalendar import Event

    event = Event()
    ical.add_all_day_span(event, start, end)

    assert {name: value.to_ical().decode() for name, value in event.items()} == written


@pytest.mark.parametrize(
    ("header", "matched"),
    [
        (None, False),
        ("", False),
        ("*", True),
        ('"abc"', True),
        ('W/"abc"', True),
        ('"x", "abc"', True),
        ('"abcd"', False),
    ],
)
def test_if_none_match_names_the_representation(header, matched):
    assert ical.matches(header, '"abc"') is matched


def test_an_etag_is_the_same_for_the_same_body_only():
    assert ical.etag_of("a") == ical.etag_of("a") != ical.etag_of("b")
    assert ical.etag_of("a").startswith('"') and len(ical.etag_of("a")) == 34


@pytest.mark.parametrize(
    ("text", "address", "name"),
    [
        ("ann@example.org", "mailto:ann@example.org", "ann@example.org"),
        ("<ann@example.org>", "mailto:ann@example.org", "<ann@example.org>"),
        ("Ann <ann@example.org>", ical.NO_ADDRESS, "Ann"),
        ("The garden club", ical.NO_ADDRESS, "The garden club"),
    ],
)
def test_an_organizer_is_an_address_only_when_written_as_one(text, address, name):
    value = ical.organizer_value(text)
    assert (str(value), value.params["CN"]) == (address, name)


def test_a_description_keeps_paragraphs_and_line_breaks_as_lines():
    assert ical.plain_text("<p>One</p><p>Two<br>Three</p>") == "One\nTwo\nThree"


def feed_lines(records: list[Any]) -> list[str]:
    body = ical.render_calendar(fakes.group(GARDEN, name="Garden", slug="garden"), records)
    return body.replace("\r\n ", "").split("\r\n")


def test_the_feed_gives_all_day_events_dates_and_timed_events_moments():
    repo = fakes.FakeEventRepository()
    all_day = repo.create(new_event(repo, NOW, all_day=True, title="Fair"))
    timed = repo.create(new_event(repo, NOW, end_date=NOW + HOUR, title="Talk"))
    open_ended = repo.create(new_event(repo, NOW + DAY, title="Walk"))
    lines = feed_lines([all_day, timed, open_ended])
    assert "X-WR-CALNAME:Garden" in lines
    assert "DTSTART;VALUE=DATE:20261121" in lines and "DTEND;VALUE=DATE:20261122" in lines
    assert "DTSTART:20261121T100000Z" in lines and "DTEND:20261121T110000Z" in lines
    assert lines.count("DTSTART:20261122T100000Z") == lines.count("DTEND:20261122T100000Z") == 1
    assert f"UID:event-{int(timed.id)}@community.example" in lines


def test_the_feed_looks_back_ninety_days():
    repo = fakes.FakeEventRepository()
    old = repo.create(new_event(repo, NOW - timedelta(days=91), end_date=NOW - timedelta(days=91)))
    recent = repo.create(
        new_event(repo, NOW - timedelta(days=80), end_date=NOW - timedelta(days=80))
    )
    body = ical.IcalService(repo, lambda: NOW).calendar(fakes.group(GARDEN))
    assert f"event-{int(recent.id)}@" in body and f"event-{int(old.id)}@" not in body


def new_event(repo: Any, start: datetime, **values: Any) -> Event:
    return fakes.event(repo.next_id(), start, group_id=GARDEN, created_on=NOW, **values)


# --- the event service ----------------------------------------------------------------------------


class World:
    def __init__(self) -> None:
        self.groups = fakes.FakeGroupRepository(
            fakes.group(ROOT),
            fakes.group(GARDEN, parent_id=ROOT, name="Garden", slug="garden"),
            fakes.group(LAWN, parent_id=ROOT, access="private", slug="lawn"),
        )
        self.users = fakes.FakeUserRepository()
        self.events = fakes.FakeEventRepository()
        self.service = EventService(self.events, self.users, GroupService(self.groups), lambda: NOW)
        self.moderator = self.person("mo", {GARDEN: "moderator", LAWN: "moderator"})
        self.member = self.person("ann", {GARDEN: "member"})
        self.stranger = self.person("bob", {})

    def person(self, user_id: str, memberships: dict[str, str]) -> Caller:
        user = fakes.user(
            id=user_id,
            alias=user_id.title(),
            slug=user_id,
            email=f"{user_id}@x",
            memberships=memberships,
        )
        self.users.save(user)
        return Caller.of(user, ROOT)

    def create(self, start: datetime = NOW + DAY, **body: Any) -> Any:
        payload = {
            "groupId": GARDEN,
            "title": "Meet",
            "startDate": start.isoformat(),
            "allDay": True,
            **body,
        }
        return self.service.create(EventCreate.model_validate(payload), self.moderator)

    def move(self, event_id: int, caller: Caller | None = None, **sent: Any) -> Any:
        caller = caller or self.moderator
        period = {
            "calendarStartDate": (NOW - 30 * DAY).isoformat(),
            "calendarEndDate": (NOW + 60 * DAY).isoformat(),
        }
        found = self.service.find(event_id, caller, Need.MODERATOR)
        # Read as the view reads it: an end before the start is the model's 400, as sent.
        move = validate(CalendarMove, {**period, **sent}, json_types=False)
        return self.service.move(found, move, caller, sent)


@pytest.fixture
def w() -> World:
    return World()


def test_a_moderator_creates_an_event_stored_clean_and_searchable(w):
    out = w.create(content="<p>Bring <script>x</script>seeds</p>", location="Shed", title="Swap")
    stored = w.events.get(out.id)
    assert "<script>" not in stored.content and "seeds" in stored.content
    for text in ("swap", "seeds", "shed"):  # its title, content and location, lower-cased
        found = w.events.page(GARDEN, moment=NOW, upcoming=True, limit=10, after=None, text=text)
        assert [e.id for e in found] == [out.id]
    assert (out.author.id, out.editor.id, out.group.slug) == ("mo", "mo", "garden")
    assert out.url.endswith(f"/garden/events/{out.id}")
    assert [type(e) for e in w.events.outbox.announcements] == [EventCreated]


def test_a_member_may_not_create_an_event(w):
    body = EventCreate.model_validate(
        {"groupId": GARDEN, "title": "Meet", "startDate": NOW.isoformat(), "allDay": True}
    )
    with pytest.raises(Forbidden):
        w.service.create(body, w.member)


def test_an_event_in_an_unknown_group_is_a_validation_error_of_group_id(w):
    body = EventCreate.model_validate(
        {
            "groupId": str(uuid.uuid4()),
            "title": "Meet",
            "startDate": NOW.isoformat(),
            "allDay": True,
        }
    )
    with pytest.raises(ValidationFailed) as raised:
        w.service.create(body, w.moderator)
    assert raised.value.errors[0].key == "groupId"


def test_a_stranger_may_read_a_public_groups_event_but_not_a_private_groups(w):
    public = w.create()
    private = w.create(groupId=LAWN)
    assert w.service.get(public.id, w.stranger).id == public.id
    with pytest.raises(Forbidden):
        w.service.get(private.id, w.stranger)


def test_an_update_moves_the_event_to_another_group_only_where_the_caller_moderates(w):
    out = w.create()
    found = w.service.find(out.id, w.moderator, Need.MODERATOR)
    body = EventUpdate.model_validate(
        {"groupId": LAWN, "title": "Moved", "startDate": NOW.isoformat(), "allDay": True}
    )
    assert w.service.update(found, body, w.moderator).group.id == LAWN
    assert w.events.get(out.id).group_id == LAWN


def test_an_update_of_an_event_changed_since_it_was_read_is_a_409(w):
    out = w.create()
    need = Need.MODERATOR
    mine = w.service.find(out.id, w.moderator, need)
    theirs = w.service.find(out.id, w.moderator, need)
    body = EventUpdate.model_validate(
        {"title": "Theirs", "startDate": NOW.isoformat(), "allDay": True}
    )
    w.service.update(theirs, body, w.moderator)
    with pytest.raises(Conflict):
        w.service.update(mine, body, w.moderator)


def test_a_moved_event_keeps_its_duration_when_no_end_is_sent(w):
    out = w.create(allDay=False, endDate=(NOW + DAY + 2 * HOUR).isoformat())
    page = w.move(out.id, startDate=(NOW + 3 * DAY).isoformat())
    stored = w.events.get(out.id)
    assert stored.end_date - stored.start_date == 2 * HOUR
    assert [e.id for e in page.events] == [out.id]
    assert EventMoved in [type(e) for e in w.events.outbox.announcements]


def test_a_move_with_an_end_before_the_start_is_refused_as_sent(w):
    out = w.create(allDay=False, endDate=(NOW + DAY + HOUR).isoformat())
    with pytest.raises(ValidationFailed) as raised:
        w.move(out.id, startDate=(NOW + 3 * DAY).isoformat(), endDate=(NOW + 2 * DAY).isoformat())
    assert (raised.value.errors[0].key, raised.value.errors[0].value) == (
        "endDate",
        (NOW + 2 * DAY).isoformat(),
    )


def test_a_timed_event_moved_to_all_day_may_drop_its_end(w):
    out = w.create(allDay=False, endDate=(NOW + DAY + HOUR).isoformat())
    w.move(out.id, startDate=(NOW + 2 * DAY).isoformat(), endDate=None, allDay=True)
    stored = w.events.get(out.id)
    assert (stored.all_day, stored.end_date) == (True, None)


def test_a_timed_event_without_an_end_cannot_be_moved_to_stay_timed(w):
    out = w.create()
    with pytest.raises(ValidationFailed):
        w.move(out.id, startDate=(NOW + 2 * DAY).isoformat(), allDay=False)


def test_an_event_moved_out_of_the_period_is_not_answered_in_it(w):
    out = w.create()
    page = w.move(out.id, startDate=(NOW + 90 * DAY).isoformat())
    assert page.events == [] and page.offset is None


def test_only_a_moderator_deletes_an_event_and_the_deletion_is_announced(w):
    out = w.create()
    with pytest.raises(Forbidden):
        w.service.delete(out.id, w.member)
    assert w.service.delete(out.id, w.moderator).id == out.id
    assert w.events.get(out.id) is None
    assert type(w.events.outbox.announcements[-1]) is EventDeleted


def test_upcoming_ascends_from_now_and_expired_descends(w):
    past = [w.create(start=NOW - d * DAY).id for d in (1, 2)]
    coming = [w.create(start=NOW + d * DAY).id for d in (1, 2, 3)]
    garden = w.groups.get(GARDEN)
    first = w.service.upcoming(garden, EventListQuery(pageSize=2))
    assert [e.id for e in first.events] == coming[:2] and first.offset == coming[1]
    rest = w.service.upcoming(garden, EventListQuery(pageSize=2, offset=first.offset))
    assert [e.id for e in rest.events] == coming[2:]
    assert [e.id for e in w.service.expired(garden, EventListQuery()).events] == past


def test_a_time_stamp_moves_the_line_between_upcoming_and_expired(w):
    early, late = w.create(start=NOW + DAY).id, w.create(start=NOW + 5 * DAY).id
    garden = w.groups.get(GARDEN)
    query = EventListQuery(timeStamp=(NOW + 3 * DAY).isoformat())
    assert [e.id for e in w.service.upcoming(garden, query).events] == [late]
    assert [e.id for e in w.service.expired(garden, query).events] == [early]


def test_an_event_offset_from_another_group_is_refused(w):
    theirs = w.create(groupId=LAWN)
    with pytest.raises(ValidationFailed):
        w.service.upcoming(w.groups.get(GARDEN), EventListQuery(offset=theirs.id))


def test_the_calendar_lists_what_overlaps_the_period_by_start(w):
    long = w.create(start=NOW - 10 * DAY, allDay=False, endDate=(NOW + DAY).isoformat()).id
    inside = w.create(start=NOW + 2 * DAY).id
    w.create(start=NOW + 20 * DAY)
    query = CalendarQuery.model_validate(
        {"calendarStartDate": NOW.isoformat(), "calendarEndDate": (NOW + 7 * DAY).isoformat()}
    )
    page = w.service.calendar(w.groups.get(GARDEN), query)
    assert [e.id for e in page.events] == [long, inside] and page.offset == inside
