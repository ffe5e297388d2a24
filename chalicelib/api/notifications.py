"""User notifications (spec "User notifications"): the list, four upserts and the digest type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from chalice import Blueprint
from pydantic import BaseModel

from chalicelib import deps
from chalicelib.api.routing import Call, Routes, call_type, made_view, route
from chalicelib.auth import Caller, Need
from chalicelib.domain.users import User
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
from chalicelib.services.notifications import NotificationService

notifications_api = Blueprint(__name__)
PREFIX = "/api/v1/en_US/user/{userId}/notifications"
root_admin = Routes(notifications_api, Need.ROOT_ADMIN)

SubscriptionT = TypeVar("SubscriptionT")
# An upsert of one subscription: the user and the notification's number are in the path.
Upsert = Call[UserNotificationPath, None, SubscriptionT]


def _user(user_id: str) -> tuple[NotificationService, User]:
    service = deps.notification_service()
    return service, service.user(user_id)


def digest_managed_user(user_id: str, caller: Caller) -> tuple[NotificationService, User]:
    """The user, once the caller is known to may change their digest and mail (CONTRACT §8): the
    root group administrator, or an administrator of a group the user is a member of."""
    service, user = _user(user_id)
    service.require_digest_privilege(caller, user)
    return service, user


@route(notifications_api, "GET", PREFIX, response=UserNotificationsOut)
def list_notifications(call: Call[UserPath, NotificationListQuery, None]) -> UserNotificationsOut:
    """A user's notifications as seen from one group (`groupId`)."""
    service, user = _user(call.path.userId)
    group = service.group(call.query.group_id)
    service.require_list_privilege(call.signed_in, user, group)
    return service.list(user, group)


def _subscription_route(
    kind: str,
    body: type[BaseModel],
    response: type[BaseModel],
    summary: str,
    upsert: Callable[[NotificationService, User, int, Any], BaseModel],
) -> None:
    """`POST …/notifications/<kind>/{notificationId}`: one view body for the four kinds, which
    differ only in their body, answer and the service's upsert (its target read from the body)."""

    def view(call: Upsert[Any]) -> BaseModel:
        service, user = _user(call.path.userId)
        return upsert(service, user, call.path.notificationId, call.body)

    name = f"upsert_{kind}_notification"
    inputs = call_type(UserNotificationPath, None, body)
    root_admin("POST", f"{PREFIX}/{kind}/{{notificationId}}", response)(
        made_view(name, summary, inputs, response, view)
    )


_subscription_route(
    "group",
    GroupNotificationUpsert,
    NotificationOut,
    "Subscribe the user to a group notification (1 to 5), or update that subscription.",
    lambda service, user, number, body: service.upsert_group(user, number, body, body.group_id),
)
_subscription_route(
    "post",
    PostNotificationUpsert,
    PostNotificationOut,
    "Subscribe the user to new comments on a post (3), or update that subscription.",
    lambda service, user, number, body: service.upsert_post(user, number, body, body.post_id),
)
_subscription_route(
    "author",
    AuthorNotificationUpsert,
    AuthorNotificationOut,
    "Subscribe the user to new posts by an author (8), or update that subscription.",
    lambda service, user, number, body: service.upsert_author(user, number, body, body.author_id),
)
_subscription_route(
    "personal",
    PersonalNotificationUpsert,
    NotificationOut,
    "Subscribe the user to new private messages (4), or update that subscription.",
    lambda service, user, number, body: service.upsert_personal(user, number, body),
)


@route(notifications_api, "POST", f"{PREFIX}/type-digest", response=DigestOut)
def update_digest_type(call: Call[UserPath, None, DigestUpdate]) -> DigestOut:
    """Choose how the user's daily digest is sent: 1 summary, 2 full."""
    service, user = digest_managed_user(call.path.userId, call.signed_in)
    return service.update_digest(user, call.body.type_id)
