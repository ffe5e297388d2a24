"""What a refused request is answered (issue 37, CONTRACT §6): strict JSON types through the API,
and short errors (an error's `value` at most 200 characters, `object`'s strings at most 1,000)."""

from __future__ import annotations

import pytest

from chalicelib.errors import as_text, echoed

HOME = "/api/v1/en_US/system-page/home-page"
EVENT = "/api/v1/en_US/event"


@pytest.fixture
def root_admin(community):
    community.load()
    return community.users[0]["id"]


def test_all_day_yes_is_a_400_on_all_day(api, community, root_admin):
    status, body = api.post(
        EVENT,
        root_admin,
        {
            "groupId": community.root,
            "title": "Picnic",
            "startDate": "2026-05-01T10:00:00Z",
            "allDay": "yes",
        },
    )
    assert status == 400, body
    assert ("allDay", "yes") in [(e["key"], e["value"]) for e in body["errors"]]


def test_is_enabled_as_text_is_a_400_and_nothing_is_stored(api, community, root_admin):
    page = f"/api/v1/en_US/system-page/premium-landing-page/group/{community.root}"
    before = api.get_object(page, root_admin)
    status, body = api.put(page, root_admin, {"content": "<p>new</p>", "isEnabled": "true"})
    assert status == 400 and [e["key"] for e in body["errors"]] == ["isEnabled"]
    assert api.get_object(page, root_admin) == before


def test_an_oversized_page_is_refused_with_a_short_value_and_a_short_object(api, root_admin):
    content = "<p>" + "x" * 500_000 + "</p>"
    status, body = api.put(HOME, root_admin, {"content": content, "isEnabled": True})
    assert status == 400, body["message"]
    [error] = body["errors"]
    assert error["key"] == "content"
    assert len(error["value"]) == 200 and error["value"].endswith("…")
    assert error["value"].startswith("<p>xxx")
    assert len(body["object"]["content"]) == 1000 and body["object"]["content"].endswith("…")
    assert body["object"]["isEnabled"] is True


@pytest.mark.fast
def test_values_and_echoed_strings_are_cut_at_their_limits():
    assert as_text("a" * 200) == "a" * 200
    assert as_text("a" * 201) == "a" * 199 + "…"
    assert as_text(["b" * 300]).endswith("…") and len(as_text(["b" * 300])) == 200
    sent = {"short": "s", "long": "c" * 1001, "n": 5, "list": [{"deep": "d" * 5000}], "k" * 2000: 1}
    cut = echoed(sent)
    assert cut["short"] == "s" and cut["n"] == 5
    assert cut["long"] == "c" * 999 + "…"
    assert cut["list"][0]["deep"] == "d" * 999 + "…"
    assert "k" * 999 + "…" in cut


def test_a_query_parameter_sent_twice_is_a_400_with_its_key(api, community, root_admin):
    """The document gives each query parameter one value; Schemathesis sent `filter` and `offset`
    several times (an array, which the document does not allow) and the list answered 200 with
    whichever value came last."""
    expired = f"{EVENT}/list/expired/{community.root}"
    status, body = api.get(f"{expired}?pageSize=5&filter=a&filter=b&offset=&offset=", root_admin)
    assert status == 400, body
    assert [(e["key"], e["value"], e["message"]) for e in body["errors"]] == [
        ("filter", '["a", "b"]', "is sent 2 times: send it once"),
        ("offset", '["", ""]', "is sent 2 times: send it once"),
    ]
    assert body["object"] == {"pageSize": "5", "filter": ["a", "b"], "offset": ["", ""]}
    status, body = api.get("/api/v1/en_US/group/list?pageSize=5&pageSize=500", root_admin)
    assert status == 400 and [e["key"] for e in body["errors"]] == ["pageSize"]
    # Once each, the same parameters are a page; a name the route does not read is left alone.
    status, body = api.get(f"{expired}?pageSize=5&filter=a&offset=&x=1&x=2", root_admin)
    assert status == 200 and body["object"]["events"] == []
    # A page for people answers a page: the last token counts, and says the link is not valid.
    page = api.client.http.get("/api/v1/en_US/unsubscribe?token=a&token=b")
    assert page.status_code == 400
    assert b"<title>Unsubscribe link not valid</title>" in page.body
