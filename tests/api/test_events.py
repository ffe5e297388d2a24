"""Events and the calendar (spec "Events"; CONTRACT §5-§8)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlencode

import pytest

from chalicelib import deps
from tests.fixtures import z
from tests.support.seeding import seed_events

EVENT = "/api/v1/en_US/event"
T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def club(community):
    """A private group with a member, a moderator, an administrator, and an outsider."""
    c = community
    c.club = c.group("club", access="private")
    c.town = c.group("town", access="public")
    c.member = c.user("member", {c.club: "member"})
    c.moderator = c.user("moderator", {c.club: "moderator"})
    c.admin = c.user("club-admin", {c.club: "administrator"})
    c.outsider = c.user("outsider")
    c.root_admin = c.users[0]["id"]
    return c.load()


def new_event(**fields):
    body = {
        "title": "Spring fair",
        "startDate": "2026-04-01T09:00:00Z",
        "endDate": "2026-04-01T17:00:00Z",
        "allDay": False,
        "content": "<p>Stalls and music</p>",
        "organizer": "Parish council",
        "location": "Market square",
    }
    body.update(fields)
    return body


def create(api, club, user=None, **fields):
    if "startDate" in fields and "endDate" not in fields:
        start = datetime.fromisoformat(fields["startDate"].replace("Z", "+00:00"))
        fields["endDate"] = z(start + timedelta(hours=1))
    status, body = api.post(EVENT, user or club.moderator, new_event(groupId=club.club, **fields))
    assert status == 200, body
    return body["object"]


def seed(group_id, author_id, starts, title: str | None = None):
    """Events written straight through the repository (fast), ids from the real counter: each
    titled `title`, or numbered."""
    return seed_events(
        group_id,
        starts,
        authors=[author_id],
        written_on=T0,
        title=(lambda _: title) if title else (lambda index: f"Event {index:04d}"),
    )


def listing(api, kind, group_id, user, **params):
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return api.get(f"{EVENT}/list/{kind}/{group_id}?{query}", user)


def ids_of(body):
    return [e["id"] for e in body["object"]["events"]]


# --- create, read, update, delete -------------------------------------------------------------


def test_event_round_trip_create_get_update(api, club):
    # Sent in local time with padding and a script; answered in UTC, trimmed and sanitised.
    sent = {
        "startDate": "2026-04-01T11:00:00+02:00",
        "endDate": "2026-04-01T19:00:00+02:00",
        "title": "  Spring fair  ",
        "content": '<p onclick="steal()">Stalls<script>alert(1)</script></p>',
    }
    created = create(api, club, **sent)
    assert isinstance(created["id"], int) and created["type"] == "event"
    assert created["title"] == "Spring fair"
    assert created["startDate"] == "2026-04-01T09:00:00Z"
    assert created["endDate"] == "2026-04-01T17:00:00Z"
    assert created["content"] == "<p>Stalls</p>"
    assert created["group"]["id"] == club.club and created["group"]["slug"] == "club"
    assert created["author"]["id"] == club.moderator and created["editor"]["id"] == club.moderator
    assert created["createdOn"].endswith("Z") and created["accessWarnings"] == []
    assert created["url"] == f"https://community.example/club/events/{created['id']}"
    assert created["organizer"] == "Parish council" and created["location"] == "Market square"

    status, body = api.get(f"{EVENT}/{created['id']}", club.member)
    assert status == 200 and body["success"] is True
    assert body["object"] == created

    status, body = api.put(
        f"{EVENT}/{created['id']}",
        club.admin,
        new_event(
            title="Summer fair",
            allDay=True,
            startDate="2026-06-01T00:00:00Z",
            endDate=None,
            location="Park",
        ),
    )
    assert status == 200, body
    updated = body["object"]
    assert updated["id"] == created["id"] and updated["title"] == "Summer fair"
    assert updated["allDay"] is True and updated["endDate"] is None
    assert updated["author"]["id"] == club.moderator and updated["editor"]["id"] == club.admin
    assert updated["createdOn"] == created["createdOn"] and updated["group"]["id"] == club.club

    _, body = api.get(f"{EVENT}/{created['id']}", club.member)
    assert body["object"] == updated


def test_event_ids_are_distinct_increasing_integers(api, club):
    first = create(api, club)["id"]
    second = create(api, club)["id"]
    assert second > first


def test_update_can_move_an_event_to_another_group_its_editor_moderates(api, club):
    event = create(api, club, user=club.root_admin)
    status, body = api.put(f"{EVENT}/{event['id']}", club.root_admin, new_event(groupId=club.town))
    assert status == 200 and body["object"]["group"]["id"] == club.town
    _, body = listing(
        api, "calendar", club.club, club.member,
        calendarStartDate="2026-04-01T00:00:00Z", calendarEndDate="2026-05-01T00:00:00Z",
    )  # fmt: skip
    assert ids_of(body) == []
    status, _ = api.put(f"{EVENT}/{event['id']}", club.moderator, new_event(groupId=club.club))
    assert status == 403  # not a moderator of the group the event is now in


def test_delete_answers_the_event_and_then_it_is_gone(api, club):
    event = create(api, club)
    status, body = api.delete(f"{EVENT}/{event['id']}", club.moderator)
    assert status == 200 and body["success"] is True
    assert body["object"] == event
    status, body = api.get(f"{EVENT}/{event['id']}", club.moderator)
    assert status == 404 and body["errors"][0]["key"] == "eventId"
    status, body = api.delete(f"{EVENT}/{event['id']}", club.moderator)
    assert status == 404
    _, body = listing(
        api, "calendar", club.club, club.member,
        calendarStartDate="2026-04-01T00:00:00Z", calendarEndDate="2026-05-01T00:00:00Z",
    )  # fmt: skip
    assert ids_of(body) == []


# --- upcoming and expired ------------------------------------------------------------------


def test_upcoming_ascending_and_expired_descending_around_one_timestamp(api, club):
    starts = [T0 + timedelta(days=d) for d in (3, -2, 1, -5, 0, 2, -1)]
    ids = dict(zip([s for s in starts], seed(club.club, club.moderator, starts), strict=True))
    stamp = z(T0)
    status, body = listing(api, "upcoming", club.club, club.member, timeStamp=stamp)
    assert status == 200
    assert ids_of(body) == [ids[T0 + timedelta(days=d)] for d in (1, 2, 3)]
    assert body["object"]["offset"] == ids[T0 + timedelta(days=3)]
    status, body = listing(api, "expired", club.club, club.member, timeStamp=stamp)
    assert status == 200
    # The event starting exactly at timeStamp is neither greater nor smaller: in neither list.
    assert ids_of(body) == [ids[T0 + timedelta(days=d)] for d in (-1, -2, -5)]


def test_timestamp_defaults_to_the_service_clock(club):
    from chalicelib.schemas.events import EventListQuery
    from chalicelib.services.events import EventService
    from chalicelib.store.events import EventRepository
    from chalicelib.store.users import UserRepository

    before, after = seed(
        club.club, club.moderator, [T0 - timedelta(hours=1), T0 + timedelta(hours=1)]
    )
    groups = deps.group_service()
    service = EventService(EventRepository(), UserRepository(), groups, clock=lambda: T0)
    group = groups.get(club.club)
    assert [e.id for e in service.upcoming(group, EventListQuery()).events] == [after]
    assert [e.id for e in service.expired(group, EventListQuery()).events] == [before]


def test_timestamp_with_an_offset_is_converted_to_utc(api, club):
    inside, _ = seed(
        club.club, club.moderator, [T0 + timedelta(minutes=30), T0 + timedelta(hours=3)]
    )
    # 13:00+02:00 is 11:00Z: both events are upcoming; 14:45+02:00 is 12:45Z: only the second.
    _, body = listing(
        api, "upcoming", club.club, club.member, timeStamp="2026-03-10T13:00:00+02:00"
    )
    assert len(ids_of(body)) == 2
    _, body = listing(
        api, "upcoming", club.club, club.member, timeStamp="2026-03-10T14:45:00+02:00"
    )
    assert inside not in ids_of(body) and len(ids_of(body)) == 1


@pytest.mark.parametrize("kind", ["upcoming", "expired"])
def test_paging_forty_events_in_pages_of_six_has_no_gap_and_no_repeat(api, club, kind):
    # Pairs of events start at the same moment: the order must still be total.
    sign = 1 if kind == "upcoming" else -1
    starts = [T0 + sign * timedelta(days=1 + i // 2) for i in range(40)]
    ids = seed(club.club, club.moderator, starts)
    seen, offset, pages = [], None, 0
    while True:
        status, body = listing(
            api, kind, club.club, club.member, timeStamp=z(T0), pageSize=6, offset=offset
        )
        assert status == 200
        page = ids_of(body)
        if not page:
            assert body["object"]["offset"] == offset
            break
        pages += 1
        assert len(page) <= 6
        seen += page
        offset = body["object"]["offset"]
        assert offset == page[-1]
    assert pages == 7
    assert sorted(seen) == sorted(ids) and len(seen) == 40
    starts_seen = [starts[ids.index(i)] for i in seen]
    assert starts_seen == sorted(starts_seen, reverse=(kind == "expired"))


def test_filter_matches_title_content_location_and_organizer_ignoring_case(api, club):
    matching = [
        create(api, club, title="Jazz NIGHT", startDate="2026-04-02T19:00:00Z", endDate=None, allDay=True)["id"],
        create(api, club, content="<p>live <b>jazz</b> band</p>", startDate="2026-04-03T19:00:00Z")["id"],
        create(api, club, location="Jazz cellar", startDate="2026-04-04T19:00:00Z")["id"],
        create(api, club, organizer="The Jazz Society", startDate="2026-04-05T19:00:00Z")["id"],
    ]  # fmt: skip
    create(api, club, title="Chess", startDate="2026-04-06T19:00:00Z")
    _, body = listing(
        api, "upcoming", club.club, club.member, timeStamp=z(T0), filter="jAzZ", pageSize=3
    )
    assert ids_of(body) == matching[:3]
    _, body = listing(
        api, "upcoming", club.club, club.member, timeStamp=z(T0), filter="jazz",
        offset=body["object"]["offset"],
    )  # fmt: skip
    assert ids_of(body) == matching[3:]


def test_offset_of_an_event_now_on_the_other_side_starts_from_the_beginning(api, club):
    past, first, second = seed(
        club.club,
        club.moderator,
        [T0 - timedelta(days=1), T0 + timedelta(days=1), T0 + timedelta(days=2)],
    )
    _, body = listing(api, "upcoming", club.club, club.member, timeStamp=z(T0), offset=past)
    assert ids_of(body) == [first, second]


# --- calendar ------------------------------------------------------------------------------


def calendar(api, club, start, end, user=None):
    return listing(
        api,
        "calendar",
        club.club,
        user or club.member,
        calendarStartDate=start,
        calendarEndDate=end,
    )


def test_calendar_shows_an_event_from_the_28th_to_the_3rd_in_both_months(api, club):
    spanning = create(
        api,
        club,
        title="Festival",
        startDate="2026-01-28T10:00:00Z",
        endDate="2026-02-03T18:00:00Z",
    )["id"]
    in_january = create(
        api, club, startDate="2026-01-10T10:00:00Z", endDate="2026-01-10T12:00:00Z"
    )["id"]
    in_february = create(
        api, club, startDate="2026-02-14T10:00:00Z", endDate="2026-02-14T12:00:00Z"
    )["id"]
    all_day = create(
        api, club, startDate="2026-02-01T00:00:00Z", endDate=None, allDay=True
    )["id"]  # fmt: skip
    status, body = calendar(api, club, "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z")
    assert status == 200
    assert ids_of(body) == [in_january, spanning]
    assert body["object"]["offset"] == spanning
    _, body = calendar(api, club, "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z")
    assert ids_of(body) == [spanning, all_day, in_february]
    # A period spanning both months lists the long event once.
    _, body = calendar(api, club, "2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z")
    assert ids_of(body) == [in_january, spanning, all_day, in_february]


def test_calendar_period_bounds_are_exact_within_a_month(api, club):
    before = create(api, club, startDate="2026-05-01T08:00:00Z", endDate="2026-05-01T09:00:00Z")[
        "id"
    ]
    across = create(api, club, startDate="2026-05-04T20:00:00Z", endDate="2026-05-05T02:00:00Z")[
        "id"
    ]
    inside = create(api, club, startDate="2026-05-06T10:00:00Z", endDate="2026-05-06T11:00:00Z")[
        "id"
    ]
    at_end = create(api, club, startDate="2026-05-11T00:00:00Z", endDate="2026-05-11T01:00:00Z")[
        "id"
    ]
    long_ago = create(
        api, club, startDate="2025-09-01T00:00:00Z", endDate="2026-05-07T00:00:00Z"
    )["id"]  # fmt: skip
    # A week view: [May 5, May 11) — the end is exclusive, as calendar plugins send it.
    _, body = calendar(api, club, "2026-05-05T00:00:00Z", "2026-05-11T00:00:00Z")
    assert ids_of(body) == [long_ago, across, inside]
    assert before not in ids_of(body) and at_end not in ids_of(body)


def test_calendar_update_through_the_query_string(api, club):
    event = create(api, club, startDate="2026-04-01T09:00:00Z", endDate="2026-04-01T17:00:00Z")
    query = urlencode(
        {
            "startDate": "2026-04-20T10:00:00Z",
            "calendarStartDate": "2026-04-01T00:00:00Z",
            "calendarEndDate": "2026-05-01T00:00:00Z",
        }
    )
    status, body = api.put(f"{EVENT}/{event['id']}/calendar?{query}", club.moderator)
    assert status == 200, body
    moved = body["object"]["events"]
    assert [e["id"] for e in moved] == [event["id"]]
    # No endDate sent: the dragged event keeps its 8 hours.
    assert moved[0]["startDate"] == "2026-04-20T10:00:00Z"
    assert moved[0]["endDate"] == "2026-04-20T18:00:00Z"
    assert moved[0]["allDay"] is False and moved[0]["editor"]["id"] == club.moderator
    _, body = api.get(f"{EVENT}/{event['id']}", club.member)
    assert body["object"]["startDate"] == "2026-04-20T10:00:00Z"


def test_calendar_update_through_a_body_moves_the_event_out_of_the_period(api, club):
    event = create(api, club, startDate="2026-04-01T09:00:00Z", endDate="2026-04-01T17:00:00Z")
    other = create(api, club, startDate="2026-04-02T09:00:00Z", endDate="2026-04-02T10:00:00Z")
    status, body = api.put(
        f"{EVENT}/{event['id']}/calendar",
        club.moderator,
        {
            "startDate": "2026-05-29T00:00:00Z",
            "endDate": None,
            "allDay": True,
            "calendarStartDate": "2026-04-01T00:00:00Z",
            "calendarEndDate": "2026-05-01T00:00:00Z",
        },
    )
    assert status == 200, body
    assert ids_of(body) == [other["id"]]
    _, body = calendar(api, club, "2026-05-01T00:00:00Z", "2026-06-01T00:00:00Z")
    assert ids_of(body) == [event["id"]]
    moved = body["object"]["events"][0]
    assert moved["allDay"] is True and moved["endDate"] is None
    # And the old month no longer holds it.
    _, body = calendar(api, club, "2026-04-01T00:00:00Z", "2026-04-02T00:00:00Z")
    assert ids_of(body) == []


@pytest.mark.parametrize(
    ("query", "body", "named"),
    [
        ("", {}, ["startDate", "calendarStartDate", "calendarEndDate"]),
        ("?startDate=bad", {}, ["startDate", "calendarStartDate", "calendarEndDate"]),
        ("", {"startDate": 5}, ["startDate", "calendarStartDate", "calendarEndDate"]),
        (
            "?calendarEndDate=x",
            {"allDay": "yes"},
            ["calendarEndDate", "allDay", "startDate", "calendarStartDate"],
        ),
        (
            "?startDate=2026-04-10T09:00:00Z",
            {"endDate": "2026-01-01T00:00:00Z"},
            ["endDate", "calendarStartDate", "calendarEndDate"],
        ),
    ],
)
def test_calendar_update_names_every_wrong_or_missing_field_in_one_answer(
    api, club, query, body, named
):
    """A bad value in the query string or the body, and the fields the merged request lacks, are
    one 400: a client fixing one round at a time learnt of the next only by trying again."""
    event = create(api, club)
    status, answer = api.put(f"{EVENT}/{event['id']}/calendar{query}", club.moderator, body)
    assert status == 400 and answer["success"] is False
    assert [error["key"] for error in answer["errors"]] == named
    assert answer["object"] == {**dict(parse_qsl(query.lstrip("?"))), **body}
    _, stored = api.get(f"{EVENT}/{event['id']}", club.member)
    assert stored["object"]["startDate"] == event["startDate"]  # nothing moved


@pytest.mark.parametrize("left", [None, "", "  "])
def test_calendar_update_with_a_needed_date_null_or_blank_says_it_is_required(api, club, left):
    """The body's fields may be null (the query string may hold them), so a needed date sent null
    or blank, and nowhere else, is missing: "is required", as when left out (Schemathesis sent
    `"calendarStartDate": null`, which the document allows, and was told it "must be an ISO 8601
    date"). The query string's value counts where the body's is null."""
    event = create(api, club)
    period = {
        "calendarStartDate": "2026-04-01T00:00:00Z",
        "calendarEndDate": "2026-05-01T00:00:00Z",
    }
    moved = {"startDate": "2026-04-10T09:00:00Z", "endDate": "2026-04-10T10:00:00Z"}
    status, answer = api.put(
        f"{EVENT}/{event['id']}/calendar",
        club.moderator,
        {**moved, **period, "calendarStartDate": left},
    )
    assert status == 400, answer
    assert [(e["key"], e["message"]) for e in answer["errors"]] == [
        ("calendarStartDate", "is required")
    ]
    _, stored = api.get(f"{EVENT}/{event['id']}", club.member)
    assert stored["object"]["startDate"] == event["startDate"]  # nothing moved
    status, answer = api.put(
        f"{EVENT}/{event['id']}/calendar?{urlencode(period)}",
        club.moderator,
        {**moved, "calendarStartDate": left},
    )
    assert status == 200, answer
    assert answer["object"]["events"][0]["startDate"] == "2026-04-10T09:00:00Z"


def test_calendar_update_body_wins_over_the_query_string(api, club):
    event = create(api, club)
    query = urlencode(
        {
            "startDate": "2026-04-10T09:00:00Z",
            "calendarStartDate": "2026-04-01T00:00:00Z",
            "calendarEndDate": "2026-05-01T00:00:00Z",
        }
    )
    status, body = api.put(
        f"{EVENT}/{event['id']}/calendar?{query}",
        club.moderator,
        {"startDate": "2026-04-12T09:00:00Z", "endDate": "2026-04-12T10:00:00Z"},
    )
    assert status == 200, body
    assert body["object"]["events"][0]["startDate"] == "2026-04-12T09:00:00Z"


# --- validation ----------------------------------------------------------------------------


def error_keys(body):
    return [e["key"] for e in body["errors"]]


@pytest.mark.parametrize(
    ("change", "key", "value"),
    [
        ({"title": None}, "title", ""),
        ({"title": "   "}, "title", "   "),
        ({"startDate": None}, "startDate", ""),
        ({"startDate": "next tuesday"}, "startDate", "next tuesday"),
        ({"startDate": 1775000000}, "startDate", "1775000000"),  # Unix time is not ISO 8601
        ({"endDate": "2026-03-31T09:00:00Z"}, "endDate", "2026-03-31T09:00:00Z"),
        ({"endDate": None, "allDay": False}, "endDate", ""),
        ({"endDate": "2029-04-01T09:00:00Z"}, "endDate", "2029-04-01T09:00:00Z"),
        ({"endDate": "1st of April"}, "endDate", "1st of April"),
        ({"groupId": "not-a-guid"}, "groupId", "not-a-guid"),
        ({"groupId": "6a0c1d7e-3b1f-4d8a-9e2c-5f4b3a2d1c0b"}, "groupId", "6a0c1d7e-3b1f-4d8a-9e2c-5f4b3a2d1c0b"),
        ({"content": "x" * 300_001}, "content", None),
    ],
)  # fmt: skip
def test_create_validation_errors_name_the_field(api, club, change, key, value):
    body = {**new_event(groupId=club.club), **change}
    body = {k: v for k, v in body.items() if v is not None or k == "endDate"}
    status, answer = api.post(EVENT, club.moderator, body)
    assert status == 400 and answer["success"] is False
    assert error_keys(answer) == [key]
    if value is not None:
        assert answer["errors"][0]["value"] == value
    assert answer["object"].get("title") == body.get("title")  # the submitted record


def test_update_validates_like_create(api, club):
    event = create(api, club)
    status, body = api.put(
        f"{EVENT}/{event['id']}", club.moderator, new_event(endDate="2026-03-01T00:00:00Z")
    )
    assert status == 400 and error_keys(body) == ["endDate"]


def test_path_and_query_errors_name_the_parameter(api, club):
    status, body = api.get(f"{EVENT}/abc", club.member)
    assert status == 400 and error_keys(body) == ["eventId"]
    status, body = api.get(f"{EVENT}/99999", club.member)
    assert status == 404 and error_keys(body) == ["eventId"]
    status, body = listing(api, "upcoming", club.club, club.member, timeStamp="yesterday")
    assert status == 400 and error_keys(body) == ["timeStamp"]
    for size in (0, 101, "x"):
        status, body = listing(api, "expired", club.club, club.member, pageSize=size)
        assert status == 400 and error_keys(body) == ["pageSize"]
    status, body = listing(api, "upcoming", club.club, club.member, offset=99999)
    assert status == 400 and error_keys(body) == ["offset"]
    status, body = listing(api, "upcoming", "nope", club.member)
    assert status == 400 and error_keys(body) == ["groupId"]
    status, body = listing(api, "upcoming", "6a0c1d7e-3b1f-4d8a-9e2c-5f4b3a2d1c0b", club.member)
    assert status == 404 and error_keys(body) == ["groupId"]
    status, body = calendar(api, club, None, "2026-02-01T00:00:00Z")
    assert status == 400 and error_keys(body) == ["calendarStartDate"]
    status, body = calendar(api, club, "2026-02-01T00:00:00Z", "2026-01-01T00:00:00Z")
    assert status == 400 and error_keys(body) == ["calendarEndDate"]
    assert body["errors"][0]["value"] == "2026-01-01T00:00:00Z"


def test_offset_of_an_event_in_another_group_is_400(api, club):
    other = seed(club.town, club.moderator, [T0 + timedelta(days=1)])[0]
    status, body = listing(api, "upcoming", club.club, club.member, offset=other)
    assert status == 400 and error_keys(body) == ["offset"]


def test_calendar_update_validation(api, club):
    event = create(api, club)
    path = f"{EVENT}/{event['id']}/calendar"
    period = {
        "calendarStartDate": "2026-04-01T00:00:00Z",
        "calendarEndDate": "2026-05-01T00:00:00Z",
    }
    status, body = api.put(path, club.moderator, period)
    assert status == 400 and error_keys(body) == ["startDate"]
    status, body = api.put(path, club.moderator, {**period, "startDate": "soon"})
    assert status == 400 and error_keys(body) == ["startDate"]
    status, body = api.put(path, club.moderator, {"startDate": "2026-04-03T00:00:00Z"})
    assert status == 400 and sorted(error_keys(body)) == ["calendarEndDate", "calendarStartDate"]
    # A timed event cannot lose its end.
    query = urlencode({**period, "startDate": "2026-04-03T00:00:00Z", "endDate": ""})
    status, body = api.put(f"{path}?{query}", club.moderator)
    assert status == 400 and error_keys(body) == ["endDate"]
    status, body = api.put(
        path,
        club.moderator,
        {**period, "startDate": "2026-04-03T10:00:00Z", "endDate": "2026-04-03T09:00:00Z"},
    )
    assert status == 400 and error_keys(body) == ["endDate"]
    assert body["errors"][0]["value"] == "2026-04-03T09:00:00Z"
    _, body = api.get(f"{EVENT}/{event['id']}", club.member)
    assert body["object"]["startDate"] == event["startDate"]  # nothing moved


# --- privileges ----------------------------------------------------------------------------


def test_every_event_route_needs_a_token(api, club):
    event = create(api, club)
    calls = [
        ("GET", f"{EVENT}/{event['id']}", None),
        ("POST", EVENT, new_event(groupId=club.club)),
        ("PUT", f"{EVENT}/{event['id']}", new_event(groupId=club.club)),
        ("DELETE", f"{EVENT}/{event['id']}", None),
        ("GET", f"{EVENT}/list/upcoming/{club.club}", None),
        ("GET", f"{EVENT}/list/expired/{club.club}", None),
        ("GET", f"{EVENT}/list/calendar/{club.club}?calendarStartDate=2026-04-01&calendarEndDate=2026-05-01", None),
        ("PUT", f"{EVENT}/{event['id']}/calendar", {"startDate": "2026-04-02T00:00:00Z"}),
    ]  # fmt: skip
    for method, path, body in calls:
        status, answer = api.call(method, path, None, body)
        assert status == 401 and answer["success"] is False, (method, path)


def test_private_group_events_are_read_by_members_only(api, club):
    event = create(api, club)
    for user in (club.member, club.moderator, club.root_admin):
        status, _ = api.get(f"{EVENT}/{event['id']}", user)
        assert status == 200
    status, _ = api.get(f"{EVENT}/{event['id']}", club.outsider)
    assert status == 403
    for kind in ("upcoming", "expired"):
        status, _ = listing(api, kind, club.club, club.outsider)
        assert status == 403
    status, _ = calendar(api, club, "2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z", club.outsider)
    assert status == 403


def test_public_group_events_are_read_by_any_signed_in_user(api, club):
    seed(club.town, club.root_admin, [T0 + timedelta(days=1)])
    status, body = listing(api, "upcoming", club.town, club.outsider, timeStamp=z(T0))
    assert status == 200 and len(ids_of(body)) == 1


def test_members_may_not_write_events_moderators_and_administrators_may(api, club):
    event = create(api, club)
    status, body = api.post(EVENT, club.member, new_event(groupId=club.club))
    assert status == 403 and body["success"] is False
    status, _ = api.put(f"{EVENT}/{event['id']}", club.member, new_event(groupId=club.club))
    assert status == 403
    status, _ = api.put(
        f"{EVENT}/{event['id']}/calendar",
        club.member,
        {"startDate": "2026-04-02T00:00:00Z", "calendarStartDate": "2026-04-01T00:00:00Z",
         "calendarEndDate": "2026-05-01T00:00:00Z"},
    )  # fmt: skip
    assert status == 403
    status, _ = api.delete(f"{EVENT}/{event['id']}", club.member)
    assert status == 403
    status, _ = api.post(EVENT, club.outsider, new_event(groupId=club.town))
    assert status == 403  # a public group still needs a moderator to write
    create(api, club, user=club.admin)
    create(api, club, user=club.root_admin)
    status, _ = api.delete(f"{EVENT}/{event['id']}", club.admin)
    assert status == 200


# --- store guarantees ----------------------------------------------------------------------


def test_a_concurrent_edit_of_the_same_event_is_a_conflict(api, club):
    from chalicelib.errors import Conflict
    from chalicelib.store.events import EventRepository

    event_id = create(api, club)["id"]
    repository = EventRepository()
    first, second = repository.get(event_id), repository.get(event_id)
    repository.update(first, replace(first, title="First edit"))
    with pytest.raises(Conflict):
        repository.update(second, replace(second, start_date=T0))
    # The calendar still matches the stored event (April, not March).
    _, body = calendar(api, club, "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z")
    assert [e["title"] for e in body["object"]["events"]] == ["First edit"]


def test_upcoming_page_in_a_group_of_600_events_reads_only_its_page(api, club, dynamo_counter):
    # 600 small events fit in one Query's 1 MB: a Query without the page's Limit would read them
    # all in one request, so the item count below tells a page from the whole group.
    seed(club.club, club.moderator, [T0 + timedelta(hours=i - 300) for i in range(600)])
    _, first = listing(api, "upcoming", club.club, club.member, timeStamp=z(T0))
    dynamo_counter.reset()
    status, body = listing(
        api, "upcoming", club.club, club.member, timeStamp=z(T0), offset=first["object"]["offset"]
    )
    assert status == 200 and len(ids_of(body)) == 15
    assert "Scan" not in dynamo_counter.requests
    assert dynamo_counter.requests["Query"] == 1
    # user, group, offset event, the page, its authors: O(15) items, not O(600).
    assert dynamo_counter.items_read <= 15 + 5


def test_a_calendar_month_reads_only_the_events_of_that_month(api, club, dynamo_counter):
    # Three years of daily events, plus one long event that began before the period.
    seed(club.club, club.moderator, [T0 + timedelta(days=i - 550) for i in range(1095)])
    long_event = create(api, club, startDate="2026-01-15T00:00:00Z", endDate="2026-03-20T00:00:00Z")
    dynamo_counter.reset()
    status, body = calendar(api, club, "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z")
    assert status == 200 and len(ids_of(body)) == 31 + 1
    assert ids_of(body)[0] == long_event["id"]
    assert "Scan" not in dynamo_counter.requests
    # 32 calendar items and the 32 events they name, plus user and group.
    assert dynamo_counter.items_read <= 2 * 32 + 5
