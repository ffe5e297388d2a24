"""Group feed settings (spec "Feed settings"): group administrator of the group (CONTRACT §5)."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.group_settings import group_settings_routes
from chalicelib.api.routing import Routes
from chalicelib.auth import Need
from chalicelib.schemas.feed import FeedSettingsOut, FeedSettingsUpdate

feed_api = Blueprint(__name__)
PATH = "/api/v1/en_US/feed/settings/{groupId}"

group_settings_routes(
    Routes(feed_api, Need.GROUP_ADMIN, "groupId"),
    PATH,
    deps.feed_service,
    (FeedSettingsOut, FeedSettingsUpdate),
    get=(
        "get_feed_settings",
        "A group's feed settings, with every day and hour and whether it is skipped.",
    ),
    put=("update_feed_settings", "Replace a group's feed settings."),
)
