"""A members-only feed is never stored by a cache (CONTRACT §8): `no-store`, whether it is read
with a token or a feed key, and on a 304 too. A public group's feed may be cached."""

from __future__ import annotations

import pytest

from tests.fixtures import auth, garden_and_photos


@pytest.fixture
def world(community):
    c = garden_and_photos(community)
    c.club = c.group("club", access="premium")
    c.member = c.user("member", {c.photos: "member", c.club: "member"})
    return c.load()


def feeds(group_id: str) -> list[str]:
    return [f"/api/v1/en_US/feed/{group_id}", f"/api/v1/en_US/feed/{group_id}/events.ics"]


def feed_key(api, user_id: str) -> str:
    status, answer = api.get(f"/api/v1/en_US/user/{user_id}/feed-key", user_id)
    assert status == 200, answer
    return answer["object"]["key"]


@pytest.mark.parametrize("group", ["photos", "club"])
def test_a_private_or_premium_groups_feeds_are_no_store(api, client, world, group):
    key = feed_key(api, world.member)
    for path in feeds(getattr(world, group)):
        by_key = client.http.get(f"{path}?key={key}")
        by_token = client.http.get(path, headers=auth(world.member))
        for response in (by_key, by_token):
            assert response.status_code == 200, path
            assert "no-store" in response.headers["Cache-Control"].split(", "), path
            assert "public" not in response.headers["Cache-Control"]
        etag = by_key.headers.get("ETag")
        if etag:
            again = client.http.get(f"{path}?key={key}", headers={"If-None-Match": etag})
            assert again.status_code == 304
            assert "no-store" in again.headers["Cache-Control"].split(", ")


def test_a_public_groups_feeds_may_be_cached(client, world):
    for path in feeds(world.garden):
        response = client.http.get(path)
        assert response.status_code == 200
        assert response.headers["Cache-Control"] == "public, max-age=300"
