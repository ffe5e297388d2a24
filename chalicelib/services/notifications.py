"""User notification subscriptions: the list of one group's view, the four upserts, the digest.

Notification ids are interpreted per kind (spec table); the list shows the five group notifications
of the group asked for whether subscribed or not, the user's subscriptions to posts of that group,
all author subscriptions and the personal notification (CONTRACT §8).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, TypedDict

from chalicelib.auth import Caller, Need
from chalicelib.domain import audit
from chalicelib.domain.groups import Group
from chalicelib.domain.ports.content import PostStore
from chalicelib.domain.ports.notify import NotificationStore, SubscriptionChange
from chalicelib.domain.ports.people import GroupStore, UserReader
from chalicelib.domain.subscriptions import Subscription
from chalicelib.domain.users import User
from chalicelib.errors import Forbidden, NotFound, ValidationFailed
from chalicelib.schemas.common import EmailAlert
from chalicelib.schemas.notifications import (
    AuthorNotificationOut,
    DigestOut,
    GroupNotifications,
    NotificationOut,
    NotificationSettings,
    PostNotificationOut,
    UserNotificationsOut,
)
from chalicelib.services.links import group_ref, post_ref, user_ref

if TYPE_CHECKING:
    from chalicelib.services.suppressions import SuppressionService


NOTIFICATION_NAMES: dict[str, dict[int, str]] = {
    "group": {
        1: "All new group posts",
        2: "All new group comments",
        3: "All new/updated wiki documents",
        4: "All new file documents",
        5: "New comments to group's wiki document",
    },
    "post": {3: "New comments on post"},
    "author": {8: "New posts by author"},
    "personal": {4: "New private messages"},
}

EMAIL_ALERTS: dict[int, EmailAlert] = {
    0: EmailAlert(id=0, name="None", description="Does not send email notifications"),
    1: EmailAlert(id=1, name="Instant", description="Sends notifications instantly"),
    2: EmailAlert(
        id=2,
        name="Daily digest",
        description="Imports into the daily digest: sends notifications once a day",
    ),
}

DIGEST_NAMES = {1: "Summary Daily digest", 2: "Full Daily digest"}
# A user who never chose gets the summary.
DEFAULT_DIGEST = 1

PERSONAL_NOTIFICATION = 4


def digest_out(type_id: int) -> DigestOut:
    return DigestOut(type_id=type_id, type_name=DIGEST_NAMES[type_id])


class NotificationService:
    def __init__(
        self,
        notifications: NotificationStore,
        users: UserReader,
        groups: GroupStore,
        posts: PostStore,
        clock: Callable[[], datetime],
        suppressions: SuppressionService | None = None,
    ) -> None:
        self.notifications = notifications
        self.users = users
        self.groups = groups
        self.posts = posts
        self.clock = clock
        # services/suppressions.py: a bounced address shows as an access warning on the list.
        self.suppressions = suppressions

    # --- lookups and privileges ------------------------------------------------------------------

    def user(self, user_id: str) -> User:
        user = self.users.get(user_id)
        if user is None:
            raise NotFound("userId", user_id, "user")
        return user

    def group(self, group_id: str, key: str = "groupId") -> Group:
        group = self.groups.get(group_id)
        if group is None:
            raise NotFound(key, group_id, "group")
        return group

    def require_list_privilege(self, caller: Caller, user: User, group: Group) -> None:
        """Root, or an administrator of `groupId` that the user is a member of (CONTRACT §8)."""
        if caller.is_root_admin or (
            group.id in (user.memberships or {}) and caller.has(Need.GROUP_ADMIN, group)
        ):
            return
        raise Forbidden(
            "This needs a root group administrator, or an administrator of this group"
            " that the user is a member of."
        )

    def require_digest_privilege(self, caller: Caller, user: User) -> None:
        """Root, or an administrator of some group the user is a member of (CONTRACT §8)."""
        if caller.is_root_admin:
            return
        groups = self.groups.get_many(set(user.memberships or {}))
        if not any(caller.has(Need.GROUP_ADMIN, group) for group in groups.values()):
            raise Forbidden(
                "This needs a root group administrator, or an administrator of a group"
                " the user is a member of."
            )

    # --- the list --------------------------------------------------------------------------------

    def list(self, user: User, group: Group) -> UserNotificationsOut:
        stored_groups = {
            r.notification_id: r for r in self.notifications.of_user(user.id, f"group#{group.id}#")
        }
        group_notifications = [
            NotificationOut(**_shown("group", n, stored_groups.get(n)))
            for n in NOTIFICATION_NAMES["group"]
        ]
        post_records = self.notifications.of_user(user.id, f"post#{group.id}#")
        posts = self.posts.get_many({r.target_id for r in post_records})
        type_posts = [
            PostNotificationOut(
                **_shown("post", r.notification_id, r),
                post=post_ref(posts[r.target_id], group),
                group=group_ref(group),
            )
            for r in post_records
            # A post removed since keeps its subscription item, but there is nothing to show.
            if r.target_id in posts
        ]
        author_records = self.notifications.of_user(user.id, "author#")
        authors = self.users.get_many({r.target_id for r in author_records})
        type_authors = [
            AuthorNotificationOut(
                **_shown("author", r.notification_id, r), author=user_ref(authors[r.target_id])
            )
            for r in author_records
            if r.target_id in authors
        ]
        personal = self.notifications.get(user.id, f"personal#{PERSONAL_NOTIFICATION}")
        suppressed = self.suppressions.warning_for(user.email) if self.suppressions else None
        return UserNotificationsOut(
            access_warnings=[suppressed] if suppressed else [],
            user_id=user.id,
            user_email=user.email,
            type_groups=[
                GroupNotifications(group=group_ref(group), notifications=group_notifications)
            ],
            type_posts=type_posts,
            type_authors=type_authors,
            type_personal=[NotificationOut(**_shown("personal", PERSONAL_NOTIFICATION, personal))],
            digest=digest_out(self.notifications.digest_type(user.id) or DEFAULT_DIGEST),
        )

    # --- the upserts -----------------------------------------------------------------------------

    def upsert_group(
        self, user: User, notification_id: int, body: NotificationSettings, group_id: str
    ) -> NotificationOut:
        self._check_id("group", notification_id, body)
        group = self.group(group_id)
        self._check_may_enter(user, group, body)
        record = self._save(user, "group", group.id, notification_id, body)
        return NotificationOut(**_shown("group", notification_id, record))

    def upsert_post(
        self, user: User, notification_id: int, body: NotificationSettings, post_id: str
    ) -> PostNotificationOut:
        self._check_id("post", notification_id, body)
        post = self.posts.get(post_id)
        if post is None:
            raise NotFound("postId", post_id, "post")
        group = self.group(post.group_id, key="postId")
        self._check_may_enter(user, group, body)
        record = self._save(user, "post", post.id, notification_id, body, group_id=group.id)
        return PostNotificationOut(
            **_shown("post", notification_id, record),
            post=post_ref(post, group),
            group=group_ref(group),
        )

    def upsert_author(
        self, user: User, notification_id: int, body: NotificationSettings, author_id: str
    ) -> AuthorNotificationOut:
        self._check_id("author", notification_id, body)
        author = self.users.get(author_id)
        if author is None:
            raise NotFound("authorId", author_id, "author")
        record = self._save(user, "author", author.id, notification_id, body)
        return AuthorNotificationOut(
            **_shown("author", notification_id, record), author=user_ref(author)
        )

    def upsert_personal(
        self, user: User, notification_id: int, body: NotificationSettings
    ) -> NotificationOut:
        self._check_id("personal", notification_id, body)
        # The personal notification is about the user's own messages: its target is the user.
        record = self._save(user, "personal", user.id, notification_id, body)
        return NotificationOut(**_shown("personal", notification_id, record))

    def update_digest(self, user: User, type_id: int) -> DigestOut:
        before = self.notifications.digest_type(user.id) or DEFAULT_DIGEST
        entry = audit.entry(
            "notification.update",
            target=("user", user.id),
            group_id=None,
            before={"digest": before},
            after={"digest": type_id},
        )
        self.notifications.set_digest_type(user.id, type_id, self.clock(), audit=entry)
        return digest_out(type_id)

    # --- helpers ---------------------------------------------------------------------------------

    @staticmethod
    def _check_id(kind: str, notification_id: int, body: NotificationSettings) -> None:
        valid = NOTIFICATION_NAMES[kind]
        if notification_id not in valid:
            ids = ", ".join(str(n) for n in valid)
            raise ValidationFailed.one(
                "notificationId",
                notification_id,
                f"is not a {kind} notification id (valid: {ids})",
                body.model_dump(mode="json", by_alias=True),
            )

    def _check_may_enter(self, user: User, group: Group, body: NotificationSettings) -> None:
        """Only a user who may enter a private or premium group can follow what happens in it."""
        subscriber = Caller.of(user, self.groups.root_id())
        if not subscriber.has(Need.ENTER, group):
            raise ValidationFailed.one(
                "userRoleId",
                int(subscriber.role_in(group.id)),
                f"the user is not a member of the {group.access} group {group.name!r}",
                body.model_dump(mode="json", by_alias=True),
            )

    def _save(
        self,
        user: User,
        kind: str,
        target_id: str,
        notification_id: int,
        body: NotificationSettings,
        group_id: str | None = None,
    ) -> Subscription:
        sent = {
            "email_alert_id": body.email_alert_id,
            "show_screen_alert": body.show_screen_alert,
            "show_red_label": body.show_red_label,
        }
        change = SubscriptionChange(kind, target_id, notification_id, group_id, self.clock())
        stored = self.notifications.subscription(user.id, change)
        before = {
            name: getattr(stored, name) if stored else default
            for name, default in SubscriptionChange.DEFAULTS.items()
        }
        after = {name: before[name] if value is None else value for name, value in sent.items()}
        entry = audit.entry(
            "notification.update",
            target=("notification", f"{user.id}:{kind}:{target_id}:{notification_id}"),
            group_id=group_id or (target_id if kind == "group" else None),
            before=audit.fields_of(before, _AUDITED),
            after=audit.fields_of(after, _AUDITED),
        )
        change = dataclasses.replace(
            change,
            email_alert_id=int(after["email_alert_id"]),
            show_screen_alert=bool(after["show_screen_alert"]),
            show_red_label=bool(after["show_red_label"]),
        )
        return self.notifications.save_subscription(user.id, change, audit=entry)


# What a subscription's change records (CONTRACT §12): attribute → the API's field name.
_AUDITED = {
    "email_alert_id": "emailAlertId",
    "show_screen_alert": "showScreenAlert",
    "show_red_label": "showRedLabel",
}


class _Shown(TypedDict):
    id: int
    name: str
    email_alert: EmailAlert
    show_screen_alert: bool
    show_red_label: bool


def _shown(kind: str, notification_id: int, record: Subscription | None) -> _Shown:
    """What every notification answer shows of the subscription (its defaults without one)."""
    return _Shown(
        id=notification_id,
        name=NOTIFICATION_NAMES[kind][notification_id],
        email_alert=EMAIL_ALERTS[record.email_alert_id if record else 0],
        show_screen_alert=record.show_screen_alert if record else False,
        show_red_label=record.show_red_label if record else False,
    )
