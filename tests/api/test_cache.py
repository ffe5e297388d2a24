"""The warm container's memory of users and groups (AGORA_CACHE_SECONDS, issue 17): a membership
changed by another container is honoured within the configured time, and at once when it is 0."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

CACHE_SECONDS = 3


@pytest.fixture
def cache_seconds(monkeypatch) -> Iterator[callable]:
    from chalicelib.settings import reload_settings

    def set_to(seconds: float) -> None:
        monkeypatch.setenv("AGORA_CACHE_SECONDS", str(seconds))
        reload_settings()

    yield set_to
    monkeypatch.delenv("AGORA_CACHE_SECONDS", raising=False)
    reload_settings()


@pytest.fixture
def garden(community):
    c = community
    c.garden = c.group("garden", access="private")
    c.member = c.user("gardener", {c.garden: "member"})
    c.post(c.garden, c.member)
    return c.load()


def set_memberships_elsewhere(user_id: str, memberships: dict[str, str]) -> None:
    """What another container (or the fixture loader run elsewhere) does: a write to the table
    that this process's memory does not hear about."""
    import json

    from chalicelib.aws import client
    from chalicelib.store.users import UserRecord

    client("dynamodb").update_item(
        TableName=UserRecord.Meta.table_name,
        Key={"id": {"S": user_id}},
        UpdateExpression="SET memberships = :m",
        ExpressionAttributeValues={":m": {"S": json.dumps(memberships)}},
    )


def posts_of(api, garden) -> int:
    status, _ = api.get(f"/api/v1/en_US/post/list/{garden.garden}", garden.member)
    return status


def test_a_removed_membership_is_honoured_within_the_cache_time(api, garden, cache_seconds):
    cache_seconds(CACHE_SECONDS)
    assert posts_of(api, garden) == 200
    set_memberships_elsewhere(garden.member, {})
    # This container still remembers the membership: the change is not seen yet...
    assert posts_of(api, garden) == 200
    time.sleep(CACHE_SECONDS + 0.1)
    # ...and is once the configured time has passed.
    assert posts_of(api, garden) == 403


def test_with_cache_time_0_a_membership_change_is_honoured_at_once(api, garden, cache_seconds):
    cache_seconds(0)
    assert posts_of(api, garden) == 200
    set_memberships_elsewhere(garden.member, {})
    assert posts_of(api, garden) == 403
    set_memberships_elsewhere(garden.member, {garden.garden: "member"})
    assert posts_of(api, garden) == 200


def test_a_reload_in_this_container_is_honoured_at_once(api, community, cache_seconds):
    cache_seconds(CACHE_SECONDS)
    c = community
    c.garden = c.group("garden", access="private")
    c.member = c.user("gardener", {c.garden: "member"})
    c.load()
    assert posts_of(api, c) == 200
    c.users[-1]["memberships"] = []
    c.load()
    assert posts_of(api, c) == 403


def test_the_cache_time_is_a_non_negative_number_of_seconds():
    import pydantic

    from chalicelib.settings import Settings

    assert Settings.from_environ({}).cache_seconds == 30
    assert Settings.from_environ({"AGORA_CACHE_SECONDS": "0.5"}).cache_seconds == 0.5
    for bad in ("-1", "soon"):
        with pytest.raises(pydantic.ValidationError):
            Settings.from_environ({"AGORA_CACHE_SECONDS": bad})


def test_with_cache_time_0_a_call_still_reads_each_record_once(
    api, garden, cache_seconds, dynamo_counter
):
    cache_seconds(0)
    assert posts_of(api, garden) == 200
    dynamo_counter.reset()
    status, body = api.get(f"/api/v1/en_US/post/list/{garden.garden}", garden.member)
    assert status == 200 and body["object"]["posts"][0]["author"]["id"] == garden.member
    # The caller's user (for the privilege) and the group of the path, then the page: the
    # author, who is the caller, is not read a second time for the page.
    assert dynamo_counter.requests == {"GetItem": 2, "Query": 1}
