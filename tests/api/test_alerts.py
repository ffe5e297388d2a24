"""A user's alerts: the red label count, the latest alerts, mark-read, privileges, paging."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

from chalicelib import deps
from chalicelib.clock import utc_now
from chalicelib.domain.announcements import CommentCreated, PostCreated
from tests.fixtures import new_id
from tests.support.notify import subscribe


def alerts(user_id: str) -> str:
    return f"/api/v1/en_US/user/{user_id}/alerts"


@pytest.fixture
def world(community):
    c = community
    c.garden = c.group("garden")
    c.other = c.group("other")
    c.secret = c.group("secret", access="private")
    c.ann = c.user("ann", {c.garden: "member"})
    c.bob = c.user("bob", {c.garden: "member", c.secret: "member"})
    c.garden_admin = c.user("garden-admin", {c.garden: "administrator"})
    c.other_admin = c.user("other-admin", {c.other: "administrator"})
    c.root_admin = c.users[0]["id"]
    c.secret_admin = c.user("secret-admin", {c.secret: "administrator"})
    c.post_ids = [c.post(c.garden, c.ann, title=f"Post {n}", slug=f"post-{n}") for n in range(3)]
    c.first = c.comment(c.post_ids[0], c.ann, content="<p>First!</p>")
    c.load()
    # Bob: red label and screen alert for posts; screen alert only for comments.
    subscribe(c.bob, "group", c.garden, 1, screen=True, red=True)
    subscribe(c.bob, "group", c.garden, 2, screen=True)
    return c


def told(events, start):
    """Deliver the events with a clock that ticks a second per call from `start`."""
    ticks = (start + timedelta(seconds=n) for n in itertools.count())
    service = deps.notify_service(clock=lambda: next(ticks))
    for event in events:
        service.handle(event)


def post_events(c):
    return [PostCreated(post_id, c.garden, c.ann) for post_id in c.post_ids]


def test_red_label_counts_red_alerts_and_lists_newest_first(api, world):
    c = world
    comment = CommentCreated(c.first, c.post_ids[0], c.garden, c.ann, is_approved=True)
    told([*post_events(c), comment], utc_now() - timedelta(hours=1))
    status, body = api.get(alerts(c.bob), c.bob)
    assert status == 200 and body["success"] is True
    page = body["object"]
    assert page["type"] == "userAlerts" and page["userId"] == c.bob
    assert page["unreadCount"] == 3  # the comment alert shows on screen, not on the red label
    assert [a["id"] for a in page["alerts"]] == [
        f"comment-{c.first}",
        *(f"post-{post_id}" for post_id in reversed(c.post_ids)),
    ]
    newest_post = page["alerts"][1]
    assert newest_post["kind"] == "newPost" and newest_post["title"] == "Post 2"
    assert newest_post["reason"] == "All new group posts"
    assert newest_post["post"]["url"] == "https://community.example/garden/post-2"
    assert newest_post["group"]["id"] == c.garden and newest_post["author"]["id"] == c.ann
    assert newest_post["showRedLabel"] is True and newest_post["isRead"] is False
    comment_alert = page["alerts"][0]
    assert comment_alert["commentId"] == c.first and comment_alert["showRedLabel"] is False
    assert comment_alert["url"] == f"https://community.example/garden/post-0#{c.first}"
    assert page["accessWarnings"] == []


def test_mark_read_clears_the_red_label_until_the_next_alert(api, world):
    c = world
    told(post_events(c)[:2], utc_now() - timedelta(hours=1))
    status, body = api.post(f"{alerts(c.bob)}/read", c.bob)
    assert status == 200 and body["object"]["unreadCount"] == 0
    assert all(a["isRead"] for a in body["object"]["alerts"])
    told(post_events(c)[2:], utc_now() + timedelta(hours=1))
    status, body = api.get(alerts(c.bob), c.bob)
    assert body["object"]["unreadCount"] == 1
    assert [a["isRead"] for a in body["object"]["alerts"]] == [False, True, True]


def test_the_same_event_twice_counts_once(api, world):
    c = world
    told(post_events(c)[:1] * 2, utc_now() - timedelta(hours=1))
    status, body = api.get(alerts(c.bob), c.bob)
    assert body["object"]["unreadCount"] == 1 and len(body["object"]["alerts"]) == 1


def test_paging_by_offset(api, world):
    c = world
    told(post_events(c), utc_now() - timedelta(hours=1))
    status, first = api.get(f"{alerts(c.bob)}?pageSize=2", c.bob)
    assert [a["title"] for a in first["object"]["alerts"]] == ["Post 2", "Post 1"]
    offset = first["object"]["offset"]
    assert offset == f"post-{c.post_ids[1]}"
    status, second = api.get(f"{alerts(c.bob)}?pageSize=2&offset={offset}", c.bob)
    assert [a["title"] for a in second["object"]["alerts"]] == ["Post 0"]
    status, bad = api.get(f"{alerts(c.bob)}?offset=post-{new_id()}", c.bob)
    assert status == 400 and bad["errors"][0]["key"] == "offset"
    status, bad = api.get(f"{alerts(c.bob)}?pageSize=0", c.bob)
    assert status == 400 and bad["errors"][0]["key"] == "pageSize"


def test_a_user_without_alerts_has_an_empty_label(api, world):
    status, body = api.get(f"{alerts(world.ann)}?offset=0", world.ann)
    assert status == 200
    assert body["object"]["unreadCount"] == 0 and body["object"]["alerts"] == []
    status, body = api.post(f"{alerts(world.ann)}/read", world.ann)
    assert status == 200 and body["object"]["unreadCount"] == 0


@pytest.mark.parametrize(
    ("reader", "status"),
    [
        ("bob", 200),
        ("root_admin", 200),
        # An administrator of a group bob belongs to would read titles, links and authors from
        # every group of bob's, private ones included (issue 15): only bob and root may.
        ("garden_admin", 403),
        ("secret_admin", 403),
        ("other_admin", 403),
        ("ann", 403),
    ],
)
def test_who_may_read_a_users_alerts(api, world, reader, status):
    c = world
    told(post_events(c)[:1], utc_now() - timedelta(hours=1))
    status_seen, body = api.get(alerts(c.bob), getattr(c, reader))
    assert status_seen == status
    if status == 200:
        assert [a["title"] for a in body["object"]["alerts"]] == ["Post 0"]
    else:
        assert body["success"] is False and not body.get("object")


def test_only_the_user_marks_their_alerts_read(api, world):
    c = world
    told(post_events(c)[:1], utc_now() - timedelta(hours=1))
    assert api.post(f"{alerts(c.bob)}/read", c.garden_admin)[0] == 403
    assert api.post(f"{alerts(c.bob)}/read", c.root_admin)[0] == 403
    assert api.get(alerts(c.bob), c.bob)[1]["object"]["unreadCount"] == 1


def test_unknown_user_is_404_and_no_token_401(api, world):
    status, body = api.get(alerts(new_id()), world.root_admin)
    assert status == 404 and body["errors"][0]["key"] == "userId"
    assert api.get(alerts(world.bob))[0] == 401
    assert api.get(alerts("not-a-guid"), world.bob)[0] == 400
