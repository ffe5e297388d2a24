"""User notifications (spec "User notifications"): the list, four upserts and the digest type."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.schemas.notifications import (
    AuthorNotificationOut,
    AuthorNotificationUpsert,
    DigestOut,
    DigestUpdate,
    GroupNotificationUpsert,
    NotificationListQuery,
    NotificationOut,
    PersonalNotificationUpsert,
    PostNotificationOut,
    PostNotificationUpsert,
    UserNotificationsOut,
)
from chalicelib.schemas.paths import UserNotificationPath, UserPath

notifications_api = Blueprint(__name__)
PREFIX = "/api/v1/en_US/user/{userId}/notifications"


@route(
    notifications_api,
    "GET",
    PREFIX,
    response=UserNotificationsOut,
)
def list_notifications(call: Call[UserPath, NotificationListQuery, None]) -> UserNotificationsOut:
    """A user's notifications as seen from one group (`groupId`)."""
    service = deps.notification_service()
    user = service.user(call.path.userId)
    group = service.group(call.query.group_id)
    service.require_list_privilege(call.signed_in, user, group)
    return service.list(user, group)


@route(
    notifications_api,
    "POST",
    f"{PREFIX}/group/{{notificationId}}",
    need=Need.ROOT_ADMIN,
    response=NotificationOut,
)
def upsert_group_notification(
    call: Call[UserNotificationPath, None, GroupNotificationUpsert],
) -> NotificationOut:
    """Subscribe the user to a group notification (1 to 5), or update that subscription."""
    service = deps.notification_service()
    user = service.user(call.path.userId)
    return service.upsert_group(user, call.path.notificationId, call.body, call.body.group_id)


@route(
    notifications_api,
    "POST",
    f"{PREFIX}/post/{{notificationId}}",
    need=Need.ROOT_ADMIN,
    response=PostNotificationOut,
)
def upsert_post_notification(
    call: Call[UserNotificationPath, None, PostNotificationUpsert],
) -> PostNotificationOut:
    """Subscribe the user to new comments on a post (3), or update that subscription."""
    service = deps.notification_service()
    user = service.user(call.path.userId)
    return service.upsert_post(user, call.path.notificationId, call.body, call.body.post_id)


@route(
    notifications_api,
    "POST",
    f"{PREFIX}/author/{{notificationId}}",
    need=Need.ROOT_ADMIN,
    response=AuthorNotificationOut,
)
def upsert_author_notification(
    call: Call[UserNotificationPath, None, AuthorNotificationUpsert],
) -> AuthorNotificationOut:
    """Subscribe the user to new posts by an author (8), or update that subscription."""
    service = deps.notification_service()
    user = service.user(call.path.userId)
    return service.upsert_author(user, call.path.notificationId, call.body, call.body.author_id)


@route(
    notifications_api,
    "POST",
    f"{PREFIX}/personal/{{notificationId}}",
    need=Need.ROOT_ADMIN,
    response=NotificationOut,
)
def upsert_personal_notification(
    call: Call[UserNotificationPath, None, PersonalNotificationUpsert],
) -> NotificationOut:
    """Subscribe the user to new private messages (4), or update that subscription."""
    service = deps.notification_service()
    user = service.user(call.path.userId)
    return service.upsert_personal(user, call.path.notificationId, call.body)


@route(
    notifications_api,
    "POST",
    f"{PREFIX}/type-digest",
    response=DigestOut,
)
def update_digest_type(call: Call[UserPath, None, DigestUpdate]) -> DigestOut:
    """Choose how the user's daily digest is sent: 1 summary, 2 full."""
    service = deps.notification_service()
    user = service.user(call.path.userId)
    service.require_digest_privilege(call.signed_in, user)
    return service.update_digest(user, call.body.type_id)
