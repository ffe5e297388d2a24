"""Comment moderation (spec "Post comments" and "Post comment moderation"; CONTRACT §5-§8)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

PREFIX = "/api/v1/en_US/comment/post"
BASE = "https://community.example"
OLD = "2025-01-01T00:00:00Z"


@pytest.fixture
def garden(community):
    """A group with its moderators, a member who comments, and a second group."""
    c = community
    c.root_admin = c.users[0]["id"]
    c.garden = c.group("garden")
    c.other = c.group("other")
    c.admin = c.user("garden-admin", {c.garden: "administrator"})
    c.moderator = c.user("garden-moderator", {c.garden: "moderator"})
    c.member = c.user("garden-member", {c.garden: "member"})
    c.other_moderator = c.user("other-moderator", {c.other: "moderator"})
    c.post_id = c.post(c.garden, c.member, title="Roses", slug="roses")
    c.other_post = c.post(c.other, c.other_moderator, title="Elsewhere")
    return c


def deleted(garden, on: str = OLD) -> dict:
    return {"deletedOn": on, "deletedById": garden.moderator}


def list_path(group_id: str, kind: str, **query: object) -> str:
    params = "&".join(f"{name}={value}" for name, value in query.items())
    return f"{PREFIX}/list/{group_id}/{kind}" + (f"?{params}" if params else "")


def ids(body: dict) -> list[int]:
    return [c["id"] for c in body["object"]["comments"]]


def stored(comment_id: int):
    from chalicelib.store.comments import CommentRepository

    return CommentRepository().get(comment_id)


# --- the state table, row by row ---------------------------------------------------------------


def test_approve_makes_an_unapproved_comment_public(api, garden):
    comment = garden.comment(garden.post_id, garden.member, isApproved=False)
    garden.load()
    status, body = api.post(f"{PREFIX}/{comment}/approve", garden.moderator)
    assert status == 200 and body["success"] is True
    approved = body["object"]
    assert approved["id"] == comment and approved["type"] == "comment"
    assert approved["isApproved"] is True and approved["approvedOn"].endswith("Z")
    _, listed = api.get(f"/api/v1/en_US/post/{garden.post_id}/comments", garden.member)
    assert ids(listed) == [comment]
    _, unapproved = api.get(list_path(garden.garden, "unapproved"), garden.moderator)
    assert ids(unapproved) == []


def test_approve_is_idempotent_and_keeps_the_first_approval_date(api, garden):
    comment = garden.comment(
        garden.post_id, garden.member, isApproved=True, approvedOn="2026-01-05T00:00:00Z"
    )
    garden.load()
    status, body = api.post(f"{PREFIX}/{comment}/approve", garden.moderator)
    assert status == 200 and body["object"]["approvedOn"] == "2026-01-05T00:00:00Z"


def test_delete_unapproved_moves_every_unapproved_comment_of_the_group_to_deleted(api, garden):
    waiting = [garden.comment(garden.post_id, garden.member, isApproved=False) for _ in range(3)]
    approved = garden.comment(garden.post_id, garden.member)
    already_deleted = garden.comment(
        garden.post_id, garden.member, isApproved=False, **deleted(garden)
    )
    elsewhere = garden.comment(garden.other_post, garden.other_moderator, isApproved=False)
    garden.load()
    status, body = api.delete(list_path(garden.garden, "unapproved"), garden.admin)
    assert status == 200
    assert body["object"] == {"type": "result", "count": 3, "accessWarnings": []}
    _, listed = api.get(list_path(garden.garden, "deleted"), garden.admin)
    assert sorted(ids(listed)) == sorted([*waiting, already_deleted])
    assert all(stored(c).deleted_by_id == garden.admin for c in waiting)
    assert not stored(approved).is_deleted and not stored(elsewhere).is_deleted
    # They can be undeleted later, still awaiting approval.
    status, body = api.post(f"{PREFIX}/{waiting[0]}/undelete", garden.admin)
    assert status == 200 and body["object"]["isApproved"] is False
    _, unapproved = api.get(list_path(garden.garden, "unapproved"), garden.admin)
    assert ids(unapproved) == [waiting[0]]


def test_delete_answers_the_deleted_comment_deleted_by_the_caller(api, garden):
    comment = garden.comment(garden.post_id, garden.member)
    garden.load()
    status, body = api.delete(f"{PREFIX}/{comment}", garden.moderator)
    assert status == 200
    record = body["object"]
    assert record["deletedOn"].endswith("Z")
    assert record["deletedBy"]["id"] == garden.moderator
    assert record["deletedBy"]["alias"] == "Garden Moderator"
    _, listed = api.get(f"/api/v1/en_US/post/{garden.post_id}/comments", garden.member)
    assert ids(listed) == []


def test_delete_is_idempotent_and_keeps_who_deleted_first(api, garden):
    comment = garden.comment(garden.post_id, garden.member, **deleted(garden))
    garden.load()
    status, body = api.delete(f"{PREFIX}/{comment}", garden.admin)
    assert status == 200
    assert body["object"]["deletedOn"] == OLD
    assert body["object"]["deletedBy"]["id"] == garden.moderator


def test_undelete_restores_a_deleted_comment(api, garden):
    comment = garden.comment(garden.post_id, garden.member, **deleted(garden))
    garden.load()
    status, body = api.post(f"{PREFIX}/{comment}/undelete", garden.moderator)
    assert status == 200
    assert body["object"]["deletedOn"] is None and body["object"]["deletedBy"] is None
    _, listed = api.get(f"/api/v1/en_US/post/{garden.post_id}/comments", garden.member)
    assert ids(listed) == [comment]


def test_undelete_of_a_live_comment_is_409_with_key_state(api, garden):
    comment = garden.comment(garden.post_id, garden.member)
    garden.load()
    status, body = api.post(f"{PREFIX}/{comment}/undelete", garden.moderator)
    assert status == 409 and body["success"] is False
    assert [e["key"] for e in body["errors"]] == ["state"]
    assert body["errors"][0]["value"] == "approved"


def test_purge_removes_a_recently_deleted_comment_for_good(api, garden):
    parent = garden.comment(
        garden.post_id, garden.member, **deleted(garden, on="2026-11-20T00:00:00Z")
    )
    reply = garden.comment(garden.post_id, garden.member, parentCommentId=parent)
    garden.load()
    status, body = api.post(f"{PREFIX}/{parent}/purge", garden.moderator)
    assert status == 200
    assert body["object"]["id"] == parent and body["object"]["deletedOn"] == "2026-11-20T00:00:00Z"
    assert stored(parent) is None
    for method, path in (("POST", f"{parent}/purge"), ("POST", f"{parent}/undelete")):
        status, body = api.call(method, f"{PREFIX}/{path}", garden.moderator)
        assert status == 404 and body["errors"][0]["key"] == "commentId"
    assert stored(reply).parent_comment_id == parent


def test_purge_of_a_live_comment_is_409_with_key_state(api, garden):
    comment = garden.comment(garden.post_id, garden.member, isApproved=False)
    garden.load()
    status, body = api.post(f"{PREFIX}/{comment}/purge", garden.moderator)
    assert status == 409 and body["errors"][0]["key"] == "state"
    assert body["errors"][0]["value"] == "unapproved"
    assert stored(comment) is not None


def test_purge_deleted_of_a_group_keeps_comments_deleted_within_a_month(api, garden):
    now = datetime.now(UTC)
    old = [garden.comment(garden.post_id, garden.member, **deleted(garden)) for _ in range(2)]
    recent = garden.comment(
        garden.post_id,
        garden.member,
        **deleted(garden, on=(now - timedelta(days=2)).isoformat()),
    )
    elsewhere = garden.comment(
        garden.other_post,
        garden.other_moderator,
        deletedOn=OLD,
        deletedById=garden.other_moderator,
    )
    garden.load()
    status, body = api.post(f"{PREFIX}/purge-deleted/group/{garden.garden}", garden.moderator)
    assert status == 200 and body["object"] == {"type": "result", "count": 2, "accessWarnings": []}
    assert all(stored(c) is None for c in old)
    assert stored(recent) is not None and stored(elsewhere) is not None


def test_spam_reports_delete_empties_the_reports_and_keeps_the_state(api, garden):
    comment = garden.comment(
        garden.post_id,
        garden.member,
        isApproved=False,
        spamReports=[{"authorId": garden.other_moderator, "createdOn": "2026-02-01T00:00:00Z"}],
    )
    garden.load()
    status, body = api.delete(f"{PREFIX}/{comment}/spam-reports", garden.moderator)
    assert status == 200
    record = body["object"]
    assert record["type"] == "commentSpamReport" and record["reports"] == []
    assert record["spamReports"] == 0 and record["isApproved"] is False
    _, reported = api.get(list_path(garden.garden, "spam-reports"), garden.moderator)
    assert ids(reported) == []
    _, unapproved = api.get(list_path(garden.garden, "unapproved"), garden.moderator)
    assert ids(unapproved) == [comment]


def test_unknown_comment_is_404_on_every_comment_route(api, garden):
    garden.load()
    for method, path in (
        ("DELETE", "987654"),
        ("POST", "987654/undelete"),
        ("POST", "987654/purge"),
        ("POST", "987654/approve"),
        ("DELETE", "987654/spam-reports"),
    ):
        status, body = api.call(method, f"{PREFIX}/{path}", garden.moderator)
        assert status == 404, path
        assert body["errors"][0]["key"] == "commentId"


def test_comment_id_must_be_an_integer(api, garden):
    garden.load()
    status, body = api.post(f"{PREFIX}/abc/approve", garden.moderator)
    assert status == 400 and body["errors"][0]["key"] == "commentId"


# --- records -------------------------------------------------------------------------------------


def test_deleted_list_records_are_the_spec_record_newest_deletion_first(api, garden):
    first = garden.comment(
        garden.post_id,
        garden.member,
        content="<p>first</p>",
        rating=4,
        votes=2,
        **deleted(garden, on="2026-03-01T00:00:00Z"),
    )
    second = garden.comment(
        garden.post_id, garden.member, **deleted(garden, on="2026-04-01T00:00:00Z")
    )
    garden.comment(garden.post_id, garden.member)
    garden.load()
    status, body = api.get(list_path(garden.garden, "deleted"), garden.moderator)
    assert status == 200
    assert ids(body) == [second, first] and body["object"]["offset"] == first
    record = body["object"]["comments"][1]
    assert record["type"] == "comment" and "reports" not in record
    assert record["url"] == f"{BASE}/garden/roses#{first}"
    assert record["post"] == {
        "id": garden.post_id,
        "title": "Roses",
        "slug": "roses",
        "url": f"{BASE}/garden/roses",
    }
    assert record["author"]["id"] == garden.member
    assert record["deletedOn"] == "2026-03-01T00:00:00Z"
    assert record["deletedBy"]["id"] == garden.moderator
    assert record["content"] == "<p>first</p>" and record["rating"] == 4 and record["votes"] == 2
    assert record["parentCommentId"] == 0 and record["isAnonymous"] is False
    assert record["accessWarnings"] == [] and record["createdOn"].endswith("Z")


def test_spam_report_list_shows_reports_newest_report_first(api, garden):
    early, late = "2026-02-01T00:00:00Z", "2026-02-03T00:00:00Z"
    reporter = garden.other_moderator
    once = garden.comment(
        garden.post_id, garden.member, spamReports=[{"authorId": reporter, "createdOn": late}]
    )
    twice = garden.comment(
        garden.post_id,
        garden.member,
        spamReports=[
            {"authorId": reporter, "createdOn": early},
            {"authorId": garden.admin, "createdOn": "2026-02-02T00:00:00Z"},
        ],
    )
    garden.comment(garden.post_id, garden.member)
    garden.load()
    status, body = api.get(list_path(garden.garden, "spam-reports"), garden.moderator)
    assert status == 200 and ids(body) == [once, twice]
    record = body["object"]["comments"][1]
    assert record["type"] == "commentSpamReport" and record["spamReports"] == 2
    assert [r["author"]["id"] for r in record["reports"]] == [garden.admin, reporter]
    assert record["reports"][1]["createdOn"] == early


# --- paging and filter ---------------------------------------------------------------------------


def test_paging_forty_unapproved_while_approving_the_last_shown_has_no_gap_or_repeat(api, garden):
    waiting = [garden.comment(garden.post_id, garden.member, isApproved=False) for _ in range(40)]
    garden.load()
    seen, offset, pages = [], None, 0
    while True:
        query = {"pageSize": 15, **({"offset": offset} if offset else {})}
        status, body = api.get(list_path(garden.garden, "unapproved", **query), garden.admin)
        assert status == 200
        page = ids(body)
        if not page:
            assert body["object"]["offset"] == offset
            break
        pages += 1
        seen += page
        offset = body["object"]["offset"]
        assert offset == page[-1]
        # The administrator approves the last comment shown: it leaves the list before she scrolls.
        status, _ = api.post(f"{PREFIX}/{offset}/approve", garden.admin)
        assert status == 200
    assert pages == 3
    assert seen == list(reversed(waiting))  # newest first, each exactly once


def test_deleted_list_continues_after_an_offset_that_was_undeleted_since(api, garden):
    deleted_ids = [
        garden.comment(
            garden.post_id, garden.member, **deleted(garden, on=f"2026-03-{d:02d}T00:00:00Z")
        )
        for d in range(1, 7)
    ]
    garden.load()
    _, first = api.get(list_path(garden.garden, "deleted", pageSize=3), garden.moderator)
    assert ids(first) == deleted_ids[:2:-1]
    offset = first["object"]["offset"]
    status, _ = api.post(f"{PREFIX}/{offset}/undelete", garden.moderator)
    assert status == 200
    _, second = api.get(
        list_path(garden.garden, "deleted", pageSize=3, offset=offset), garden.moderator
    )
    assert ids(second) == deleted_ids[2::-1]


def test_spam_list_continues_after_an_offset_whose_reports_were_deleted(api, garden):
    reported = [
        garden.comment(
            garden.post_id,
            garden.member,
            spamReports=[{"authorId": garden.admin, "createdOn": f"2026-02-{d:02d}T00:00:00Z"}],
        )
        for d in range(1, 5)
    ]
    garden.load()
    _, first = api.get(list_path(garden.garden, "spam-reports", pageSize=2), garden.moderator)
    offset = first["object"]["offset"]
    assert api.delete(f"{PREFIX}/{offset}/spam-reports", garden.moderator)[0] == 200
    _, second = api.get(
        list_path(garden.garden, "spam-reports", pageSize=2, offset=offset), garden.moderator
    )
    assert ids(second) == [reported[1], reported[0]]


def test_filter_matches_content_or_author_alias_case_insensitively(api, garden):
    rosie = garden.user("rosie-thorn", {garden.garden: "member"})
    by_content = garden.comment(
        garden.post_id, garden.member, content="<p>Buy CHEAP thorns</p>", isApproved=False
    )
    by_alias = garden.comment(garden.post_id, rosie, content="<p>hello</p>", isApproved=False)
    garden.comment(garden.post_id, garden.member, content="<p>hello</p>", isApproved=False)
    garden.load()
    status, body = api.get(list_path(garden.garden, "unapproved", filter="ThOrN"), garden.admin)
    assert status == 200 and ids(body) == [by_alias, by_content]
    _, body = api.get(list_path(garden.garden, "unapproved", filter="cheap"), garden.admin)
    assert ids(body) == [by_content]


def test_offset_of_an_unknown_comment_or_one_of_another_group_is_400(api, garden):
    garden.comment(garden.post_id, garden.member, **deleted(garden))
    elsewhere = garden.comment(garden.other_post, garden.other_moderator, isApproved=False)
    never_deleted = garden.comment(garden.post_id, garden.member)
    garden.load()
    for kind, offset in (
        ("deleted", 987654),
        ("unapproved", elsewhere),
        ("spam-reports", 987654),
        ("deleted", never_deleted),
        ("unapproved", "x"),
    ):
        status, body = api.get(list_path(garden.garden, kind, offset=offset), garden.moderator)
        assert status == 400, (kind, offset)
        assert body["errors"][0]["key"] == "offset"
        assert body["errors"][0]["value"] == str(offset)


def test_page_size_outside_one_to_a_hundred_is_400(api, garden):
    garden.load()
    for size in (0, 101, "many"):
        status, body = api.get(list_path(garden.garden, "deleted", pageSize=size), garden.admin)
        assert status == 400 and body["errors"][0]["key"] == "pageSize"


def test_empty_page_answers_the_requested_offset(api, garden):
    only = garden.comment(garden.post_id, garden.member, isApproved=False)
    garden.load()
    status, body = api.get(list_path(garden.garden, "unapproved", offset=only), garden.admin)
    assert status == 200 and body["object"] == {
        "offset": only,
        "comments": [],
        "accessWarnings": [],
    }


def test_deleted_page_reads_its_size_not_the_group(api, garden, dynamo_counter):
    for i in range(2000):
        extra = deleted(garden, on=f"2026-0{1 + i % 9}-01T00:{i % 60:02d}:00Z") if i % 2 else {}
        garden.comment(garden.post_id, garden.member, **extra)
    garden.load()
    _, first = api.get(list_path(garden.garden, "deleted", pageSize=15), garden.moderator)
    dynamo_counter.reset()
    status, body = api.get(
        list_path(garden.garden, "deleted", pageSize=15, offset=first["object"]["offset"]),
        garden.moderator,
    )
    assert status == 200 and len(body["object"]["comments"]) == 15
    assert "Scan" not in dynamo_counter.requests
    # The caller, the group, the offset comment, one Query of 15, then the page's post, group
    # and users in batches: O(15) items, whatever the size of the group.
    assert dynamo_counter.items_read <= 15 + 10
    assert dynamo_counter.requests.get("Query", 0) <= 2


# --- privileges ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("root_admin", 200),
        ("admin", 200),
        ("moderator", 200),
        ("member", 403),
        ("other_moderator", 403),
        (None, 401),
    ],
)
def test_moderation_needs_a_moderator_of_the_comments_group(api, garden, who, expected):
    comment = garden.comment(garden.post_id, garden.member, isApproved=False)
    garden.load()
    user = getattr(garden, who) if who else None
    calls = [
        ("GET", list_path(garden.garden, "deleted")),
        ("GET", list_path(garden.garden, "unapproved")),
        ("GET", list_path(garden.garden, "spam-reports")),
        ("POST", f"{PREFIX}/{comment}/approve"),
        ("DELETE", f"{PREFIX}/{comment}/spam-reports"),
        ("DELETE", f"{PREFIX}/{comment}"),
        ("POST", f"{PREFIX}/{comment}/undelete"),
        ("DELETE", f"{PREFIX}/{comment}"),
        ("POST", f"{PREFIX}/{comment}/purge"),
        ("POST", f"{PREFIX}/purge-deleted/group/{garden.garden}"),
        ("DELETE", list_path(garden.garden, "unapproved")),
    ]
    for method, path in calls:
        status, body = api.call(method, path, user)
        assert status == expected, (method, path)
        assert body["success"] is (expected == 200)
    if expected != 200:
        assert not stored(comment).is_deleted and not stored(comment).is_approved


def test_filtered_moderation_list_reads_a_bounded_window(api, garden, dynamo_counter):
    from chalicelib.store.base import FILTER_READ_LIMIT

    for i in range(250):
        garden.comment(
            garden.post_id,
            garden.member,
            **deleted(garden, on=f"2026-01-01T{i // 60:02d}:{i % 60:02d}:00Z"),
        )
    garden.load()
    api.get(list_path(garden.garden, "deleted", pageSize=1), garden.moderator)  # warm caches
    dynamo_counter.reset()
    status, body = api.get(
        list_path(garden.garden, "deleted", pageSize=15, filter="nothing-like-this"),
        garden.moderator,
    )
    assert status == 200 and ids(body) == []
    assert dynamo_counter.requests.get("Query", 0) == 1
    assert dynamo_counter.items_read <= FILTER_READ_LIMIT + 3
    # Continuing from the offset answered reads the rest, and finds nothing either.
    seen_offsets = {body["object"]["offset"]}
    for _ in range(5):
        offset = body["object"]["offset"]
        _, body = api.get(
            list_path(
                garden.garden, "deleted", pageSize=15, filter="nothing-like-this", offset=offset
            ),
            garden.moderator,
        )
        assert ids(body) == []
        if body["object"]["offset"] == offset:
            break
        seen_offsets.add(body["object"]["offset"])
    # 250 deleted comments: windows of 100 and 100 move the offset, the last 50 end the list.
    assert len(seen_offsets) == 2
