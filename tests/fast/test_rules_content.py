"""Posts, notification settings, groups and the first administrator, without AWS: the lists and
their offsets, slugs and paging, who may follow what, the subscription defaults, the group tree
and what a second `create-admin` changes (nothing)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from chalicelib.auth import Caller, Need
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.sanitize import slugify
from chalicelib.schemas.common import GuidPageQuery, IntPageQuery
from chalicelib.schemas.notifications import NotificationSettings
from chalicelib.services.administrators import AdministratorService
from chalicelib.services.comments import CommentPresenter
from chalicelib.services.groups import GroupService
from chalicelib.services.links import user_ref
from chalicelib.services.notifications import NotificationService
from chalicelib.services.paging import next_offset
from chalicelib.services.posts import PostService
from chalicelib.store.base import Page
from tests.support import NOW, fakes


def guid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


ROOT, GARDEN, CLUB, LAWN = guid("root"), guid("garden"), guid("club"), guid("lawn")


class World:
    def __init__(self) -> None:
        self.groups = fakes.FakeGroupRepository(
            fakes.group(ROOT, name="Root", slug="root"),
            fakes.group(GARDEN, parent_id=ROOT, name="Garden", slug="garden"),
            fakes.group(CLUB, parent_id=GARDEN, name="Club", slug="club", access="private"),
            fakes.group(LAWN, parent_id=ROOT, name="Lawn", slug="lawn", access="premium"),
        )
        self.users = fakes.FakeUserRepository()
        for user_id, memberships in (
            ("ann", {GARDEN: "member"}),
            ("bob", {}),
            ("cy", {CLUB: "member"}),
        ):
            self.users.save(
                fakes.user(
                    id=user_id,
                    alias=user_id.title(),
                    slug=user_id,
                    email=f"{user_id}@example.org",
                    email_lower=f"{user_id}@example.org",
                    memberships=memberships,
                )
            )
        self.posts = fakes.FakePostRepository()
        self.comments = fakes.FakeCommentRepository(self.posts)
        refs = fakes.FakeReferenceReader(self.posts, self.groups, self.users)
        self.post_service = PostService(
            self.posts, self.comments, self.users, CommentPresenter(refs)
        )
        self.notifications = fakes.FakeNotificationRepository()
        self.notification_service = NotificationService(
            self.notifications, self.users, self.groups, self.posts, lambda: NOW
        )

    def post(self, post_id: str, minutes: int, group_id: str = GARDEN, **values: Any) -> str:
        self.posts.put(
            id=post_id,
            group_id=group_id,
            author_id=values.pop("author_id", "ann"),
            title=values.pop("title", f"Post {post_id}"),
            slug=f"post-{post_id}",
            created_on=NOW + timedelta(minutes=minutes),
            **values,
        )
        return post_id

    def comment(self, comment_id: int, post_id: str, minutes: int, approved: bool = True) -> int:
        self.comments.insert(
            id=comment_id,
            post_id=post_id,
            group_id=self.posts.get(post_id).group_id,
            author_id="bob",
            created_on=NOW + timedelta(minutes=minutes),
            is_approved=approved,
        )
        return comment_id

    def group(self, group_id: str) -> Any:
        return self.groups.get(group_id)


@pytest.fixture
def w() -> World:
    return World()


# --- posts ----------------------------------------------------------------------------------------


def test_posts_are_listed_newest_first_with_their_authors(w):
    ids = [w.post(guid(f"p{n}"), n) for n in range(3)]
    page = w.post_service.page(w.group(GARDEN), GuidPageQuery())
    assert [p.id for p in page.posts] == ids[::-1]
    assert page.offset == ids[0]
    assert {p.author.alias for p in page.posts} == {"Ann"}


def test_the_next_page_of_posts_continues_after_its_offset(w):
    ids = [w.post(guid(f"p{n}"), n) for n in range(5)]
    first = w.post_service.page(w.group(GARDEN), GuidPageQuery(pageSize=2))
    second = w.post_service.page(w.group(GARDEN), GuidPageQuery(pageSize=2, offset=first.offset))
    assert [p.id for p in second.posts] == [ids[2], ids[1]]


def test_a_post_offset_of_another_group_or_none_is_refused(w):
    theirs = w.post(guid("elsewhere"), 0, group_id=LAWN)
    for offset in (theirs, guid("nothing")):
        with pytest.raises(ValidationFailed) as raised:
            w.post_service.page(w.group(GARDEN), GuidPageQuery(offset=offset))
        assert raised.value.errors[0].key == "offset"


def test_a_post_filter_finds_title_and_text_whatever_their_case(w):
    w.post(guid("a"), 0, title="Tulip care", content="<p>water</p>")
    w.post(guid("b"), 1, title="Roses", content="<p>Plant TULIPS near</p>")
    w.post(guid("c"), 2, title="Lawns")
    page = w.post_service.page(w.group(GARDEN), GuidPageQuery(filter="tulip"))
    assert [p.title for p in page.posts] == ["Roses", "Tulip care"]


def test_a_post_answers_its_url_source_and_visible_comment_count(w):
    post_id = w.post(guid("a"), 0, source="email")
    w.comment(1, post_id, 1)
    w.comment(2, post_id, 2, approved=False)
    out = w.post_service.get(w.post_service.find(post_id), w.group(GARDEN))
    assert (out.url, out.source, out.comments_count) == (
        "https://community.example/garden/post-" + post_id,
        "email",
        1,
    )


def test_an_unknown_post_is_a_404_naming_the_post_id(w):
    with pytest.raises(NotFound) as raised:
        w.post_service.find(guid("none"))
    assert raised.value.errors[0].key == "postId"


def test_a_posts_comments_are_its_visible_ones_oldest_first_after_the_offset(w):
    post_id = w.post(guid("a"), 0)
    w.comment(1, post_id, 1)
    w.comment(2, post_id, 2, approved=False)
    w.comment(3, post_id, 3)
    w.comment(4, post_id, 4)
    post = w.post_service.find(post_id)
    first = w.post_service.comments_page(post, IntPageQuery(pageSize=2))
    assert ([c.id for c in first.comments], first.offset) == ([1, 3], 3)
    rest = w.post_service.comments_page(post, IntPageQuery(pageSize=2, offset=3))
    assert [c.id for c in rest.comments] == [4]
    empty = w.post_service.comments_page(post, IntPageQuery(offset=4))
    assert (empty.comments, empty.offset) == ([], 4)


def test_a_comment_offset_of_another_post_is_refused(w):
    mine, theirs = w.post(guid("a"), 0), w.post(guid("b"), 1)
    w.comment(1, theirs, 1)
    with pytest.raises(ValidationFailed):
        w.post_service.comments_page(w.post_service.find(mine), IntPageQuery(offset=1))


# --- paging and names -----------------------------------------------------------------------------


def test_the_offset_is_the_last_id_returned_or_the_one_asked_for():
    assert next_offset(["a", "b"], None, str.upper) == "B"
    assert next_offset([], "x", str.upper) == "x"
    assert next_offset([], None, str.upper) is None


def test_a_filtered_page_that_stopped_early_answers_the_last_item_it_read():
    page = Page(["a"])
    page.last_read_id = "z"
    assert next_offset(page, None, str.upper) == "z"
    assert next_offset(Page([]), "q", str.upper) == "q"


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Hello, World!", "hello-world"),
        ("Crème brûlée à la carte", "creme-brulee-a-la-carte"),
        ("  --  ", "item"),
        ("日本語", "item"),
        ("a" * 100, "a" * 80),
        ("x" * 79 + " y", "x" * 79),
    ],
)
def test_a_slug_is_lower_ascii_words_joined_by_dashes_at_most_80_long(text, slug):
    assert slugify(text) == slug


def test_a_slug_falls_back_to_the_given_word():
    assert slugify("!!!", "administrator") == "administrator"


def test_a_user_gone_is_shown_with_the_default_avatar():
    shown = user_ref(None)
    assert (shown.id, shown.url) == ("", "")
    assert shown.avatar_url.endswith("/images/avatar-default.png")


# --- notification settings ------------------------------------------------------------------------


def settings(**values: Any) -> NotificationSettings:
    return NotificationSettings.model_validate(values)


def test_a_new_group_subscription_takes_the_defaults_for_what_was_not_sent(w):
    ann = w.notification_service.user("ann")
    out = w.notification_service.upsert_group(ann, 1, settings(showRedLabel=True), GARDEN)
    assert (out.email_alert.id, out.show_screen_alert, out.show_red_label) == (0, False, True)
    again = w.notification_service.upsert_group(ann, 1, settings(emailAlertId=2), GARDEN)
    assert (again.email_alert.name, again.show_red_label) == ("Daily digest", True)


@pytest.mark.parametrize(
    ("kind", "notification_id"), [("group", 6), ("group", 0), ("post", 1), ("author", 3)]
)
def test_a_notification_id_of_another_kind_is_refused_naming_the_valid_ones(
    w, kind, notification_id
):
    ann = w.notification_service.user("ann")
    post_id = w.post(guid("a"), 0)
    upsert = {
        "group": lambda: w.notification_service.upsert_group(
            ann, notification_id, settings(), GARDEN
        ),
        "post": lambda: w.notification_service.upsert_post(
            ann, notification_id, settings(), post_id
        ),
        "author": lambda: w.notification_service.upsert_author(
            ann, notification_id, settings(), "bob"
        ),
    }[kind]
    with pytest.raises(ValidationFailed) as raised:
        upsert()
    (error,) = raised.value.errors
    assert error.key == "notificationId" and "valid:" in error.message


@pytest.mark.parametrize(
    ("user_id", "group_id", "allowed"),
    [("bob", CLUB, False), ("cy", CLUB, True), ("bob", LAWN, False), ("bob", GARDEN, True)],
)
def test_only_who_may_enter_a_group_may_follow_it(w, user_id, group_id, allowed):
    user = w.notification_service.user(user_id)
    if allowed:
        assert w.notification_service.upsert_group(user, 2, settings(), group_id).id == 2
        return
    with pytest.raises(ValidationFailed) as raised:
        w.notification_service.upsert_group(user, 2, settings(), group_id)
    assert raised.value.errors[0].key == "userRoleId"


def test_a_post_subscription_names_the_post_and_its_group(w):
    post_id = w.post(guid("a"), 0)
    out = w.notification_service.upsert_post(
        w.notification_service.user("ann"), 3, settings(), post_id
    )
    assert (out.post.id, out.group.slug) == (post_id, "garden")


def test_a_subscription_to_what_does_not_exist_is_a_404(w):
    ann = w.notification_service.user("ann")
    with pytest.raises(NotFound):
        w.notification_service.upsert_post(ann, 3, settings(), guid("none"))
    with pytest.raises(NotFound):
        w.notification_service.upsert_author(ann, 8, settings(), "nobody")
    with pytest.raises(NotFound):
        w.notification_service.upsert_group(ann, 1, settings(), guid("none"))
    with pytest.raises(NotFound):
        w.notification_service.user("nobody")


def test_the_list_shows_every_group_notification_and_only_existing_targets(w):
    ann = w.notification_service.user("ann")
    kept, gone = w.post(guid("kept"), 0), guid("gone")
    w.notification_service.upsert_group(ann, 2, settings(emailAlertId=1), GARDEN)
    w.notification_service.upsert_post(ann, 3, settings(), kept)
    w.notifications.upsert(
        "ann",
        kind="post",
        target_id=gone,
        notification_id=3,
        group_id=GARDEN,
        settings={},
        modified_on=NOW,
    )
    w.notification_service.upsert_author(ann, 8, settings(), "bob")
    listed = w.notification_service.list(ann, w.group(GARDEN))
    group_alerts = {n.id: n.email_alert.id for n in listed.type_groups[0].notifications}
    assert group_alerts == {1: 0, 2: 1, 3: 0, 4: 0, 5: 0}
    assert [p.post.id for p in listed.type_posts] == [kept]
    assert [a.author.id for a in listed.type_authors] == ["bob"]
    assert [(p.id, p.email_alert.id) for p in listed.type_personal] == [(4, 0)]
    assert listed.digest.type_id == 1 and listed.user_email == "ann@example.org"


def test_the_digest_type_is_the_default_until_chosen(w):
    ann = w.notification_service.user("ann")
    assert (
        w.notification_service.list(ann, w.group(GARDEN)).digest.type_name == "Summary Daily digest"
    )
    assert w.notification_service.update_digest(ann, 2).type_id == 2
    assert w.notification_service.list(ann, w.group(GARDEN)).digest.type_id == 2


@pytest.mark.parametrize(
    ("caller_memberships", "allowed"),
    [
        ({ROOT: "administrator"}, True),
        ({GARDEN: "administrator"}, True),
        ({GARDEN: "moderator"}, False),
        ({LAWN: "administrator"}, False),
    ],
)
def test_a_users_list_is_for_root_or_an_administrator_of_a_group_they_share(
    w, caller_memberships, allowed
):
    caller = Caller.of(fakes.FakeRecord(id="admin", memberships=caller_memberships), ROOT)
    ann = w.notification_service.user("ann")
    if allowed:
        w.notification_service.require_list_privilege(caller, ann, w.group(GARDEN))
        w.notification_service.require_digest_privilege(caller, ann)
        return
    from chalicelib.errors import Forbidden

    with pytest.raises(Forbidden):
        w.notification_service.require_list_privilege(caller, ann, w.group(GARDEN))


# --- groups and privileges ------------------------------------------------------------------------


def test_a_groups_ancestors_are_its_parents_nearest_first(w):
    service = GroupService(w.groups)
    assert [g.id for g in service.ancestors(w.group(CLUB))] == [GARDEN, ROOT]
    assert service.ancestors(w.group(ROOT)) == []
    assert service.root_id() == ROOT


def test_a_parent_cycle_or_a_missing_parent_ends_the_chain(w):
    a = fakes.group("a", parent_id="b")
    b = fakes.group("b", parent_id="a")
    orphan = fakes.group("o", parent_id="gone")
    service = GroupService(fakes.FakeGroupRepository(a, b, orphan))
    assert [g.id for g in service.ancestors(a)] == ["b"]
    assert service.ancestors(orphan) == []


def test_an_unknown_group_is_a_404_naming_the_key_asked_for(w):
    with pytest.raises(NotFound) as raised:
        GroupService(w.groups).get("nope", key="eventId")
    assert raised.value.errors[0].key == "eventId"


@pytest.mark.parametrize(
    ("role", "access", "need", "allowed"),
    [
        (None, "public", Need.ENTER, True),
        (None, "private", Need.ENTER, False),
        (None, "premium", Need.ENTER, False),
        ("member", "private", Need.ENTER, True),
        ("member", "public", Need.MODERATOR, False),
        ("moderator", "public", Need.MODERATOR, True),
        ("moderator", "public", Need.GROUP_ADMIN, False),
        ("administrator", "private", Need.GROUP_ADMIN, True),
        ("administrator", "private", Need.ROOT_ADMIN, False),
    ],
)
def test_what_a_role_in_a_group_allows(role, access, need, allowed):
    group = fakes.group(GARDEN, parent_id=ROOT, access=access)
    caller = Caller.of(fakes.FakeRecord(id="u", memberships={GARDEN: role} if role else {}), ROOT)
    assert caller.has(need, group) is allowed


def test_a_root_administrator_may_do_everything_everywhere():
    caller = Caller.of(fakes.FakeRecord(id="u", memberships={ROOT: "administrator"}), ROOT)
    assert all(caller.has(need, fakes.group(LAWN, access="premium")) for need in Need)


# --- the first administrator ----------------------------------------------------------------------


def test_create_admin_creates_an_account_administering_the_root(w):
    result = AdministratorService(w.users, w.groups).create_or_promote(
        " New@Example.org ", "long enough"
    )
    stored = w.users.get(result.user_id)
    assert (result.created, result.group_id, stored.memberships) == (
        True,
        ROOT,
        {ROOT: "administrator"},
    )
    # The address as email_address() normalises it: the domain lower-cased, the local part kept.
    assert (stored.email, stored.email_lower, stored.slug) == (
        "New@example.org",
        "new@example.org",
        "new",
    )
    assert "created" in result.line("New@Example.org")


def test_create_admin_twice_changes_nothing_the_second_time(w):
    service = AdministratorService(w.users, w.groups)
    service.create_or_promote("ann@example.org", "long enough")
    again = service.create_or_promote("ann@example.org", "long enough")
    assert (again.created, again.promoted, again.password_changed) == (False, False, False)
    assert "nothing changed" in again.line("ann@example.org")


def test_create_admin_with_a_new_password_ends_the_old_sessions(w):
    service = AdministratorService(w.users, w.groups)
    service.create_or_promote("ann@example.org", "long enough", GARDEN)
    before = int(w.users.get("ann").token_version or 0)
    result = service.create_or_promote("ann@example.org", "another one", GARDEN)
    assert result.password_changed and not result.promoted
    assert int(w.users.get("ann").token_version) == before + 1


@pytest.mark.parametrize(
    ("email", "password", "group_id", "key"),
    [
        ("not an address", "long enough", None, "email"),
        ("ann@example.org", "short", None, "password"),
    ],
)
def test_create_admin_refuses_a_bad_address_or_a_short_password(w, email, password, group_id, key):
    with pytest.raises(ValidationFailed) as raised:
        AdministratorService(w.users, w.groups).create_or_promote(email, password, group_id)
    assert raised.value.errors[0].key == key


def test_create_admin_in_an_unknown_group_is_a_404_and_before_loading_a_refusal(w):
    with pytest.raises(NotFound):
        AdministratorService(w.users, w.groups).create_or_promote(
            "a@example.org", "long enough", "nope"
        )
    with pytest.raises(ValidationFailed) as raised:
        AdministratorService(w.users, fakes.FakeGroupRepository()).create_or_promote(
            "a@example.org", "long enough"
        )
    assert raised.value.errors[0].key == "groupId"
