"""Post reads (CONTRACT §10) with paging (§7)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest


@pytest.fixture
def garden(community):
    c = community
    c.garden = c.group("garden", access="private")
    c.member = c.user("gardener", {c.garden: "member"})
    c.outsider = c.user("outsider")
    c.post_ids = [c.post(c.garden, c.member, title=f"Post {i:02d}") for i in range(50)]
    return c


def page(api, group_id, user, offset=None, size=7, text=None):
    query = [f"pageSize={size}"]
    if offset:
        query.append(f"offset={offset}")
    if text:
        query.append(f"filter={text}")
    return api.get(f"/api/v1/en_US/post/list/{group_id}?" + "&".join(query), user)


def test_paging_fifty_posts_in_pages_of_seven_has_no_gap_and_no_repeat(api, garden):
    garden.load()
    seen, offset, pages = [], None, 0
    while True:
        status, body = page(api, garden.garden, garden.member, offset)
        assert status == 200
        posts = body["object"]["posts"]
        if not posts:
            assert body["object"]["offset"] == offset
            break
        pages += 1
        assert len(posts) <= 7
        seen += [p["id"] for p in posts]
        offset = body["object"]["offset"]
        assert offset == posts[-1]["id"]
    assert pages == 8
    assert seen == list(reversed(garden.post_ids))  # newest first, each exactly once


def test_post_page_reads_only_its_size(api, garden, dynamo_counter):
    garden.load()
    _, first = page(api, garden.garden, garden.member, size=7)
    dynamo_counter.reset()
    status, body = page(api, garden.garden, garden.member, offset=first["object"]["offset"], size=7)
    assert status == 200 and len(body["object"]["posts"]) == 7
    assert "Scan" not in dynamo_counter.requests
    assert dynamo_counter.requests["Query"] == 1
    # user, offset item, page, authors: a handful of requests, O(pageSize) items.
    assert dynamo_counter.items_read <= 7 + 5


def test_filter_is_case_insensitive_on_title_and_content(api, garden):
    garden.post(garden.garden, garden.member, title="Tomato BLIGHT alert")
    garden.post(garden.garden, garden.member, title="Other", content="<p>blight on potatoes</p>")
    garden.load()
    status, body = page(api, garden.garden, garden.member, text="Blight", size=15)
    assert status == 200
    assert [p["title"] for p in body["object"]["posts"]] == ["Other", "Tomato BLIGHT alert"]


def test_post_has_the_contract_fields(api, garden):
    post_id = garden.post(garden.garden, garden.member, title="Hello", slug="hello")
    garden.comment(post_id, garden.member)
    garden.comment(post_id, garden.member, isApproved=False)
    garden.load()
    status, body = api.get(f"/api/v1/en_US/post/{post_id}", garden.member)
    assert status == 200
    post = body["object"]
    assert post["type"] == "post" and post["id"] == post_id and post["slug"] == "hello"
    assert post["url"] == "https://community.example/garden/hello"
    assert (
        post["group"]["id"] == garden.garden
        and post["group"]["url"] == "https://community.example/garden"
    )
    assert post["author"]["id"] == garden.member and post["author"]["alias"] == "Gardener"
    assert post["source"] == "fixture" and post["commentsCount"] == 1
    assert post["createdOn"].endswith("Z") and post["accessWarnings"] == []


def test_private_group_posts_need_membership(api, garden):
    garden.load()
    status, _ = api.get(f"/api/v1/en_US/post/{garden.post_ids[0]}", garden.outsider)
    assert status == 403
    status, _ = page(api, garden.garden, garden.outsider)
    assert status == 403


def test_unknown_offset_is_400_and_bad_page_size_too(api, garden):
    garden.load()
    status, body = page(
        api, garden.garden, garden.member, offset="6a0c1d7e-3b1f-4d8a-9e2c-5f4b3a2d1c0b"
    )
    assert status == 400 and body["errors"][0]["key"] == "offset"
    for size in (0, 101, "x"):
        status, body = page(api, garden.garden, garden.member, size=size)
        assert status == 400 and body["errors"][0]["key"] == "pageSize"


def test_post_comments_are_approved_live_and_oldest_first(api, garden):
    post_id = garden.post_ids[0]
    first = garden.comment(post_id, garden.member, content="<p>one</p>")
    garden.comment(post_id, garden.member, isApproved=False)
    garden.comment(
        post_id, garden.member, deletedOn="2026-02-01T00:00:00Z", deletedById=garden.member
    )
    third = garden.comment(post_id, garden.member, content="<p>three</p>")
    garden.load()
    status, body = api.get(f"/api/v1/en_US/post/{post_id}/comments?pageSize=1", garden.member)
    assert status == 200
    assert [c["id"] for c in body["object"]["comments"]] == [first]
    comment = body["object"]["comments"][0]
    assert comment["url"] == f"https://community.example/garden/post-00#{first}"
    assert comment["post"]["id"] == post_id and comment["type"] == "comment"
    status, body = api.get(
        f"/api/v1/en_US/post/{post_id}/comments?pageSize=5&offset={first}", garden.member
    )
    assert [c["id"] for c in body["object"]["comments"]] == [third]
    assert body["object"]["offset"] == third


# --- commentsCount: kept on the post by the comment writes ---------------------------------------

MODERATE = "/api/v1/en_US/comment/post"


def count_and_listed(api, post_id, user) -> tuple[int, int]:
    _, post = api.get(f"/api/v1/en_US/post/{post_id}", user)
    _, listed = api.get(f"/api/v1/en_US/post/{post_id}/comments?pageSize=100", user)
    return post["object"]["commentsCount"], len(listed["object"]["comments"])


def test_comments_count_follows_every_moderation_write(api, garden):
    c = garden
    c.moderator = c.user("moderator", {c.garden: "moderator"})
    post_id = c.post_ids[0]
    gone = {"deletedOn": "2026-02-01T00:00:00Z", "deletedById": c.member}
    visible = c.comment(post_id, c.member)
    waiting = c.comment(post_id, c.member, isApproved=False)
    deleted = c.comment(post_id, c.member, **gone)
    deleted_unapproved = c.comment(post_id, c.member, isApproved=False, **gone)
    c.load()
    assert count_and_listed(api, post_id, c.member) == (1, 1)

    steps = [
        ("POST", f"{waiting}/approve", 2),
        ("POST", f"{waiting}/approve", 2),  # idempotent: counted once
        ("DELETE", f"{visible}", 1),
        ("DELETE", f"{visible}", 1),
        ("POST", f"{visible}/undelete", 2),
        ("POST", f"{deleted_unapproved}/undelete", 2),  # back, but still unapproved
        ("POST", f"{deleted_unapproved}/approve", 3),
        ("POST", f"{deleted}/purge", 3),  # deleted comments were never counted
        ("DELETE", f"{visible}", 2),
        ("POST", f"{visible}/purge", 2),
    ]
    for method, action, expected in steps:
        status, _ = api.call(method, f"{MODERATE}/{action}", c.moderator)
        assert status == 200, action
        assert count_and_listed(api, post_id, c.member) == (expected, expected), action


def test_comments_count_survives_a_reload_and_counts_comments_added_since(api, garden):
    from chalicelib.store.comments import CommentRepository

    post_id = garden.post_ids[0]
    garden.comment(post_id, garden.member)
    garden.load()
    extra = {
        "post_id": post_id,
        "group_id": garden.garden,
        "author_id": garden.member,
        "created_on": datetime(2026, 6, 1, tzinfo=UTC),
    }
    assert CommentRepository().insert(id=900, **extra) is True
    assert CommentRepository().insert(id=900, **extra) is False  # a retried insert counts once
    assert CommentRepository().insert(id=901, is_approved=False, **extra) is True
    # A post the file gives no comment: only what mail added since the first load counts.
    uncommented = garden.post_ids[1]
    assert CommentRepository().insert(id=902, **{**extra, "post_id": uncommented}) is True
    assert count_and_listed(api, post_id, garden.member) == (2, 2)
    garden.load()  # writes the posts whole again
    assert count_and_listed(api, post_id, garden.member) == (2, 2)
    assert count_and_listed(api, uncommented, garden.member) == (1, 1)


def test_get_post_reads_the_same_whatever_its_number_of_comments(api, garden, dynamo_counter):
    few, many = garden.post_ids[0], garden.post_ids[1]
    for _ in range(2):
        garden.comment(few, garden.member)
    for _ in range(300):
        garden.comment(many, garden.member)
    garden.load()
    api.get(f"/api/v1/en_US/post/{few}", garden.member)  # caches (the root group) warmed up
    work = {}
    for post_id in (few, many):
        dynamo_counter.reset()
        status, body = api.get(f"/api/v1/en_US/post/{post_id}", garden.member)
        assert status == 200
        work[post_id] = (dict(dynamo_counter.requests), dynamo_counter.items_read)
    assert body["object"]["commentsCount"] == 300
    assert work[few] == work[many]
    assert "Query" not in work[many][0] and "Scan" not in work[many][0]


# --- filter: a bounded read per page, with a continuation offset ---------------------------------


def test_filter_matching_nothing_reads_a_bounded_window_and_moves_the_offset_on(
    api, garden, dynamo_counter
):
    from chalicelib.store.base import FILTER_READ_LIMIT

    for i in range(250):
        garden.post(garden.garden, garden.member, title=f"Extra {i}")
    garden.load()
    api.get(f"/api/v1/en_US/post/list/{garden.garden}?pageSize=1", garden.member)  # warm caches
    dynamo_counter.reset()
    status, body = page(api, garden.garden, garden.member, size=1, text="no-such-words")
    assert status == 200 and body["object"]["posts"] == []
    assert dynamo_counter.requests.get("Query") == 1 and "Scan" not in dynamo_counter.requests
    # The window, the caller and the group: never the 300 posts of the group.
    assert dynamo_counter.items_read <= FILTER_READ_LIMIT + 3
    # The answer says where the read stopped: the next page goes on from there.
    assert body["object"]["offset"] not in (None, "", "0")


def test_filter_pages_walk_the_whole_list_without_gap_or_repeat(api, garden):
    from chalicelib.store.base import FILTER_READ_LIMIT

    wanted = []
    for i in range(FILTER_READ_LIMIT * 3):
        title = f"Blight report {i}" if i % 37 == 0 else f"Other {i}"
        post_id = garden.post(garden.garden, garden.member, title=title)
        if i % 37 == 0:
            wanted.append(post_id)
    garden.load()
    seen, offsets, offset = [], [], None
    for _ in range(20):
        status, body = page(api, garden.garden, garden.member, offset, size=2, text="BLIGHT")
        assert status == 200
        posts = body["object"]["posts"]
        assert len(posts) <= 2
        seen += [p["id"] for p in posts]
        if not posts and body["object"]["offset"] == offset:
            break  # the end: nothing found, and the offset did not move
        offsets.append(offset)
        offset = body["object"]["offset"]
    else:
        pytest.fail("the pages never ended")
    assert seen == list(reversed(wanted))
    assert len(offsets) == len(set(offsets))  # every request moved on


class TransactionConflicts:
    """A botocore hook: the next `times` TransactWriteItems are cancelled as DynamoDB cancels one
    of two transactions writing the same item at once (nothing written)."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.cancelled = 0

    def __call__(self, **_):
        if self.cancelled >= self.times:
            return None
        self.cancelled += 1

        class Http:
            status_code = 400

        return Http(), {
            "Error": {"Code": "TransactionCanceledException", "Message": "conflict"},
            # The comment was fine; its post was being written by another transaction.
            "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}],
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }

    def installed(self):
        from contextlib import contextmanager

        from chalicelib.store.comments import CommentRecord

        @contextmanager
        def hooked():
            events = CommentRecord._get_connection().connection.client.meta.events
            events.register_first("before-call.dynamodb.TransactWriteItems", self)
            try:
                yield self
            finally:
                events.unregister("before-call.dynamodb.TransactWriteItems", self)

        return hooked()


@pytest.fixture
def waiting(garden):
    """A moderator, and a member's comment on the first post awaiting approval (loaded)."""
    garden.moderator = garden.user("moderator", {garden.garden: "moderator"})
    comment_id = garden.comment(garden.post_ids[0], garden.member, isApproved=False)
    garden.load()
    return comment_id


def test_a_comment_write_racing_on_its_post_runs_again_and_counts_once(api, garden, waiting):
    with TransactionConflicts(times=2).installed() as conflicts:
        status, _ = api.post(f"{MODERATE}/{waiting}/approve", garden.moderator)
    assert status == 200 and conflicts.cancelled == 2
    assert count_and_listed(api, garden.post_ids[0], garden.member) == (1, 1)


def test_a_comment_write_that_keeps_losing_races_is_409_and_changes_nothing(api, garden, waiting):
    from tests.api.test_comments import stored

    with TransactionConflicts(times=1000).installed():
        status, body = api.post(f"{MODERATE}/{waiting}/approve", garden.moderator)
    assert status == 409 and body["errors"][0]["key"] == "state"
    assert stored(waiting).is_approved is False
    assert count_and_listed(api, garden.post_ids[0], garden.member) == (0, 0)
