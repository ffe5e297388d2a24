"""Feed keys (CONTRACT §10): the user's own key for the group feeds; only the user may see it."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.schemas.feed_keys import FeedKeyOut, FeedKeyRevoked
from chalicelib.schemas.paths import UserPath

feed_keys_api = Blueprint(__name__)
PATH = "/api/v1/en_US/user/{userId}/feed-key"


@route(feed_keys_api, "GET", PATH, response=FeedKeyOut)
def get_feed_key(call: Call[UserPath, None, None]) -> FeedKeyOut:
    """The caller's feed key for `?key=` on the group feeds, made on first use."""
    service = deps.feed_key_service()
    service.require_self(call.signed_in, call.path.userId)
    return service.get(call.path.userId)


@route(feed_keys_api, "DELETE", PATH, response=FeedKeyRevoked)
def revoke_feed_key(call: Call[UserPath, None, None]) -> FeedKeyRevoked:
    """Revoke the caller's feed key: feeds with it answer 401; the next GET makes a new one."""
    service = deps.feed_key_service()
    service.require_self(call.signed_in, call.path.userId)
    return FeedKeyRevoked(user_id=call.path.userId, revoked=service.revoke(call.path.userId))
