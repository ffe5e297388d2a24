"""Group feed settings (spec "Feed settings"): group administrator of the group (CONTRACT §5)."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.schemas.feed import FeedSettingsOut, FeedSettingsUpdate
from chalicelib.schemas.paths import GroupPath

feed_api = Blueprint(__name__)
PATH = "/api/v1/en_US/feed/settings/{groupId}"


@route(feed_api, "GET", PATH, need=Need.GROUP_ADMIN, group="groupId", response=FeedSettingsOut)
def get_feed_settings(call: Call[GroupPath, None, None]) -> FeedSettingsOut:
    """A group's feed settings, with every day and hour and whether it is skipped."""
    return deps.feed_service().get(call.group)


@route(
    feed_api,
    "PUT",
    PATH,
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=FeedSettingsOut,
)
def update_feed_settings(call: Call[GroupPath, None, FeedSettingsUpdate]) -> FeedSettingsOut:
    """Replace a group's feed settings."""
    return deps.feed_service().update(call.group, call.body, call.signed_in.user_id)
