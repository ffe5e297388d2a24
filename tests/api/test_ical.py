"""The group calendar feed (RFC 5545) and feed keys (`?key=` on the RSS and iCalendar feeds)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import feedparser
import pytest

from tests.fixtures import auth, garden_and_photos, z

EVENT = "/api/v1/en_US/event"


def ics_path(group_id: str) -> str:
    return f"/api/v1/en_US/feed/{group_id}/events.ics"


def key_path(user_id: str) -> str:
    return f"/api/v1/en_US/user/{user_id}/feed-key"


@pytest.fixture
def world(community):
    c = garden_and_photos(community)
    c.mod = c.user("mod", {c.garden: "moderator", c.photos: "moderator"})
    c.member = c.user("member", {c.photos: "member"})
    c.outsider = c.user("outsider")
    c.pier = c.post(c.photos, c.mod, title="Pier at dusk", slug="pier")
    return c.load()


def create_event(api, world, group_id, title: str, start: datetime, end: datetime | None, **fields):
    """The moderator's event `title` from `start` to `end` (None: open-ended) in the group."""
    body = {
        "groupId": group_id,
        "title": title,
        "allDay": False,
        "startDate": z(start),
        "endDate": None if end is None else z(end),
        **fields,
    }
    status, answer = api.post(EVENT, world.mod, body)
    assert status == 200, answer
    return answer["object"]["id"]


def parse(body: bytes):
    from icalendar import Calendar

    return Calendar.from_ical(body)


def by_summary(calendar) -> dict:
    return {str(event["SUMMARY"]): event for event in calendar.walk("VEVENT")}


def test_calendar_of_timed_all_day_and_multi_day_events_parses_with_their_values(
    api, client, world
):
    day = (datetime.now(UTC) + timedelta(days=10)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    timed = create_event(
        api,
        world,
        world.garden,
        "Pruning workshop",
        day + timedelta(hours=9, minutes=30),
        day + timedelta(hours=11),
        location="Shed, Lane 3",
        organizer="Ann Gardener",
        content="<p>Bring <b>gloves</b>; tea after.</p><p>Second line</p>",
    )
    one_day = create_event(api, world, world.garden, "Open day", day, None, allDay=True)
    multi = create_event(
        api,
        world,
        world.garden,
        "Plant fair",
        day + timedelta(days=2),
        day + timedelta(days=4, hours=18),
        allDay=True,
        organizer="fair@example.org",
    )
    long_ago = day - timedelta(days=130)
    create_event(api, world, world.garden, "Long ago", long_ago, long_ago + timedelta(hours=1))

    response = client.http.get(ics_path(world.garden))
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/calendar; charset=utf-8"
    calendar = parse(response.body)
    assert str(calendar["VERSION"]) == "2.0"
    events = by_summary(calendar)
    assert sorted(events) == ["Open day", "Plant fair", "Pruning workshop"]  # 90 days back on

    workshop = events["Pruning workshop"]
    assert str(workshop["UID"]) == f"event-{timed}@community.example"
    assert workshop.decoded("DTSTART") == day + timedelta(hours=9, minutes=30)
    assert workshop.decoded("DTSTART").tzinfo is not None
    assert workshop.decoded("DTEND") == day + timedelta(hours=11)
    assert str(workshop["LOCATION"]) == "Shed, Lane 3"
    assert workshop["ORGANIZER"].params["CN"] == "Ann Gardener"
    assert str(workshop["DESCRIPTION"]) == "Bring gloves; tea after.\nSecond line"
    assert str(workshop["URL"]) == f"https://community.example/garden/events/{timed}"
    assert isinstance(workshop.decoded("DTSTAMP"), datetime)
    assert isinstance(workshop.decoded("LAST-MODIFIED"), datetime)

    open_day = events["Open day"]
    assert str(open_day["UID"]) == f"event-{one_day}@community.example"
    assert open_day.decoded("DTSTART") == day.date()
    assert open_day.decoded("DTEND") == day.date() + timedelta(days=1)  # exclusive end
    assert type(open_day.decoded("DTSTART")) is date

    fair = events["Plant fair"]
    assert str(fair["UID"]) == f"event-{multi}@community.example"
    assert fair.decoded("DTSTART") == day.date() + timedelta(days=2)
    # Ends on the 4th day after at 18:00: that day is the last one it occupies.
    assert fair.decoded("DTEND") == day.date() + timedelta(days=5)
    assert str(fair["ORGANIZER"]) == "mailto:fair@example.org"


def test_second_fetch_with_the_etag_is_304_and_a_change_makes_a_new_etag(api, client, world):
    start = datetime.now(UTC) + timedelta(days=3)
    event_id = create_event(api, world, world.garden, "Fair", start, start + timedelta(hours=2))
    first = client.http.get(ics_path(world.garden))
    etag = first.headers["ETag"]
    again = client.http.get(ics_path(world.garden), headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.body == b"" and again.headers["ETag"] == etag
    assert client.http.get(ics_path(world.garden)).body == first.body  # stable bytes

    status, _ = api.put(
        f"{EVENT}/{event_id}",
        world.mod,
        {
            "groupId": world.garden,
            "title": "Fair (moved)",
            "allDay": False,
            "startDate": z(start),
            "endDate": z(start + timedelta(hours=3)),
        },
    )
    assert status == 200
    changed = client.http.get(ics_path(world.garden), headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag
    assert "Fair (moved)" in by_summary(parse(changed.body))


def test_private_group_feeds_with_a_valid_a_revoked_and_a_wrong_key(api, client, world):
    start = datetime.now(UTC) + timedelta(days=1)
    create_event(api, world, world.photos, "Night shoot", start, start + timedelta(hours=1))
    assert client.http.get(ics_path(world.photos)).status_code == 401
    assert client.http.get(f"/api/v1/en_US/feed/{world.photos}").status_code == 401

    status, answer = api.get(key_path(world.member), world.member)
    assert status == 200 and answer["object"]["type"] == "feedKey"
    key = answer["object"]["key"]
    assert len(key) >= 40
    assert api.get(key_path(world.member), world.member)[1]["object"]["key"] == key  # stable

    calendar = client.http.get(f"{ics_path(world.photos)}?key={key}")
    assert calendar.status_code == 200
    assert list(by_summary(parse(calendar.body))) == ["Night shoot"]
    rss = client.http.get(f"/api/v1/en_US/feed/{world.photos}?key={key}")
    assert rss.status_code == 200
    assert [e.title for e in feedparser.parse(rss.body).entries] == ["Pier at dusk"]

    wrong = key[:-2] + ("AA" if not key.endswith("AA") else "BB")
    for path in (ics_path(world.photos), f"/api/v1/en_US/feed/{world.photos}"):
        answer = client.http.get(f"{path}?key={wrong}")
        assert answer.status_code == 401
        assert answer.headers["Content-Type"] == "application/json"

    status, answer = api.delete(key_path(world.member), world.member)
    assert status == 200 and answer["object"]["revoked"] is True
    assert client.http.get(f"{ics_path(world.photos)}?key={key}").status_code == 401
    assert client.http.get(f"/api/v1/en_US/feed/{world.photos}?key={key}").status_code == 401
    assert api.delete(key_path(world.member), world.member)[1]["object"]["revoked"] is False

    renewed = api.get(key_path(world.member), world.member)[1]["object"]["key"]
    assert renewed != key
    assert client.http.get(f"{ics_path(world.photos)}?key={renewed}").status_code == 200


def test_key_of_a_user_who_may_not_enter_is_403_and_keys_are_only_their_owners(api, client, world):
    key = api.get(key_path(world.outsider), world.outsider)[1]["object"]["key"]
    assert client.http.get(f"{ics_path(world.photos)}?key={key}").status_code == 403
    assert client.http.get(f"{ics_path(world.garden)}?key={key}").status_code == 200
    assert api.get(key_path(world.member), world.outsider)[0] == 403
    assert api.delete(key_path(world.member), world.outsider)[0] == 403
    assert api.get(key_path(world.member))[0] == 401
    # A member's token still opens the private calendar, as on the RSS feed.
    assert client.http.get(ics_path(world.photos), headers=auth(world.member)).status_code == 200


def test_keys_are_stored_only_hashed(api, world):
    from chalicelib.store.feed_keys import FeedKeyRecord

    key = api.get(key_path(world.member), world.member)[1]["object"]["key"]
    stored = [record.attribute_values for record in FeedKeyRecord.scan()]
    assert len(stored) == 2
    assert all(key not in str(values) for values in stored)


@pytest.mark.parametrize("key", ["", "%00%01", "x" * 5000, "%F0%9F%94%91", "' OR 1=1 --", "key#1"])
def test_hostile_keys_are_401_on_both_feeds_of_a_public_group_too(client, world, key):
    for group_id in (world.photos, world.garden):
        for path in (ics_path(group_id), f"/api/v1/en_US/feed/{group_id}"):
            answer = client.http.get(f"{path}?key={key}")
            assert answer.status_code == 401, (path, key)
            assert answer.headers["Content-Type"] == "application/json"
