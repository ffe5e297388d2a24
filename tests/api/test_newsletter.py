"""Newsletter settings: sanitised disclaimer, length bound, defaults, privileges."""

from __future__ import annotations

import pytest

from tests.fixtures import new_id


def path(group_id: str) -> str:
    return f"/api/v1/en_US/newsletter/settings/{group_id}"


def test_unsaved_group_answers_an_empty_disclaimer(api, people):
    status, body = api.get(path(people.garden), people.garden_admin)
    assert status == 200
    assert body["object"]["type"] == "groupNewsletterSettings"
    assert body["object"]["group"]["id"] == people.garden
    assert body["object"]["group"]["url"] == "https://community.example/garden"
    assert body["object"]["disclaimer"] == ""
    assert body["object"]["accessWarnings"] == []


def test_disclaimer_is_sanitised_and_the_stored_value_returned(api, people):
    sent = (
        '<p onclick="steal()">Unsubscribe <a href="javascript:x()">here</a></p><script>x</script>'
    )
    status, body = api.put(path(people.garden), people.garden_admin, {"disclaimer": sent})
    assert status == 200 and body["success"] is True
    stored = body["object"]["disclaimer"]
    assert stored.startswith("<p>Unsubscribe")
    assert "onclick" not in stored and "<script" not in stored and "javascript:" not in stored
    _, again = api.get(path(people.garden), people.root_admin)
    assert again["object"] == body["object"]


def test_too_long_disclaimer_is_400_with_key(api, people):
    status, body = api.put(path(people.garden), people.garden_admin, {"disclaimer": "x" * 10_001})
    assert status == 400
    assert [e["key"] for e in body["errors"]] == ["disclaimer"]


def test_non_text_disclaimer_is_400_with_key(api, people):
    status, body = api.put(path(people.garden), people.garden_admin, {"disclaimer": ["x"]})
    assert status == 400 and body["errors"][0]["key"] == "disclaimer"


@pytest.mark.parametrize(
    ("who", "expected"),
    [("root_admin", 200), ("garden_admin", 200), ("other_admin", 403), (None, 401)],
)
def test_newsletter_settings_need_group_administrator(api, people, who, expected):
    user = getattr(people, who) if who else None
    status, _ = api.get(path(people.garden), user)
    assert status == expected
    status, _ = api.put(path(people.garden), user, {"disclaimer": "x"})
    assert status == expected


def test_unknown_group_is_404(api, people):
    status, body = api.put(path(new_id()), people.root_admin, {"disclaimer": "x"})
    assert status == 404 and body["errors"][0]["key"] == "groupId"


def test_a_disclaimer_is_as_long_as_it_was_sent_control_characters_included(api, people):
    """maxLength counts the text as sent, as the document's JSON Schema does: 10,000 characters
    and a control character are 10,001, refused, though the router would remove the control
    character before storing it (Schemathesis sent such a disclaimer and it was stored)."""
    too_long = "x" * 9_999 + "\x95\x01"
    status, body = api.put(path(people.garden), people.garden_admin, {"disclaimer": too_long})
    assert status == 400, body
    assert [(e["key"], e["message"]) for e in body["errors"]] == [
        ("disclaimer", "must be at most 10000 characters")
    ]
    _, stored = api.get(path(people.garden), people.garden_admin)
    assert stored["object"]["disclaimer"] == ""
    # At the bound, the control characters are removed and the rest stored.
    status, body = api.put(
        path(people.garden), people.garden_admin, {"disclaimer": "x" * 9_998 + "\x95\x01"}
    )
    assert status == 200 and body["object"]["disclaimer"] == "x" * 9_998
