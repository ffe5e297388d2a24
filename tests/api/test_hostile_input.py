"""Hostile bodies (CONTRACT §6): strict JSON, a depth limit, lone surrogates, empty bodies, and the
privilege checked before the body. Each refusal is a 400 (or 403) envelope that changes nothing."""

from __future__ import annotations

import json

import pytest

HOME = "/api/v1/en_US/system-page/home-page"
LOGIN = "/api/v1/en_US/security/login"
EVENT = "/api/v1/en_US/event"


def landing(group_id: str) -> str:
    return f"/api/v1/en_US/system-page/private-landing-page/group/{group_id}"


def event_body(group: str, title: str, **fields) -> dict:
    """An event of the group on a spring morning; `fields` add to it or replace its own."""
    return {
        "groupId": group,
        "title": title,
        "startDate": "2026-04-01T09:00:00Z",
        "endDate": "2026-04-01T10:00:00Z",
        **fields,
    }


def raw_call(api, method: str, path: str, user: str | None, raw: bytes | str):
    """The answer's status and bytes, for checks on the encoding itself."""
    from tests.fixtures import auth

    headers = {"Content-Type": "application/json", **(auth(user) if user else {})}
    response = getattr(api.client.http, method.lower())(path, headers=headers, body=raw)
    body = response.body if isinstance(response.body, bytes) else response.body.encode()
    return response.status_code, body


def decoded(body: bytes) -> dict:
    """The answer must be valid UTF-8 JSON in the envelope."""
    answer = json.loads(body.decode("utf-8"))
    assert set(answer) == {"success", "message", "timestamp", "errors", "object"}
    return answer


@pytest.fixture
def home_before(api, people):
    status, _ = api.put(HOME, people.root_admin, {"content": "<p>Welcome</p>"})
    assert status == 200
    return "<p>Welcome</p>"


def home_content(api, people) -> str:
    status, body = api.get(HOME, people.root_admin)
    assert status == 200
    return body["object"]["content"]


def nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


# --- nesting ---------------------------------------------------------------------------------------


def test_json_nested_fifty_thousand_deep_is_400_on_sign_in_without_token(api, people):
    status, body = raw_call(api, "POST", LOGIN, None, '{"email": ' + nested(50_000) + "}")
    assert status == 400
    answer = decoded(body)
    assert answer["success"] is False and "deeper than 64" in answer["message"]


def test_depth_64_is_read_and_depth_65_is_refused(api, people, home_before):
    # 64 levels: the object and 63 arrays. The body is read, then `content` is not a string.
    status, body = raw_call(api, "PUT", HOME, people.root_admin, '{"content": ' + nested(63) + "}")
    assert status == 400
    assert decoded(body)["errors"][0]["key"] == "content"
    status, body = raw_call(api, "PUT", HOME, people.root_admin, '{"content": ' + nested(64) + "}")
    assert status == 400
    answer = decoded(body)
    assert "deeper than 64" in answer["message"] and answer["errors"][0]["key"] == "body"
    assert home_content(api, people) == home_before


# --- NaN, Infinity, numbers JSON cannot carry ------------------------------------------------------


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
def test_non_finite_numbers_are_400_and_change_nothing(api, people, literal):
    path = "/api/v1/en_US/feed/settings/" + people.garden
    status, before = api.get(path, people.garden_admin)
    assert status == 200
    status, body = raw_call(api, "PUT", path, people.garden_admin, '{"ttl": ' + literal + "}")
    assert status == 400
    answer = decoded(body)
    assert answer["success"] is False
    assert "NaN" not in body.decode() and "Infinity" not in body.decode()
    status, after = api.get(path, people.garden_admin)
    assert after["object"] == before["object"]


# --- lone surrogates -------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["\\ud800", "abc\\udfff", "\\udc00\\ud800"])
def test_lone_surrogate_is_400_naming_the_field_in_valid_utf8(api, people, home_before, text):
    status, body = raw_call(api, "PUT", HOME, people.root_admin, '{"content": "' + text + '"}')
    assert status == 400
    answer = decoded(body)
    assert answer["errors"][0]["key"] == "content"
    assert "\ufffd" in answer["errors"][0]["value"]
    assert home_content(api, people) == home_before


def test_lone_surrogate_in_a_nested_key_is_400(api, people):
    path = "/api/v1/en_US/feed/settings/" + people.garden
    raw = '{"skipDays": [{"name": "Monday", "sel\\ud800": true}]}'
    status, body = raw_call(api, "PUT", path, people.garden_admin, raw)
    assert status == 400
    assert decoded(body)["errors"][0]["key"] == "skipDays.0.sel\ufffd"


def test_a_proper_surrogate_pair_is_a_character_and_is_stored(api, people):
    status, body = raw_call(
        api, "PUT", HOME, people.root_admin, '{"content": "<p>\\ud83d\\ude00</p>"}'
    )
    assert status == 200
    assert decoded(body)["object"]["content"] == "<p>\U0001f600</p>"


def test_lone_surrogate_on_sign_in_is_400_not_a_dropped_connection(api, people):
    status, body = raw_call(api, "POST", LOGIN, None, '{"email": "\\ud800@x.org", "password": "p"}')
    assert status == 400
    assert decoded(body)["errors"][0]["key"] == "email"


# --- empty bodies and missing required fields ------------------------------------------------------


@pytest.mark.parametrize("raw", ["", "   ", "\n"])
def test_empty_body_is_400_and_keeps_the_home_page(api, people, home_before, raw):
    status, body = raw_call(api, "PUT", HOME, people.root_admin, raw)
    assert status == 400
    assert decoded(body)["success"] is False
    assert home_content(api, people) == home_before


def test_empty_body_on_sign_in_is_400(api, people):
    status, body = raw_call(api, "POST", LOGIN, None, "")
    assert status == 400


# --- privilege before body -------------------------------------------------------------------------


BAD_BODIES = ["", "{not json", '{"content": 42}', "[]", '{"content": ' + nested(200) + "}"]


@pytest.mark.parametrize("raw", BAD_BODIES)
def test_home_page_put_by_a_member_is_403_whatever_the_body(api, people, raw):
    status, body = raw_call(api, "PUT", HOME, people.member, raw)
    assert status == 403
    assert decoded(body)["success"] is False


@pytest.mark.parametrize("raw", BAD_BODIES)
def test_landing_page_put_by_another_groups_admin_is_403_whatever_the_body(api, people, raw):
    status, _ = raw_call(api, "PUT", landing(people.garden), people.other_admin, raw)
    assert status == 403


def test_event_create_by_a_member_is_403_whatever_else_the_body_holds(api, people):
    body = {"groupId": people.garden, "title": 42, "startDate": "not a date", "allDay": "x"}
    status, answer = api.post(EVENT, people.member, body)
    assert status == 403, answer


def test_event_update_by_a_member_is_403_whatever_the_body(api, people):
    event = event_body(people.garden, "Fair", allDay=False, content="", organizer="", location="")
    status, created = api.post(EVENT, people.moderator, event)
    assert status == 200, created
    event_id = created["object"]["id"]
    for raw in BAD_BODIES:
        status, _ = raw_call(api, "PUT", f"{EVENT}/{event_id}", people.member, raw)
        assert status == 403, raw
        status, _ = raw_call(api, "PUT", f"{EVENT}/{event_id}/calendar", people.member, raw)
        assert status == 403, raw
    status, after = api.get(f"{EVENT}/{event_id}", people.moderator)
    assert after["object"]["title"] == "Fair"


def test_without_a_token_it_is_401_whatever_the_body(api, people):
    status, _ = raw_call(api, "PUT", HOME, None, "{not json")
    assert status == 401


# --- item size, control characters, XML ------------------------------------------------------------


def test_event_content_under_the_text_limit_but_over_the_item_is_400_and_stores_nothing(
    api, people
):
    # 290,000 bytes of text pass the per-field limit; with its search copy it cannot be one item.
    body = event_body(people.garden, "Big", allDay=False, content="<p>" + "word " * 58_000 + "</p>")
    status, answer = api.post(EVENT, people.moderator, body)
    assert status == 400, answer["message"]
    assert [e["key"] for e in answer["errors"]] == ["content"]
    path = f"{EVENT}/list/upcoming/{people.garden}?timeStamp=2026-01-01T00:00:00Z"
    status, listed = api.get(path, people.moderator)
    assert status == 200 and listed["object"]["events"] == []


def test_control_characters_are_removed_from_stored_strings_and_the_feed_still_answers(api, people):
    settings = f"/api/v1/en_US/feed/settings/{people.garden}"
    sent = {
        "imageUrl": "https://cdn.example/logo.png",
        "imageLinkUrl": "",
        "imageAlt": "Logo\x00\x01\x1b[31m\tred\x7f\x85 ok",
        "ttl": 60,
        "editorEmail": "",
        "webmasterEmail": "",
        "skipDays": [],
        "skipHours": [],
    }
    status, answer = api.put(settings, people.garden_admin, sent)
    assert status == 200, answer
    assert answer["object"]["imageAlt"] == "Logo[31m\tred ok"
    status, stored = api.get(settings, people.garden_admin)
    assert stored["object"]["imageAlt"] == "Logo[31m\tred ok"
    response = api.client.http.get(f"/api/v1/en_US/feed/{people.garden}")
    assert response.status_code == 200
    import feedparser

    parsed = feedparser.parse(response.body)
    assert parsed.bozo == 0 and parsed.feed.image.title.startswith("Logo[31m")


def test_feed_drops_what_xml_cannot_carry_from_text_stored_earlier(client, community):
    import feedparser

    c = community
    garden = c.group("garden")
    author = c.user("ann", {garden: "administrator"})
    c.post(garden, author, title="Bell\x07 and \x0bvertical tab", content="<p>nul\x00l</p>")
    c.load()
    response = client.http.get(f"/api/v1/en_US/feed/{garden}")
    assert response.status_code == 200
    parsed = feedparser.parse(response.body)
    assert parsed.bozo == 0
    assert parsed.entries[0].title == "Bell and vertical tab"


@pytest.mark.parametrize(
    ("path", "who", "body", "missing"),
    [
        ("home", "root_admin", {}, "content"),
        ("home", "root_admin", {"contents": "<p>typo</p>"}, "content"),
        ("private", "garden_admin", {}, "content"),
        ("premium", "garden_admin", {"content": "<p>x</p>"}, "isEnabled"),
        ("premium", "garden_admin", {"isEnabled": True}, "content"),
        ("newsletter", "garden_admin", {}, "disclaimer"),
        ("email", "garden_admin", {"email": "g@example.org", "newsletterName": "G"}, "name"),
    ],
)
def test_a_replacing_put_without_a_listed_field_is_400_naming_it_and_changes_nothing(
    api, people, path, who, body, missing
):
    paths = {
        "home": HOME,
        "private": landing(people.garden),
        "premium": f"/api/v1/en_US/system-page/premium-landing-page/group/{people.garden}",
        "newsletter": f"/api/v1/en_US/newsletter/settings/{people.garden}",
        "email": f"/api/v1/en_US/group-email/{people.garden}",
    }
    user = getattr(people, who)
    status, before = api.get(paths[path], user)
    assert status == 200
    status, answer = api.put(paths[path], user, body)
    assert status == 400
    assert missing in [e["key"] for e in answer["errors"]]
    assert api.get(paths[path], user)[1]["object"] == before["object"]


def test_del_and_c1_controls_are_removed_from_an_event_title_and_its_calendar(api, people):
    content = "<p>Bring\u0085 seeds\u007f</p>\n<p>and pots</p>"
    body = event_body(people.garden, "Seed\u0085\u007f swap\u009b", content=content)
    status, answer = api.post(EVENT, people.moderator, body)
    assert status == 200, answer
    assert answer["object"]["title"] == "Seed swap"
    status, stored = api.get(f"{EVENT}/{answer['object']['id']}", people.moderator)
    assert stored["object"]["title"] == "Seed swap"
    assert (
        "\u0085" not in stored["object"]["content"] and "\u007f" not in stored["object"]["content"]
    )
    assert "\n" in stored["object"]["content"]  # line breaks stay in multi-line content


@pytest.mark.parametrize("name", ["Security\nTeam", "Security\u2028Team", "Security\r\nTeam"])
def test_a_line_break_in_the_group_email_name_is_a_400_on_name(api, people, name):
    status, body = api.put(
        f"/api/v1/en_US/group-email/{people.garden}",
        people.garden_admin,
        {"email": "garden@example.org", "name": name, "newsletterName": ""},
    )
    assert status == 400, body
    assert [e["key"] for e in body["errors"]] == ["name"]


@pytest.mark.parametrize(
    ("path", "field"),
    [
        (EVENT, "title"),
        (EVENT, "location"),
        ("/api/v1/en_US/group-email/{garden}", "email"),
        ("/api/v1/en_US/group-email/{garden}", "newsletterName"),
    ],
)
def test_single_line_fields_refuse_line_breaks(api, people, path, field):
    bodies = {
        EVENT: event_body(people.garden, "Swap"),
        "/api/v1/en_US/group-email/{garden}": {
            "email": "garden@example.org",
            "name": "Garden",
            "newsletterName": "",
        },
    }
    body = {**bodies[path], field: "first line\nBcc: victim@example.org"}
    call = api.post if path == EVENT else api.put
    status, answer = call(path.format(garden=people.garden), people.garden_admin, body)
    assert status == 400, answer
    assert [e["key"] for e in answer["errors"]] == [field]


@pytest.mark.parametrize(
    "control",
    ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"],
)
def test_direction_controls_are_removed_from_titles_and_names(api, people, control):
    """A title holding U+202E shows its words backwards ("Swap\u202efdp.exe" reads "Swapexe.pdf"):
    bidirectional overrides and isolates are removed from single-line text (CONTRACT §8)."""
    status, answer = api.post(
        EVENT, people.moderator, event_body(people.garden, f"Seed{control} swap")
    )
    assert status == 200, answer
    assert answer["object"]["title"] == "Seed swap"
    _, stored = api.get(f"{EVENT}/{answer['object']['id']}", people.moderator)
    assert stored["object"]["title"] == "Seed swap"
    status, body = api.put(
        f"/api/v1/en_US/group-email/{people.garden}",
        people.garden_admin,
        {"email": "garden@example.org", "name": f"Garden{control} news", "newsletterName": ""},
    )
    assert status == 200, body
    assert body["object"]["name"] == "Garden news"


def test_a_title_of_direction_controls_only_is_a_400(api, people):
    status, answer = api.post(EVENT, people.moderator, event_body(people.garden, "\u202e\u2066"))
    assert status == 400, answer
    assert [e["key"] for e in answer["errors"]] == ["title"]
