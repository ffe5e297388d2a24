"""Dates at the calendar's edges (issue 37): years 1 and 9999, with fractions and offsets, are
refused with a 400 naming the field or handled, wherever a date is read or computed (an event's
write and read, the lists, the calendar and its move, the .ics). And an event loaded without
`createdOn` was created when it was loaded."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures import auth

EVENT = "/api/v1/en_US/event"
DATE_KEYS = {"startDate", "endDate", "timeStamp", "calendarStartDate", "calendarEndDate"}


@pytest.fixture
def world(community):
    community.mod = community.user("mod", {community.root: "moderator"})
    return community.load()


def create(api, world, start: str, end: str | None, all_day: bool = False) -> tuple[int, dict]:
    return api.post(
        EVENT,
        world.mod,
        {
            "groupId": world.root,
            "title": "Edge",
            "allDay": all_day,
            "startDate": start,
            "endDate": end,
        },
    )


def test_an_event_on_the_first_day_of_the_calendar_is_stored_and_read(api, world):
    """The Schemathesis find: an update to 0001-01-01T00:00:00Z answered 500 (OverflowError)."""
    status, body = create(api, world, "2026-05-01T10:00:00Z", "2026-05-01T11:00:00Z")
    assert status == 200, body
    event_id = body["object"]["id"]
    edge = "0001-01-01T00:00:00Z"
    status, body = api.put(
        f"{EVENT}/{event_id}", world.mod, {"title": "First", "startDate": edge, "endDate": edge}
    )
    assert status == 200, body
    assert (body["object"]["startDate"], body["object"]["endDate"]) == (edge, edge)
    status, body = api.get(
        f"{EVENT}/list/calendar/{world.root}"
        "?calendarStartDate=0001-01-01T00:00:00Z&calendarEndDate=0001-02-01T00:00:00Z",
        world.mod,
    )
    assert status == 200 and [e["id"] for e in body["object"]["events"]] == [event_id]
    status, body = api.get(f"{EVENT}/list/expired/{world.root}", world.mod)
    assert status == 200 and body["object"]["events"][-1]["id"] == event_id


def test_an_offset_that_leaves_the_calendar_is_a_400_on_its_field(api, world):
    status, body = create(api, world, "0001-01-01T00:30:00+01:00", "2026-01-01T00:00:00Z")
    assert status == 400 and [e["key"] for e in body["errors"]] == ["startDate"]
    assert "0001-01-01T00:00:00Z" in body["errors"][0]["message"]
    status, body = create(api, world, "9999-12-31T23:00:00Z", "9999-12-31T23:30:00-01:00")
    assert status == 400 and "endDate" in [e["key"] for e in body["errors"]]


def test_an_all_day_event_on_the_last_day_of_the_calendar_is_in_the_ics(api, client, world):
    status, body = create(api, world, "9999-12-31T00:00:00Z", None, all_day=True)
    assert status == 200, body
    response = client.http.get(
        f"/api/v1/en_US/feed/{world.root}/events.ics", headers=auth(world.mod)
    )
    assert response.status_code == 200
    text = response.body.decode()
    assert "DTSTART;VALUE=DATE:99991231" in text
    # It ends after the day it starts (issue 51): the day after cannot be written, its length can.
    assert "DURATION:P1D" in text and "DTEND;VALUE=DATE:99991231" not in text


@pytest.mark.parametrize(
    ("sent", "says"),
    [
        ("10000-01-01T00:00:00Z", "is outside the dates Agora can store"),
        ("0000-01-01T00:00:00Z", "is outside the dates Agora can store"),
        ("2026-13-01T00:00:00Z", "month value is outside expected range of 1-12"),
        ("2026-01-01T25:00:00Z", "is not a date and time such as 2026-04-01T09:00:00Z"),
    ],
)
def test_a_date_that_is_not_one_says_why_in_peoples_words(api, world, sent, says):
    created = create(api, world, sent, None, all_day=True)
    calendar = api.get(
        f"{EVENT}/list/calendar/{world.root}?calendarStartDate={sent}"
        "&calendarEndDate=2026-02-01T00:00:00Z",
        world.mod,
    )

    for (status, body), key in ((created, "startDate"), (calendar, "calendarStartDate")):
        assert status == 400 and [e["key"] for e in body["errors"]] == [key], body
        message = body["errors"][0]["message"]
        assert says in message and "separator" not in message and "Input should" not in message


# Moments at the two edges: the first and the last day, with or without a fraction, and an offset
# that keeps them in the calendar or takes them out of it.
EDGE_DAYS = ["0001-01-01", "0001-01-02", "9999-12-30", "9999-12-31"]
times = st.sampled_from(["00:00:00", "00:30:00", "12:00:00", "23:59:59"])
fractions = st.sampled_from(["", ".5", ".999999", ".000001"])
offsets = st.sampled_from(["Z", "+00:00", "+01:00", "-01:00", "+14:00", "-12:00", ""])
edges = st.builds(
    lambda day, time, fraction, offset: f"{day}T{time}{fraction}{offset}",
    st.sampled_from(EDGE_DAYS),
    times,
    fractions,
    offsets,
)


def _answered(status: int, body: dict) -> None:
    """A 200, or a 400 naming a date field: never a 500."""
    assert status in (200, 400), body
    if status == 400:
        assert {e["key"] for e in body["errors"]} <= DATE_KEYS, body["errors"]


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=edges, end=edges, all_day=st.booleans(), period=st.tuples(edges, edges))
def test_edge_dates_are_refused_or_handled_everywhere(
    api, client, world, start, end, all_day, period
):
    status, body = create(api, world, "2026-05-01T10:00:00Z", None, all_day=True)
    assert status == 200, body
    event_id = body["object"]["id"]
    status, body = api.put(
        f"{EVENT}/{event_id}",
        world.mod,
        {"title": "Edge", "allDay": all_day, "startDate": start, "endDate": end},
    )
    _answered(status, body)
    status, body = create(api, world, start, end, all_day)
    _answered(status, body)
    first, last = period
    _answered(*api.get(f"{EVENT}/{event_id}", world.mod))
    for listing in ("upcoming", "expired"):
        query = f"timeStamp={first.replace('+', '%2B')}"
        _answered(*api.get(f"{EVENT}/list/{listing}/{world.root}?{query}", world.mod))
    query = (
        f"calendarStartDate={first.replace('+', '%2B')}&calendarEndDate={last.replace('+', '%2B')}"
    )
    _answered(*api.get(f"{EVENT}/list/calendar/{world.root}?{query}", world.mod))
    moved = {"startDate": start, "calendarStartDate": first, "calendarEndDate": last}
    _answered(*api.put(f"{EVENT}/{event_id}/calendar", world.mod, moved))
    response = client.http.get(
        f"/api/v1/en_US/feed/{world.root}/events.ics", headers=auth(world.mod)
    )
    assert response.status_code == 200
    response = client.http.get(f"/api/v1/en_US/feed/{world.root}", headers=auth(world.mod))
    assert response.status_code == 200


def test_an_event_loaded_without_created_on_was_created_at_the_load(api, community):
    from chalicelib import deps

    community.load()
    event = {
        "id": 77,
        "groupId": community.root,
        "authorId": community.users[0]["id"],
        "title": "Far ahead",
        "startDate": "2099-01-01T10:00:00Z",
        "endDate": "2099-01-01T12:00:00Z",
    }
    before = datetime.now(UTC)
    deps.fixture_service().load({"events": [event]})
    after = datetime.now(UTC)
    body = api.get_object(f"{EVENT}/77", community.users[0]["id"])
    created = datetime.fromisoformat(body["createdOn"].replace("Z", "+00:00"))
    assert before <= created <= after
    # A reload changes nothing, the time included.
    deps.fixture_service().load({"events": [event]})
    assert api.get_object(f"{EVENT}/77", community.users[0]["id"])["createdOn"] == body["createdOn"]
