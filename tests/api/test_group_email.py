"""Group email: both read paths, defaults, validation keys, privileges."""

from __future__ import annotations

import pytest

from tests.fixtures import group_summary, new_id
from tests.support.privileges import GARDEN_ADMINISTRATORS_ONLY, caller, statuses


def theme_path(group_id: str) -> str:
    return f"/api/v1/en_US/group-theme/list/{group_id}"


def email_path(group_id: str) -> str:
    return f"/api/v1/en_US/group-email/{group_id}"


def test_unsaved_group_answers_its_name_and_no_address(api, people):
    assert api.get_object(theme_path(people.garden), people.garden_admin) == {
        "type": "groupEmail",
        "group": group_summary(people.garden, "garden"),
        "email": "",
        "name": "Garden",
        "newsletterName": "Garden",
        "accessWarnings": [],
    }


def test_put_then_both_get_paths_answer_the_stored_identity(api, people):
    status, body = api.put(
        email_path(people.garden),
        people.garden_admin,
        {"email": " garden@example.org ", "name": " Garden team ", "newsletterName": "Garden news"},
    )
    assert status == 200 and body["success"] is True
    saved = body["object"]
    assert saved["email"] == "garden@example.org"
    assert saved["name"] == "Garden team" and saved["newsletterName"] == "Garden news"
    for path in (theme_path(people.garden), email_path(people.garden)):
        status, again = api.get(path, people.garden_admin)
        assert status == 200 and again["object"] == saved, path


def test_blank_newsletter_name_takes_the_name(api, people):
    _, body = api.put(
        email_path(people.garden),
        people.garden_admin,
        {"email": "g@example.org", "name": "G", "newsletterName": ""},
    )
    assert body["object"]["newsletterName"] == "G"


def test_a_blank_email_is_no_address_of_its_own_and_only_the_name_changes(api, people):
    """The form shows the blank address of a group never saved; saving a new sender name sends
    it back blank, which is the address it had: none (the group's mail goes from the site's
    sender alone)."""
    shown = api.get_object(email_path(people.garden), people.garden_admin)
    body = {"email": shown["email"], "name": "Garden team", "newsletterName": ""}
    status, answer = api.put(email_path(people.garden), people.garden_admin, body)
    assert status == 200, answer
    assert answer["object"]["email"] == "" and answer["object"]["name"] == "Garden team"
    assert api.get_object(email_path(people.garden), people.garden_admin) == answer["object"]


@pytest.mark.parametrize(
    ("body_in", "key"),
    [
        ({"email": "g@example.org", "name": "   ", "newsletterName": ""}, "name"),
        ({"email": "g@example.org", "newsletterName": ""}, "name"),
        ({"email": "g@example.org", "name": "G"}, "newsletterName"),
        ({"email": "not an email", "name": "G", "newsletterName": ""}, "email"),
        ({"name": "G", "newsletterName": ""}, "email"),
        ({"email": "g@example.org", "name": "G", "newsletterName": "n" * 201}, "newsletterName"),
    ],
)
def test_invalid_field_is_400_with_its_key(api, people, body_in, key):
    status, body = api.put(email_path(people.garden), people.garden_admin, body_in)
    assert status == 400 and body["success"] is False
    assert [e["key"] for e in body["errors"]] == [key]
    assert body["object"] == body_in


@GARDEN_ADMINISTRATORS_ONLY
def test_group_email_needs_group_administrator(api, people, who, expected):
    body = {"email": "g@example.org", "name": "G", "newsletterName": ""}
    calls = [
        ("GET", theme_path(people.garden), None),
        ("GET", email_path(people.garden), None),
        ("PUT", email_path(people.garden), body),
    ]
    assert statuses(api, caller(people, who), calls) == [expected] * 3


def test_unknown_group_is_404(api, people):
    missing = new_id()
    for path in (theme_path(missing), email_path(missing)):
        status, body = api.get(path, people.root_admin)
        assert status == 404 and body["errors"][0]["key"] == "groupId"


SPECIAL_USE = ["news@garden.test", "news@intranet.local", "news@corp.internal", "news@mail.example"]


@pytest.mark.parametrize("address", SPECIAL_USE)
def test_special_use_and_internal_domains_are_valid_addresses(api, people, address):
    body = {"email": address, "name": "Garden", "newsletterName": "Garden news"}
    status, answer = api.put(email_path(people.garden), people.garden_admin, body)
    assert status == 200, answer
    assert answer["object"]["email"] == address
    feed = f"/api/v1/en_US/feed/settings/{people.garden}"
    status, answer = api.put(
        feed,
        people.garden_admin,
        {
            "imageUrl": "",
            "imageLinkUrl": "",
            "imageAlt": "",
            "ttl": 60,
            "editorEmail": address,
            "webmasterEmail": address,
            "skipDays": [],
            "skipHours": [],
        },
    )
    assert status == 200, answer
    assert answer["object"]["editorEmail"] == address == answer["object"]["webmasterEmail"]


@pytest.mark.parametrize("address", ["news", "news@", "@garden.test", "a b@garden.test"])
def test_an_address_without_email_syntax_is_400_with_its_key(api, people, address):
    body = {"email": address, "name": "Garden", "newsletterName": "Garden news"}
    status, answer = api.put(email_path(people.garden), people.garden_admin, body)
    assert status == 400
    assert [e["key"] for e in answer["errors"]] == ["email"]
