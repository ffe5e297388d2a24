"""User notification subscriptions (spec "User notifications", CONTRACT §8)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chalicelib.schemas.common import (
    ApiModel,
    EmailAlert,
    GroupRef,
    Guid,
    PostRef,
    Record,
    UserRef,
)

# Ranges are checked by the model, so a bad value answers 400 under the spec's own key.
EmailAlertId = Field(default=None, ge=0, le=2)


class NotificationListQuery(ApiModel):
    # The group whose notifications and post subscriptions the list shows.
    group_id: Guid


class NotificationSettings(ApiModel):
    """What every upsert body carries; an omitted field keeps its stored value (or its default)."""

    email_alert_id: int | None = EmailAlertId
    show_screen_alert: bool | None = None
    show_red_label: bool | None = None


class GroupNotificationUpsert(NotificationSettings):
    group_id: Guid


class PostNotificationUpsert(NotificationSettings):
    post_id: Guid


class AuthorNotificationUpsert(NotificationSettings):
    author_id: Guid


class PersonalNotificationUpsert(NotificationSettings):
    pass


class DigestUpdate(ApiModel):
    type_id: int = Field(ge=1, le=2)


class NotificationOut(Record):
    id: int
    name: str
    email_alert: EmailAlert
    show_screen_alert: bool = False
    show_red_label: bool = False


class PostNotificationOut(NotificationOut):
    post: PostRef
    group: GroupRef


class AuthorNotificationOut(NotificationOut):
    author: UserRef


class GroupNotifications(ApiModel):
    group: GroupRef
    notifications: list[NotificationOut]


class DigestOut(Record):
    type_id: int
    type_name: str


class UserNotificationsOut(Record):
    user_id: str
    type: Literal["userNotifications"] = "userNotifications"
    user_email: str
    type_groups: list[GroupNotifications]
    type_posts: list[PostNotificationOut]
    type_authors: list[AuthorNotificationOut]
    type_personal: list[NotificationOut]
    digest: DigestOut
