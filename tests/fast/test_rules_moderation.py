"""Comment moderation (spec "Post comment moderation", CONTRACT §8) on the in-memory repositories:
each transition from each state, the lists' offsets, the month rule of the purge, and the decision
taken again when a rival moderator changed the comment between our read and our write."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chalicelib.domain.announcements import CommentApproved, CommentDeleted, CommentPurged
from chalicelib.errors import Conflict, NotFound, ValidationFailed
from chalicelib.schemas.common import IntPageQuery
from chalicelib.services.comments import CommentPresenter, CommentService, one_month_before
from chalicelib.services.groups import GroupService
from chalicelib.store.comments import SpamReport
from tests.support import NOW, fakes


class Never:
    def expired(self) -> bool:
        return False


class Always:
    def expired(self) -> bool:
        return True


class World:
    """A garden group with one post by Ann, moderated by Mo; comments added on demand."""

    def __init__(self) -> None:
        self.groups = fakes.FakeGroupRepository(
            fakes.group("root"), fakes.group("garden", parent_id="root")
        )
        self.garden = self.groups.get("garden")
        self.users = fakes.FakeUserRepository()
        for user_id, alias in (("ann", "Ann"), ("mo", "Mo"), ("bob", "Bob")):
            self.users.save(fakes.user(id=user_id, alias=alias, slug=user_id, email=f"{user_id}@x"))
        self.posts = fakes.FakePostRepository()
        self.comments = fakes.FakeCommentRepository(self.posts)
        self.posts.put(
            id="p1",
            group_id="garden",
            author_id="ann",
            title="Tulips",
            slug="tulips",
            created_on=NOW,
        )
        refs = fakes.FakeReferenceReader(self.posts, self.groups, self.users)
        self.service = CommentService(
            self.comments, GroupService(self.groups), CommentPresenter(refs), lambda: NOW
        )
        self.ids = iter(range(1, 10_000))

    def comment(self, state: str = "approved", minutes: int = 0, **values: Any) -> int:
        """A comment in `state`: approved, unapproved, deleted (was approved), deleted-unapproved."""
        comment_id = next(self.ids)
        deleted = state.startswith("deleted")
        self.comments.insert(
            id=comment_id,
            post_id=values.pop("post_id", "p1"),
            group_id=values.pop("group_id", "garden"),
            author_id="ann",
            content=values.pop("content", f"comment {comment_id}"),
            created_on=NOW - timedelta(days=60) + timedelta(minutes=minutes),
            is_approved=state in ("approved", "deleted"),
            deleted_on=values.pop("deleted_on", NOW - timedelta(days=1)) if deleted else None,
            deleted_by_id="mo" if deleted else None,
            author_alias="Ann",
            **values,
        )
        return comment_id

    def stored(self, comment_id: int) -> Any:
        return self.comments.get(comment_id)

    def find(self, comment_id: int) -> Any:
        return self.service.find(comment_id)

    def count(self) -> int:
        return int(self.posts.get("p1").comments_count or 0)

    def events(self) -> list[type]:
        return [type(e) for e in self.comments.outbox.announcements]


@pytest.fixture
def w() -> World:
    return World()


STATES = ["approved", "unapproved", "deleted", "deleted-unapproved"]
DELETED = ["deleted", "deleted-unapproved"]
LIVE = ["approved", "unapproved"]


# --- one comment: every transition from every state -----------------------------------------------


@pytest.mark.parametrize("state", STATES)
def test_delete_leaves_every_comment_deleted(w, state):
    comment_id = w.comment(state)
    answer = w.service.delete(w.find(comment_id), "mo")
    stored = w.stored(comment_id)
    assert stored.is_deleted and answer.deleted_on is not None
    assert answer.is_approved == (state in ("approved", "deleted"))


@pytest.mark.parametrize("state", LIVE)
def test_delete_of_a_live_comment_records_who_and_when_and_announces_it(w, state):
    comment_id = w.comment(state)
    answer = w.service.delete(w.find(comment_id), "mo")
    assert (w.stored(comment_id).deleted_on, w.stored(comment_id).deleted_by_id) == (NOW, "mo")
    assert answer.deleted_by.id == "mo"
    assert w.events() == [CommentDeleted]


@pytest.mark.parametrize("state", DELETED)
def test_delete_of_a_deleted_comment_changes_nothing(w, state):
    comment_id = w.comment(state)
    before = w.stored(comment_id)
    w.service.delete(w.find(comment_id), "bob")
    after = w.stored(comment_id)
    assert (after.deleted_by_id, after.deleted_on, after.version) == (
        "mo",
        before.deleted_on,
        before.version,
    )
    assert w.events() == []


@pytest.mark.parametrize("state", DELETED)
def test_undelete_restores_the_comment_approved_or_not_as_it_was(w, state):
    comment_id = w.comment(state)
    answer = w.service.undelete(w.find(comment_id))
    stored = w.stored(comment_id)
    assert not stored.is_deleted and stored.deleted_by_id is None
    assert answer.is_approved == (state == "deleted") == stored.is_approved


@pytest.mark.parametrize("state", LIVE)
def test_undelete_of_a_live_comment_is_a_409_naming_its_state(w, state):
    comment_id = w.comment(state)
    with pytest.raises(Conflict) as raised:
        w.service.undelete(w.find(comment_id))
    (error,) = raised.value.errors
    assert (raised.value.status, error.key, error.value) == (
        409,
        "state",
        state.replace("unapproved", "unapproved"),
    )
    assert w.stored(comment_id).version == 1


@pytest.mark.parametrize("state", ["unapproved", "deleted-unapproved"])
def test_approve_approves_an_unapproved_comment_deleted_or_not(w, state):
    comment_id = w.comment(state)
    answer = w.service.approve(w.find(comment_id), "mo")
    stored = w.stored(comment_id)
    assert stored.is_approved and stored.approved_on == NOW and answer.is_approved
    assert stored.is_deleted == (state == "deleted-unapproved")
    assert w.events() == [CommentApproved]


@pytest.mark.parametrize("state", ["approved", "deleted"])
def test_approve_of_an_approved_comment_writes_nothing(w, state):
    comment_id = w.comment(state)
    w.service.approve(w.find(comment_id), "mo")
    assert w.stored(comment_id).version == 1 and w.events() == []


@pytest.mark.parametrize("state", DELETED)
def test_purge_removes_a_deleted_comment_and_answers_it_as_it_was(w, state):
    comment_id = w.comment(state)
    answer = w.service.purge(w.find(comment_id), "mo")
    assert w.stored(comment_id) is None
    assert answer.id == comment_id and answer.deleted_on is not None
    assert w.events() == [CommentPurged]


@pytest.mark.parametrize("state", LIVE)
def test_purge_of_a_live_comment_is_a_409(w, state):
    comment_id = w.comment(state)
    with pytest.raises(Conflict):
        w.service.purge(w.find(comment_id), "mo")
    assert w.stored(comment_id) is not None


def test_finding_an_unknown_comment_is_a_404_naming_the_comment_id(w):
    with pytest.raises(NotFound) as raised:
        w.service.find(404)
    assert raised.value.errors[0].key == "commentId"


def test_the_group_of_a_comment_is_its_post_group(w):
    assert w.service.group_of(w.find(w.comment())).id == "garden"


# --- the post's count follows visibility ----------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "action", "count"),
    [
        ("approved", "delete", 1),
        ("unapproved", "approve", 2),
        ("deleted", "undelete", 2),
        ("deleted-unapproved", "undelete", 1),
        ("deleted-unapproved", "approve", 1),
        ("unapproved", "delete", 1),
    ],
)
def test_the_posts_comment_count_is_its_visible_comments(w, state, action, count):
    w.comment("approved")
    comment_id = w.comment(state)
    record = w.find(comment_id)
    if action == "delete":
        w.service.delete(record, "mo")
    else:
        getattr(w.service, action)(record)
    assert w.count() == count


# --- spam reports ---------------------------------------------------------------------------------


def reports(*minutes: int) -> list[Any]:
    return [SpamReport(author_id="bob", created_on=NOW - timedelta(minutes=m)) for m in minutes]


def test_clearing_spam_reports_empties_them_and_answers_a_spam_report_record(w):
    comment_id = w.comment(spam_reports=reports(5, 1))
    answer = w.service.delete_spam_reports(w.find(comment_id))
    assert w.stored(comment_id).spam_reports == ()
    assert (answer.type, answer.spam_reports, answer.reports) == ("commentSpamReport", 0, [])


def test_clearing_no_spam_reports_writes_nothing(w):
    comment_id = w.comment()
    w.service.delete_spam_reports(w.find(comment_id))
    assert w.stored(comment_id).version == 1


def test_the_spam_report_list_shows_reports_newest_first(w):
    w.comment(spam_reports=reports(30, 5, 10))
    page = w.service.spam_report_page(w.garden, IntPageQuery())
    (comment,) = page.comments
    assert comment.spam_reports == 3
    assert [r.created_on for r in comment.reports] == [
        NOW - timedelta(minutes=m) for m in (5, 10, 30)
    ]


# --- lists and their offsets ----------------------------------------------------------------------


def test_the_unapproved_list_is_newest_first_and_continues_after_its_offset(w):
    first, second, third = (w.comment("unapproved", minutes=m) for m in (1, 2, 3))
    w.comment("approved", minutes=4)
    page = w.service.unapproved_page(w.garden, IntPageQuery(pageSize=2))
    assert [c.id for c in page.comments] == [third, second] and page.offset == second
    rest = w.service.unapproved_page(w.garden, IntPageQuery(pageSize=2, offset=second))
    assert [c.id for c in rest.comments] == [first]


def test_an_empty_page_answers_the_offset_it_was_asked_for(w):
    only = w.comment("unapproved")
    page = w.service.unapproved_page(w.garden, IntPageQuery(offset=only))
    assert (page.comments, page.offset) == ([], only)


def test_an_offset_from_another_group_is_refused(w):
    w.groups._groups["lawn"] = fakes.group("lawn", parent_id="root")
    elsewhere = w.comment("unapproved", group_id="lawn")
    with pytest.raises(ValidationFailed) as raised:
        w.service.unapproved_page(w.garden, IntPageQuery(offset=elsewhere))
    assert raised.value.errors[0].key == "offset"


def test_an_unknown_offset_is_refused(w):
    with pytest.raises(ValidationFailed):
        w.service.deleted_page(w.garden, IntPageQuery(offset=999))


def test_the_deleted_list_refuses_an_offset_never_deleted(w):
    live = w.comment()
    with pytest.raises(ValidationFailed) as raised:
        w.service.deleted_page(w.garden, IntPageQuery(offset=live))
    assert "never been in the deleted list" in raised.value.errors[0].message


def test_the_deleted_list_continues_after_an_offset_undeleted_since(w):
    older = w.comment("deleted", deleted_on=NOW - timedelta(days=3))
    offset = w.comment("deleted", deleted_on=NOW - timedelta(days=2))
    newer = w.comment("deleted", deleted_on=NOW - timedelta(days=1))
    assert [c.id for c in w.service.deleted_page(w.garden, IntPageQuery()).comments] == [
        newer,
        offset,
        older,
    ]
    w.service.undelete(w.find(offset))
    rest = w.service.deleted_page(w.garden, IntPageQuery(offset=offset))
    assert [c.id for c in rest.comments] == [older]


def test_the_spam_report_list_refuses_an_offset_never_reported(w):
    live = w.comment()
    with pytest.raises(ValidationFailed):
        w.service.spam_report_page(w.garden, IntPageQuery(offset=live))


def test_a_list_filter_finds_the_text_whatever_its_case(w):
    w.comment("unapproved", content="Bright TULIPS")
    w.comment("unapproved", content="roses")
    page = w.service.unapproved_page(w.garden, IntPageQuery(filter="tulips"))
    assert [c.content for c in page.comments] == ["Bright TULIPS"]


def test_a_comment_whose_post_is_gone_is_not_listed(w):
    w.comment("unapproved", post_id="gone")
    w.comment("unapproved")
    assert len(w.service.unapproved_page(w.garden, IntPageQuery()).comments) == 1


def test_a_comment_names_its_post_url_and_anonymous_flag(w):
    comment_id = w.comment(is_anonymous=True, rating=4, votes=2)
    answer = w.service.delete(w.find(comment_id), "mo")
    assert answer.url.endswith(f"/garden/tulips#{comment_id}")
    assert (answer.is_anonymous, answer.rating, answer.votes, answer.post.slug) == (
        True,
        4,
        2,
        "tulips",
    )


def test_an_author_gone_is_shown_as_nobody(w):
    comment_id = w.comment()
    w.users._users.pop("ann")
    answer = w.service.delete(w.find(comment_id), "mo")
    assert (answer.author.id, answer.author.alias) == ("", "")


# --- bulk: the month rule and the unapproved sweep ------------------------------------------------


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 3, 31, 8, tzinfo=UTC), datetime(2026, 2, 28, 8, tzinfo=UTC)),
        (datetime(2028, 3, 31, 8, tzinfo=UTC), datetime(2028, 2, 29, 8, tzinfo=UTC)),
        (datetime(2026, 1, 15, 8, tzinfo=UTC), datetime(2025, 12, 15, 8, tzinfo=UTC)),
        (datetime(2026, 5, 31, 23, 59, tzinfo=UTC), datetime(2026, 4, 30, 23, 59, tzinfo=UTC)),
        (datetime(2026, 7, 1, 0, 0, tzinfo=UTC), datetime(2026, 6, 1, 0, 0, tzinfo=UTC)),
    ],
)
def test_one_month_before_clamps_the_day(moment, expected):
    assert one_month_before(moment) == expected


def test_the_group_purge_takes_comments_deleted_a_month_ago_or_more(w):
    old = w.comment("deleted", deleted_on=one_month_before(NOW))
    older = w.comment("deleted", deleted_on=NOW - timedelta(days=90))
    recent = w.comment("deleted", deleted_on=one_month_before(NOW) + timedelta(seconds=1))
    live = w.comment()
    assert w.service.purge_deleted_in_group(w.garden, Never()).count == 2
    assert [w.stored(i) is None for i in (old, older, recent, live)] == [True, True, False, False]


def test_the_group_purge_leaves_other_groups_alone(w):
    w.groups._groups["lawn"] = fakes.group("lawn", parent_id="root")
    theirs = w.comment("deleted", group_id="lawn", deleted_on=NOW - timedelta(days=90))
    assert w.service.purge_deleted_in_group(w.garden, Never()).count == 0
    assert w.stored(theirs) is not None


def test_the_monthly_purge_goes_batch_by_batch_and_tells_its_progress(w):
    for days in range(40, 45):
        w.comment("deleted", deleted_on=NOW - timedelta(days=days))
    told: list[int] = []
    assert w.service.purge_old_deleted(Never(), batch_size=2, progress=told.append) == 5
    assert told == [2, 4, 5]
    assert w.events() == [CommentPurged] * 5


def test_the_monthly_purge_stops_after_one_batch_when_time_is_up(w):
    for days in range(40, 45):
        w.comment("deleted", deleted_on=NOW - timedelta(days=days))
    assert w.service.purge_old_deleted(Always(), batch_size=2) == 2
    assert w.service.purge_old_deleted(Always(), batch_size=2) == 2


def test_deleting_the_unapproved_deletes_only_live_unapproved_comments(w):
    unapproved = [w.comment("unapproved", minutes=m) for m in range(3)]
    approved = w.comment("approved")
    deleted = w.comment("deleted-unapproved")
    result = w.service.delete_unapproved_in_group(w.garden, "mo", Never(), batch_size=2)
    assert result.count == 3
    assert all(w.stored(i).deleted_by_id == "mo" for i in unapproved)
    assert not w.stored(approved).is_deleted
    assert w.stored(deleted).deleted_by_id == "mo" and w.stored(deleted).version == 1
    assert w.events() == [CommentDeleted] * 3


def test_deleting_the_unapproved_makes_progress_even_out_of_time(w):
    for m in range(3):
        w.comment("unapproved", minutes=m)
    assert w.service.delete_unapproved_in_group(w.garden, "mo", Always(), batch_size=2).count == 2


# --- a rival moderator between our read and our write ---------------------------------------------


class RivalFirst(fakes.FakeCommentRepository):
    """Lets `rival` act once, just before our first conditional write."""

    rival: Any = None

    def _first(self) -> None:
        rival, self.rival = self.rival, None
        if rival is not None:
            rival()

    def replace_if_unchanged(self, read, changed, *, announcements=()):
        self._first()
        return super().replace_if_unchanged(read, changed, announcements=announcements)

    def purge_if_unchanged(self, record, announcements=()):
        self._first()
        return super().purge_if_unchanged(record, announcements)


def rival_undeletes(world: World, comment_id: int) -> None:
    theirs = world.comments.get(comment_id)
    world.comments.replace_if_unchanged(
        theirs, dataclasses.replace(theirs, deleted_on=None, deleted_by_id=None)
    )


@pytest.fixture
def race() -> World:
    world = World()
    world.comments = RivalFirst(world.posts)
    world.service.comments = world.comments
    return world


def test_an_undelete_after_a_rival_purge_is_a_404(race):
    comment_id = race.comment("deleted")
    mine = race.find(comment_id)
    race.comments.rival = lambda: race.comments.purge_if_unchanged(race.comments.get(comment_id))
    with pytest.raises(NotFound):
        race.service.undelete(mine)
    assert race.stored(comment_id) is None


@pytest.mark.parametrize("action", ["undelete", "purge"])
def test_undelete_or_purge_after_a_rival_undelete_is_a_409_and_writes_nothing_more(race, action):
    comment_id = race.comment("deleted")
    mine = race.find(comment_id)
    race.comments.rival = lambda: rival_undeletes(race, comment_id)
    with pytest.raises(Conflict):
        getattr(race.service, action)(mine)
    stored = race.stored(comment_id)
    assert (stored.is_deleted, stored.version) == (False, 2)


def test_an_approval_after_a_rival_deletion_approves_the_deleted_comment(race):
    comment_id = race.comment("unapproved")
    mine = race.find(comment_id)

    def rival() -> None:
        theirs = race.comments.get(comment_id)
        race.comments.replace_if_unchanged(
            theirs, dataclasses.replace(theirs, deleted_on=NOW, deleted_by_id="bob")
        )

    race.comments.rival = rival
    answer = race.service.approve(mine, "mo")
    stored = race.stored(comment_id)
    assert stored.is_approved and stored.deleted_by_id == "bob" and answer.is_approved
    assert race.count() == 0


def test_a_comment_that_never_stops_changing_is_given_up_with_a_409(w):
    comment_id = w.comment("unapproved")

    class AlwaysStale(fakes.FakeCommentRepository):
        def replace_if_unchanged(self, read, changed, *, announcements=()):
            return None

    stale = AlwaysStale(w.posts)
    stale._comments = w.comments._comments
    w.service.comments = stale
    with pytest.raises(Conflict) as raised:
        w.service.approve(w.find(comment_id))
    assert "kept changing" in raised.value.errors[0].message
