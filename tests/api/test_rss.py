"""The group feed: RSS 2.0 that a feed parser reads, carrying every feed setting; access."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import feedparser
import pytest

from tests.fixtures import auth, garden_and_photos, new_id
from tests.support.feed import EVERY_FEED_SETTING


def feed_path(group_id: str) -> str:
    return f"/api/v1/en_US/feed/{group_id}"


@pytest.fixture
def world(community):
    c = garden_and_photos(community)
    c.club = c.group("club", access="premium")
    c.ann = c.user("ann", {c.garden: "administrator", c.photos: "member"})
    c.rita = c.user("rita")
    c.old = c.post(c.garden, c.ann, title="Old news", slug="old-news", content="<p>Before</p>")
    c.new = c.post(
        c.garden, c.ann, title="Roses & tulips", slug="roses", content="<p>In <b>bloom</b></p>"
    )
    c.pier = c.post(c.photos, c.ann, title="Pier", slug="pier")
    return c.load()


def get_feed(client, group_id: str, user_id: str | None = None):
    return client.http.get(feed_path(group_id), headers=auth(user_id) if user_id else {})


def test_public_feed_parses_with_latest_posts_first_without_a_token(client, world):
    response = get_feed(client, world.garden)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/rss+xml")
    parsed = feedparser.parse(response.body)
    assert parsed.bozo == 0 and parsed.version == "rss20"
    assert parsed.feed.title == "Garden"
    assert parsed.feed.link == "https://community.example/garden"
    assert [e.title for e in parsed.entries] == ["Roses & tulips", "Old news"]
    newest = parsed.entries[0]
    assert newest.link == "https://community.example/garden/roses"
    assert newest.id == "https://community.example/garden/roses"
    assert "<b>bloom</b>" in newest.description
    assert newest.author == "Ann"  # dc:creator: an alias, never an address
    assert newest.published_parsed[:5] == (2026, 1, 1, 0, 2)
    assert "ann@example.org" not in response.body.decode()


def test_feed_carries_every_feed_setting(client, api, world):
    path = f"/api/v1/en_US/feed/settings/{world.garden}"
    assert api.put(path, world.ann, EVERY_FEED_SETTING)[0] == 200
    body = get_feed(client, world.garden).body
    parsed = feedparser.parse(body)
    assert parsed.bozo == 0
    assert parsed.feed.ttl == "30"
    assert parsed.feed.image.href == "https://cdn.example/garden.png"
    assert parsed.feed.image.link == "https://community.example/garden/about"
    assert parsed.feed.image.title == "Garden logo"
    assert parsed.feed.author == "editor@example.org"  # managingEditor
    assert parsed.feed.publisher == "web@example.org"  # webMaster
    # feedparser does not read skipDays/skipHours: the XML is read for them.
    channel = ElementTree.fromstring(body).find("channel")
    assert channel is not None
    assert sorted(d.text for d in channel.findall("skipDays/day")) == ["Saturday", "Sunday"]
    assert sorted(int(h.text) for h in channel.findall("skipHours/hour")) == [0, 3]
    assert channel.findtext("managingEditor") == "editor@example.org"
    assert channel.findtext("webMaster") == "web@example.org"


def test_unsaved_settings_give_the_default_ttl_and_no_optional_elements(client, world):
    channel = ElementTree.fromstring(get_feed(client, world.garden).body).find("channel")
    assert channel is not None
    assert channel.findtext("ttl") == "60"
    for element in ("image", "managingEditor", "webMaster", "skipDays", "skipHours"):
        assert channel.find(element) is None


def test_private_feed_is_401_without_a_token(client, world):
    response = get_feed(client, world.photos)
    assert response.status_code == 401
    assert response.headers["Content-Type"] == "application/json"


def test_private_and_premium_feeds_need_a_user_who_may_enter(client, world):
    assert get_feed(client, world.photos, world.rita).status_code == 403
    assert get_feed(client, world.club, world.ann).status_code == 403
    response = get_feed(client, world.photos, world.ann)
    assert response.status_code == 200
    assert [e.title for e in feedparser.parse(response.body).entries] == ["Pier"]
    assert get_feed(client, world.club, world.users[0]["id"]).status_code == 200


def test_unknown_group_is_404_and_bad_id_400(api, world):
    status, body = api.get(feed_path(new_id()))
    assert status == 404 and body["errors"][0]["key"] == "groupId"
    assert api.get(feed_path("garden"))[0] == 400


def test_openapi_declares_the_feed_as_rss(api, world):
    status, body = api.get("/api/v1/en_US/openapi.json")
    document = body.get("object", body)
    operation = document["paths"]["/api/v1/en_US/feed/{groupId}"]["get"]
    assert "application/rss+xml" in operation["responses"]["200"]["content"]
