"""One contract, two implementations, for posts, comments, events and notification settings: the
fakes of the fast tier (tests/support/fakes.py) answer as the PynamoDB repositories do (moto).
Every test runs on both; a rule test that passes on a fake holds on the store."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chalicelib.errors import Conflict
from tests.support import fakes

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def posts(kind):
    from chalicelib.store.posts import PostRepository

    return fakes.FakePostRepository() if kind == "fake" else PostRepository()


@pytest.fixture
def comments(kind, posts):
    from chalicelib.store.comments import CommentRepository

    return fakes.FakeCommentRepository(posts) if kind == "fake" else CommentRepository()


@pytest.fixture
def events(kind):
    from chalicelib.store.events import EventRepository

    return fakes.FakeEventRepository() if kind == "fake" else EventRepository()


@pytest.fixture
def notifications(kind):
    from chalicelib.store.notifications import NotificationRepository

    return fakes.FakeNotificationRepository() if kind == "fake" else NotificationRepository()


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def add_post(posts, post_id: str, minutes: int, group_id: str = "g", title: str = "Hello") -> Any:
    return posts.insert(
        id=post_id,
        group_id=group_id,
        author_id="ann",
        title=title,
        slug=f"slug-{post_id}",
        content=f"<p>{title} text</p>",
        created_on=at(minutes),
    )


def add_comment(comments, comment_id: int, minutes: int, **values: Any) -> None:
    fields = {
        "post_id": "p1",
        "group_id": "g",
        "author_id": "ann",
        "content": f"comment {comment_id}",
        "created_on": at(minutes),
        "is_approved": True,
        **values,
    }
    assert comments.insert(id=comment_id, author_alias="Ann", **fields)


def ids(records) -> list[int]:
    return [int(r.id) for r in records]


# --- posts ----------------------------------------------------------------------------------------


def test_a_post_is_found_by_id_and_slug_and_a_second_insert_of_its_id_is_refused(posts):
    assert add_post(posts, "p1", 0) is True
    assert add_post(posts, "p1", 5, title="Again") is False
    assert posts.get("p1").title == "Hello"
    assert posts.by_slug("g", "slug-p1").id == "p1"
    assert posts.by_slug("other", "slug-p1") is None
    assert posts.get("nope") is None
    assert set(posts.get_many({"p1", "nope"})) == {"p1"}
    assert posts.slugs("g") == ["slug-p1"]


def test_posts_page_newest_first_after_an_offset_and_by_text(posts):
    for n in range(5):
        add_post(posts, f"p{n}", n, title="Tulips" if n % 2 else "Roses")
    add_post(posts, "elsewhere", 9, group_id="h")
    first = posts.page_newest_first("g", limit=2, after=None, text=None)
    assert [p.id for p in first] == ["p4", "p3"]
    rest = posts.page_newest_first("g", limit=5, after=first[-1], text=None)
    assert [p.id for p in rest] == ["p2", "p1", "p0"]
    tulips = posts.page_newest_first("g", limit=5, after=None, text="tulips")
    assert [p.id for p in tulips] == ["p3", "p1"]


# --- comments -------------------------------------------------------------------------------------


def test_a_comment_is_stored_once_at_version_1(comments):
    add_comment(comments, 1, 0)
    assert (
        comments.insert(id=1, post_id="p1", group_id="g", author_id="bob", created_on=at(1))
        is False
    )
    stored = comments.get(1)
    assert (stored.author_id, int(stored.version), stored.is_deleted) == ("ann", 1, False)
    assert comments.get(2) is None


def test_the_visible_list_is_oldest_first_and_the_posts_count_follows_it(posts, comments):
    add_post(posts, "p1", 0)
    add_comment(comments, 1, 1)
    add_comment(comments, 2, 2)
    add_comment(comments, 3, 3, is_approved=False)
    assert ids(comments.visible_page("p1", limit=10, after=None)) == [1, 2]
    assert int(posts.get("p1").comments_count) == 2
    first = comments.get(1)
    assert comments.replace_if_unchanged(
        first, replace(first, deleted_on=at(10), deleted_by_id="mod")
    )
    assert int(posts.get("p1").comments_count) == 1
    assert ids(comments.visible_page("p1", limit=10, after=None)) == [2]
    assert ids(comments.visible_page("p1", limit=10, after=comments.get(2))) == []


def test_a_write_of_a_comment_changed_since_it_was_read_is_refused(comments):
    add_comment(comments, 1, 0)
    mine, theirs = comments.get(1), comments.get(1)
    written = comments.replace_if_unchanged(theirs, replace(theirs, is_approved=False))
    assert int(written.version) == 2 and int(comments.get(1).version) == 2
    assert comments.replace_if_unchanged(mine, replace(mine, deleted_on=at(5))) is None
    stored = comments.get(1)
    assert (stored.is_approved, stored.deleted_on) == (False, None)


def test_a_write_expecting_the_wrong_deleted_state_is_refused(comments):
    add_comment(comments, 1, 0)
    # The comment as read says deleted; the stored one is not.
    record = replace(comments.get(1), deleted_on=at(3))
    assert comments.replace_if_unchanged(record, replace(record, is_approved=False)) is None
    assert comments.get(1).is_approved is True


def test_the_unapproved_list_runs_either_way_and_leaves_out_deleted_comments(comments):
    for n in range(1, 5):
        add_comment(comments, n, n, is_approved=False)
    add_comment(comments, 9, 9, is_approved=False, deleted_on=at(20), deleted_by_id="mod")
    add_comment(comments, 8, 8, group_id="h", is_approved=False)
    newest = comments.unapproved_page("g", limit=2, after=None)
    assert ids(newest) == [4, 3]
    assert ids(comments.unapproved_page("g", limit=5, after=newest[-1])) == [2, 1]
    assert ids(comments.unapproved_page("g", limit=5, after=None, newest_first=False)) == [
        1,
        2,
        3,
        4,
    ]


def test_the_deleted_list_is_newest_deletion_first_and_an_undeleted_offset_keeps_its_place(
    comments,
):
    for n, deleted in ((1, 30), (2, 10), (3, 20)):
        add_comment(comments, n, n, deleted_on=at(deleted), deleted_by_id="mod")
    add_comment(comments, 4, 4)
    assert ids(comments.deleted_page("g", limit=10, after=None, text=None)) == [1, 3, 2]
    read = comments.get(3)
    assert comments.replace_if_unchanged(read, replace(read, deleted_on=None, deleted_by_id=None))
    offset = comments.get(3)
    assert offset.deleted_list_position == at(20)
    assert ids(comments.deleted_page("g", limit=10, after=offset, text=None)) == [2]


def test_the_spam_report_list_is_newest_report_first_and_drops_deleted_comments(comments):
    from chalicelib.store.comments import SpamReport

    add_comment(comments, 1, 1, spam_reports=[SpamReport(author_id="bob", created_on=at(50))])
    add_comment(comments, 2, 2, spam_reports=[SpamReport(author_id="bob", created_on=at(60))])
    add_comment(comments, 3, 3)
    assert ids(comments.reported_page("g", limit=10, after=None, text=None)) == [2, 1]
    reported = comments.get(2)
    assert comments.replace_if_unchanged(reported, replace(reported, deleted_on=at(70)))
    assert ids(comments.reported_page("g", limit=10, after=None, text=None)) == [1]


def test_a_list_filter_matches_the_text_and_the_author_whatever_the_case(comments):
    add_comment(comments, 1, 1, is_approved=False, content="<b>Lovely</b> TULIPS")
    add_comment(comments, 2, 2, is_approved=False, content="roses")
    assert ids(comments.unapproved_page("g", limit=10, after=None, text="tulips")) == [1]
    assert ids(comments.unapproved_page("g", limit=10, after=None, text="ann")) == [2, 1]


def test_only_a_deleted_unchanged_comment_is_purged(comments):
    add_comment(comments, 1, 1)
    add_comment(comments, 2, 2, deleted_on=at(5), deleted_by_id="mod")
    assert comments.purge_if_unchanged(comments.get(1)) is False
    stale = comments.get(2)
    fresh = comments.get(2)
    assert comments.replace_if_unchanged(fresh, replace(fresh, content="edited"))
    assert comments.purge_if_unchanged(stale) is False
    assert comments.purge_if_unchanged(comments.get(2)) is True
    assert comments.get(2) is None and comments.get(1) is not None


def test_purge_candidates_are_those_deleted_by_the_cutoff_oldest_first(comments):
    for n, deleted in ((1, 30), (2, 10), (3, 50)):
        add_comment(comments, n, n, deleted_on=at(deleted), deleted_by_id="mod")
    add_comment(comments, 4, 4, group_id="h", deleted_on=at(20), deleted_by_id="mod")
    assert ids(comments.deleted_before(at(30), limit=10, after=None)) == [2, 4, 1]
    first = comments.deleted_before(at(30), limit=1, after=None)
    assert ids(comments.deleted_before(at(30), limit=10, after=first[-1])) == [4, 1]
    assert ids(comments.deleted_before_in_group("g", at(30), limit=10, after=None)) == [2, 1]
    assert comments.purge_if_deleted_before(3, at(30)) is False
    assert comments.purge_if_deleted_before(1, at(30)) is True
    assert comments.purge_if_deleted_before(1, at(30)) is False
    assert comments.get(1) is None and comments.get(3) is not None


# --- events ---------------------------------------------------------------------------------------


def add_event(events, days: float, title: str = "Meet", **values: Any) -> Any:
    start = T0 + timedelta(days=days)
    return events.create(fakes.event(events.next_id(), start, title=title, created_on=T0, **values))


def test_upcoming_events_ascend_and_expired_ones_descend_from_the_moment(events):
    past, soon, later = add_event(events, -2), add_event(events, 1), add_event(events, 3)
    add_event(events, 2, group_id="h")
    now = T0
    upcoming = events.page("g", moment=now, upcoming=True, limit=10, after=None, text=None)
    assert ids(upcoming) == [int(soon.id), int(later.id)]
    assert ids(
        events.page("g", moment=now, upcoming=True, limit=10, after=upcoming[0], text=None)
    ) == [int(later.id)]
    expired = events.page("g", moment=now, upcoming=False, limit=10, after=None, text=None)
    assert ids(expired) == [int(past.id)]


def test_an_event_changed_since_it_was_read_cannot_be_updated_or_deleted(events):
    event = add_event(events, 1)
    mine, theirs = events.get(int(event.id)), events.get(int(event.id))
    events.update(theirs, replace(theirs, title="Theirs"))
    with pytest.raises(Conflict):
        events.update(mine, replace(mine, title="Mine"))
    with pytest.raises(Conflict):
        events.delete(mine)
    assert events.get(int(event.id)).title == "Theirs"
    events.delete(events.get(int(event.id)))
    assert events.get(int(event.id)) is None


def test_a_written_event_answers_as_stored_and_its_filter_follows_each_write(events):
    event = add_event(events, 1, title="Seed swap", location="Shed")
    # The store derives what `filter` searches from the event as each write leaves it: a move
    # (new dates, nothing said of the text) keeps it, a new title replaces it.
    moved = events.update(event, replace(event, start_date=T0 + timedelta(days=2)))
    renamed = events.update(moved, replace(moved, title="Plant fair"))
    assert (renamed.title, renamed.start_date) == ("Plant fair", T0 + timedelta(days=2))
    assert events.get(event.id) == renamed  # the answer is the stored event, at its version

    def found(text: str) -> list[int]:
        return ids(events.page("g", moment=T0, upcoming=True, limit=10, after=None, text=text))

    assert found("plant") == found("shed") == [event.id] and found("swap") == []


def test_the_calendar_finds_every_event_touching_the_period_even_one_started_before(events):
    long = add_event(events, -40, end_date=T0 + timedelta(days=5))
    inside = add_event(events, 2)
    add_event(events, 20)
    found = events.overlapping("g", T0, T0 + timedelta(days=7), cap=10)
    assert ids(found) == [int(long.id), int(inside.id)]
    assert ids(events.overlapping("g", T0, T0 + timedelta(days=7), cap=1)) == [int(long.id)]


# --- notification settings ------------------------------------------------------------------------


def upsert(notifications, kind: str, target: str, n: int, **settings: Any) -> Any:
    values = {"email_alert_id": None, "show_screen_alert": None, "show_red_label": None}
    return notifications.upsert(
        "u1",
        kind=kind,
        target_id=target,
        notification_id=n,
        group_id="g" if kind == "post" else None,
        settings={**values, **settings},
        modified_on=T0,
    )


def test_a_new_subscription_takes_the_defaults_and_an_unsent_setting_keeps_its_value(notifications):
    first = upsert(notifications, "group", "g", 1, show_red_label=True)
    assert (int(first.email_alert_id), first.show_screen_alert, first.show_red_label) == (
        0,
        False,
        True,
    )
    again = upsert(notifications, "group", "g", 1, email_alert_id=2)
    assert (int(again.email_alert_id), again.show_red_label) == (2, True)
    assert [r.target_id for r in notifications.of_user("u1", "group#g#")] == ["g"]


def test_every_read_answers_the_subscription_as_a_frozen_record(notifications):
    from dataclasses import FrozenInstanceError

    from chalicelib.domain import audit
    from chalicelib.domain.ports.notify import SubscriptionChange
    from chalicelib.domain.subscriptions import Subscription

    saved = upsert(notifications, "post", "p1", 3, show_screen_alert=True)
    expected = Subscription(
        user_id="u1",
        sort_key="post#g#p1#3",
        kind="post",
        target_id="p1",
        group_id="g",
        notification_id=3,
        email_alert_id=0,
        show_screen_alert=True,
        show_red_label=False,
        modified_on=T0,
    )
    assert saved == expected
    assert notifications.of_user("u1", "post#g#") == [expected]
    assert notifications.get("u1", "post#g#p1#3") == expected
    assert notifications.subscribers("post", "p1", 3) == [expected]
    later = T0 + timedelta(hours=1)
    change = SubscriptionChange("post", "p1", 3, "g", later, 2, False, True)
    assert notifications.subscription("u1", change) == expected
    changed = replace(
        expected, email_alert_id=2, show_screen_alert=False, show_red_label=True, modified_on=later
    )
    # An audited save (one transaction, no item answered) answers the record as written too.
    entry = audit.entry(
        "notification.update",
        target=("notification", "u1:post:p1:3"),
        group_id="g",
        before={"emailAlertId": 0},
        after={"emailAlertId": 2},
    )
    assert notifications.save_subscription("u1", change, audit=entry) == changed
    assert notifications.get("u1", "post#g#p1#3") == changed
    with pytest.raises(FrozenInstanceError):
        changed.email_alert_id = 0  # type: ignore[misc]


def test_subscriptions_are_listed_by_prefix_and_found_by_target(notifications):
    upsert(notifications, "group", "g", 1)
    upsert(notifications, "post", "p1", 1)
    upsert(notifications, "author", "ann", 2)
    assert [r.kind for r in notifications.of_user("u1", "post#g#")] == ["post"]
    assert [r.target_id for r in notifications.of_user("u1", "author#")] == ["ann"]
    assert [r.user_id for r in notifications.subscribers("author", "ann", 2)] == ["u1"]
    assert notifications.subscribers("author", "ann", 1) == []


def test_stopping_email_changes_only_subscriptions_that_email(notifications):
    upsert(notifications, "group", "g", 1, email_alert_id=2)
    upsert(notifications, "group", "g", 2, email_alert_id=1)
    upsert(notifications, "group", "g", 3)
    assert notifications.stop_digest_emails("u1", T0) is True
    emails = {
        int(r.notification_id): int(r.email_alert_id) for r in notifications.of_user("u1", "group#")
    }
    assert emails == {1: 0, 2: 1, 3: 0}
    assert (
        notifications.stop_email("u1", notifications.of_user("u1", "group#g#3")[0].sort_key, T0)
        is False
    )
    assert notifications.stop_email("u1", "group#nothing#1", T0) is False


def test_the_digest_type_is_unset_until_chosen(notifications):
    assert notifications.digest_type("u1") is None
    notifications.set_digest_type("u1", 3, T0)
    assert notifications.digest_type("u1") == 3
    assert notifications.of_user("u1", "group#") == []
