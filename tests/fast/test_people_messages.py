"""Validation errors in people's words (issue 51): no regular expression, no parser's jargon."""

from __future__ import annotations

import copy
import json

import pytest

from chalicelib.services.fixture_rules import FixtureInvalid, validate_fixture
from tests.support import REPO_ROOT

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text(encoding="utf-8"))


def errors_of(fixture: dict) -> dict[str, str]:
    with pytest.raises(FixtureInvalid) as raised:
        validate_fixture(fixture)
    return {error.path: error.message for error in raised.value.errors}


def test_a_fixtures_bad_email_slug_hash_and_date_are_said_in_words():
    fixture = copy.deepcopy(DEMO)
    fixture["users"][0]["email"] = "ann at agora.example"
    fixture["users"][1]["slug"] = "Gus Gardener"
    fixture["users"][2]["passwordHash"] = "$2b$12$notargon"
    fixture["posts"][0]["createdOn"] = "10000-01-01T00:00:00Z"

    errors = errors_of(fixture)

    assert errors == {
        "users[0].email": "is not an email address (name@example.org)",
        "users[1].slug": (
            "may hold only lowercase letters, digits and hyphens, and starts with a letter or digit"
        ),
        "users[2].passwordHash": "is not an argon2 password hash (it starts with $argon2id$)",
        "posts[0].createdOn": (
            "is outside the dates Agora can store: from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z"
        ),
    }
