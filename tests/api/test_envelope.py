"""Every status row of CONTRACT §6, each answered with the envelope."""

from __future__ import annotations

import json
import re

import pytest

HOME = "/api/v1/en_US/system-page/home-page"
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


@pytest.fixture
def root_admin(community):
    community.load()
    return community.users[0]["id"]


def assert_envelope(body: dict, success: bool) -> None:
    assert set(body) == {"success", "message", "timestamp", "errors", "object"}
    assert body["success"] is success
    assert isinstance(body["errors"], list)
    assert ISO_Z.match(body["timestamp"])
    assert isinstance(body["message"], str) and body["message"]


def test_success_is_200_envelope(api, root_admin):
    status, body = api.get(HOME, root_admin)
    assert status == 200
    assert_envelope(body, True)


def test_validation_failure_is_400_with_key_value_message_and_object(api, root_admin):
    status, body = api.put(HOME, root_admin, {"content": 42})
    assert status == 400
    assert_envelope(body, False)
    assert body["errors"] == [{"key": "content", "value": "42", "message": "must be text"}]
    assert body["object"] == {"content": 42}


def test_body_that_is_not_json_is_400(api, root_admin):
    status, body = api.put(HOME, root_admin, raw="{content: nope")
    assert status == 400
    assert_envelope(body, False)


def test_body_that_is_not_json_names_the_line_and_column(api, root_admin):
    status, body = api.put(HOME, root_admin, raw='{\n  "content": "a",\n  "x" 1\n}')
    assert status == 400
    assert "line 3, column 7" in body["message"], body["message"]


def test_a_refusal_names_who_may_and_the_group_in_plain_words(api, community):
    garden = community.group("garden")
    member = community.user("member", {garden: "member"})
    community.load()
    status, body = api.post(
        "/api/v1/en_US/event",
        member,
        {"groupId": garden, "title": "t", "startDate": "2027-01-01T10:00:00Z", "allDay": True},
    )
    assert status == 403
    assert_envelope(body, False)
    assert body["message"] == (
        f'Only a moderator or administrator of group "Garden" ({garden}), or a root group '
        "administrator, may do this."
    )
    status, body = api.get(HOME, member)
    assert status == 403 and body["message"] == "Only a root group administrator may do this."


def test_body_that_is_not_an_object_is_400(api, root_admin):
    status, body = api.put(HOME, root_admin, raw="[1, 2]")
    assert status == 400
    assert_envelope(body, False)


def test_body_over_one_mebibyte_is_413(api, root_admin):
    status, body = api.put(HOME, root_admin, {"content": "x" * (1024 * 1024)})
    assert status == 413
    assert_envelope(body, False)


def test_text_too_long_for_an_item_is_400_with_its_key(api, root_admin):
    status, body = api.put(HOME, root_admin, {"content": "x" * 400_000})
    assert status == 400
    assert body["errors"][0]["key"] == "content"


def test_no_token_is_401(api, root_admin):
    status, body = api.get(HOME)
    assert status == 401
    assert_envelope(body, False)


def test_not_allowed_is_403(api, community):
    member = community.user("someone")
    community.load()
    status, body = api.get(HOME, member)
    assert status == 403
    assert_envelope(body, False)


def test_unknown_id_is_404_naming_the_parameter(api, root_admin):
    status, body = api.get("/api/v1/en_US/post/2b1e6a4e-2f0b-4c55-9d5e-7f6f5a1d0c11", root_admin)
    assert status == 404
    assert_envelope(body, False)
    assert [e["key"] for e in body["errors"]] == ["postId"]


def test_method_not_allowed_is_405_envelope(api, root_admin):
    status, body = api.call("PATCH", HOME, root_admin)
    assert status == 405
    assert_envelope(body, False)


def test_unexpected_failure_is_500_without_internals(api, root_admin, capfd):
    from chalicelib.store.documents import DocumentRecord

    DocumentRecord.delete_table()  # the store fails underneath the route
    status, body = api.get(HOME, root_admin)
    assert status == 500
    assert_envelope(body, False)
    assert "Traceback" not in body["message"] and "DocumentRecord" not in str(body)
    lines = [json.loads(line) for line in capfd.readouterr().err.splitlines() if line[:1] == "{"]
    # The stack trace is in the log, with the request's line saying 500.
    assert any("Traceback" in line.get("exception", "") for line in lines)
    assert any(line.get("status") == 500 for line in lines)


def test_request_log_is_one_json_line_without_secrets(api, community, capfd):
    import json

    community.user(
        "logger", {community.root: "administrator"}, password="s3cret-pass", email="l@example.org"
    )
    community.load()
    capfd.readouterr()
    api.post(
        "/api/v1/en_US/security/login", body={"email": "l@example.org", "password": "s3cret-pass"}
    )
    lines = [
        json.loads(line) for line in capfd.readouterr().err.splitlines() if line.startswith("{")
    ]
    request = [entry for entry in lines if entry.get("message") == "request"]
    assert request and request[-1]["route"] == "/api/v1/en_US/security/login"
    assert (
        request[-1]["status"] == 200 and "durationMs" in request[-1] and "requestId" in request[-1]
    )
    assert all("s3cret-pass" not in json.dumps(entry) for entry in lines)


def _pydantic_words(kind: str, ctx: dict) -> str:
    """Pydantic's own message for an error type (its default words)."""
    from pydantic_core import PydanticKnownError

    try:
        return PydanticKnownError(kind, ctx).message()  # type: ignore[arg-type]
    except (KeyError, TypeError):
        return ""


def test_every_pydantic_error_type_reads_in_the_forms_words():
    """Issue 56: "Input should be greater than or equal to 0" under the feed's time to live.
    Every error type Pydantic has becomes words of ours, never its own message."""
    import typing

    from pydantic_core import core_schema

    from chalicelib.schemas.messages import CODE_ONLY, WORDS, people_message

    ctx = {"gt": 0, "ge": 0, "lt": 9, "le": 9, "multiple_of": 2, "min_length": 1,
           "max_length": 2, "field_type": "List", "actual_length": 3, "expected": "'a' or 'b'",
           "error": "bad", "class_name": "X", "tag": "t", "discriminator": "'kind'",
           "expected_tags": "'a'", "max_digits": 1, "decimal_places": 1, "whole_digits": 1,
           "expected_schemes": "'http' or 'https'", "attribute": "a", "method_name": "m",
           "encoding": "utf8", "tz_actual": 1, "expected_version": 4, "pattern": "x",
           "encoding_type": "x", "class": "X"}  # fmt: skip
    kinds = typing.get_args(core_schema.ErrorType)
    assert len(kinds) > 100
    pydantic_openings = ("Input", "Field", "String should", "List should", "Data should", "URL",
                         "Decimal input", "UUID input", "JSON input", "Extra inputs", "Keys")  # fmt: skip
    for kind in kinds:
        theirs = _pydantic_words(kind, ctx)
        ours = people_message({"type": kind, "msg": theirs or "Input should be x", "ctx": ctx,
                               "input": "x", "loc": ("body", "field")})  # fmt: skip
        assert ours and ours != theirs and not ours.startswith(pydantic_openings), (kind, ours)
        assert "{" not in ours, (kind, ours)
    # Each is named once: in words, by its own branch, or as code's alone.
    own = {"string_pattern_mismatch", "value_error", "assertion_error", "date_type",
           "date_parsing", "datetime_type", "datetime_parsing", "datetime_from_date_parsing",
           "date_from_datetime_parsing"}  # fmt: skip
    assert set(kinds) <= set(WORDS) | CODE_ONLY | own, set(kinds) - set(WORDS) - CODE_ONLY - own


def test_a_feed_time_to_live_below_zero_says_so_in_words(api, community):
    from tests.fixtures import two_groups

    people = two_groups(community)
    people.load()
    body = {"imageUrl": "", "imageLinkUrl": "", "imageAlt": "", "ttl": -1, "editorEmail": "",
            "webmasterEmail": "", "skipDays": [], "skipHours": []}  # fmt: skip
    status, answer = api.put(
        f"/api/v1/en_US/feed/settings/{people.garden}", people.garden_admin, body
    )
    assert status == 400
    assert answer["errors"] == [{"key": "ttl", "value": "-1", "message": "must be at least 0"}]
    status, answer = api.put(
        f"/api/v1/en_US/feed/settings/{people.garden}", people.garden_admin, {"ttl": 5}
    )
    assert {"key": "imageUrl", "value": "", "message": "is required"} in answer["errors"]
