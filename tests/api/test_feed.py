"""Group feed settings: defaults, the full day and hour lists, validation keys, privileges."""

from __future__ import annotations

import pytest

from tests.fixtures import group_summary, new_id
from tests.support.feed import EVERY_FEED_SETTING, feed_settings, selected

DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
HOURS = [f"{h}:00" for h in range(1, 25)]


def feed(group_id: str) -> str:
    return f"/api/v1/en_US/feed/settings/{group_id}"


def test_unsaved_group_answers_defaults_with_every_day_and_hour(api, people):
    status, body = api.get(feed(people.garden), people.garden_admin)
    assert status == 200 and body["success"] is True
    settings = body["object"]
    assert settings["type"] == "groupFeedSettings"
    assert settings["group"] == group_summary(people.garden, "garden")
    assert settings["imageUrl"] == "" and settings["imageLinkUrl"] == ""
    assert settings["imageAlt"] == "" and settings["ttl"] == 60
    assert settings["editorEmail"] == "" and settings["webmasterEmail"] == ""
    assert settings["skipDays"] == [{"name": d, "selected": False} for d in DAYS]
    assert settings["skipHours"] == [{"name": h, "selected": False} for h in HOURS]
    assert settings["accessWarnings"] == []


def test_put_round_trip_lists_all_days_and_hours_with_selection(api, people):
    body_in = {
        **EVERY_FEED_SETTING,
        "imageUrl": " https://cdn.example/feed.png ",  # trimmed
        "imageLinkUrl": "https://community.example/garden",
        "skipDays": selected("Saturday", "sunday"),  # the day's name in any case
        "skipHours": [*selected("24:00"), {"name": "1:00", "selected": False}],
    }
    status, body = api.put(feed(people.garden), people.garden_admin, body_in)
    assert status == 200 and body["success"] is True
    saved = body["object"]
    assert saved["imageUrl"] == "https://cdn.example/feed.png"
    assert saved["ttl"] == 30 and saved["editorEmail"] == "editor@example.org"
    assert [d["name"] for d in saved["skipDays"] if d["selected"]] == ["Saturday", "Sunday"]
    assert len(saved["skipDays"]) == 7 and len(saved["skipHours"]) == 24
    assert [h["name"] for h in saved["skipHours"] if h["selected"]] == ["24:00"]
    status, again = api.get(feed(people.garden), people.root_admin)
    assert status == 200 and again["object"] == saved


@pytest.mark.parametrize(
    ("field", "value", "key"),
    [
        ("editorEmail", "not-an-email", "editorEmail"),
        ("webmasterEmail", "web@", "webmasterEmail"),
        ("ttl", -1, "ttl"),
        ("ttl", "soon", "ttl"),
        ("imageUrl", "javascript:alert(1)", "imageUrl"),
        ("imageLinkUrl", "not a url", "imageLinkUrl"),
        ("skipDays", [{"name": "Funday", "selected": True}], "skipDays"),
        ("skipHours", [{"name": "25:00", "selected": True}], "skipHours"),
        ("skipHours", [{"name": "0:00", "selected": True}], "skipHours"),
        ("skipDays", [{"name": "Monday", "selected": "maybe"}], "skipDays.0.selected"),
    ],
)
def test_invalid_field_is_400_with_its_key(api, people, field, value, key):
    sent = feed_settings(**{field: value})
    status, body = api.put(feed(people.garden), people.garden_admin, sent)
    assert status == 400 and body["success"] is False
    assert [e["key"] for e in body["errors"]] == [key]
    assert body["object"] == sent
    # Nothing was stored.
    _, stored = api.get(feed(people.garden), people.garden_admin)
    assert stored["object"]["ttl"] == 60


def test_invalid_editor_email_reports_the_value_sent(api, people):
    _, body = api.put(feed(people.garden), people.garden_admin, feed_settings(editorEmail="nobody"))
    assert body["errors"][0]["value"] == "nobody"


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("root_admin", 200),
        ("garden_admin", 200),
        ("other_admin", 403),
        ("moderator", 403),
        (None, 401),
    ],
)
def test_feed_settings_need_group_administrator(api, people, who, expected):
    user = getattr(people, who) if who else None
    status, body = api.get(feed(people.garden), user)
    assert status == expected and body["success"] is (expected == 200)
    status, _ = api.put(feed(people.garden), user, feed_settings(ttl=5))
    assert status == expected


def test_unknown_group_is_404(api, people):
    missing = new_id()
    status, body = api.get(feed(missing), people.root_admin)
    assert status == 404 and body["errors"][0]["key"] == "groupId"
    status, _ = api.put(feed(missing), people.root_admin, feed_settings(ttl=5))
    assert status == 404


def test_settings_are_per_group(api, people):
    api.put(feed(people.garden), people.root_admin, feed_settings(ttl=5))
    _, other = api.get(feed(people.other), people.root_admin)
    assert other["object"]["ttl"] == 60


@pytest.mark.parametrize(
    "missing",
    ["imageUrl", "imageLinkUrl", "imageAlt", "ttl", "editorEmail", "webmasterEmail", "skipDays"],
)
def test_a_field_left_out_of_the_put_is_400_naming_it_and_changes_nothing(api, people, missing):
    assert api.put(feed(people.garden), people.garden_admin, feed_settings(ttl=7))[0] == 200
    body = feed_settings(ttl=99)
    del body[missing]
    status, answer = api.put(feed(people.garden), people.garden_admin, body)
    assert status == 400
    assert [e["key"] for e in answer["errors"]] == [missing]
    assert api.get(feed(people.garden), people.garden_admin)[1]["object"]["ttl"] == 7
