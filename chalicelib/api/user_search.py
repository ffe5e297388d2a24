"""People search (CONTRACT §10): the console's person pickers use it."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.schemas.user_search import UserSearchPage, UserSearchQuery

user_search_api = Blueprint(__name__)


@route(
    user_search_api,
    "GET",
    "/api/v1/en_US/user/search",
    need=Need.GROUP_ADMIN,
    group="query.groupId",
    response=UserSearchPage,
)
def search_users(call: Call[None, UserSearchQuery, None]) -> UserSearchPage:
    """People whose alias, a word of it, or email starts with `q`, in alias order; members of
    `groupId` when given (its administrators may search it; everyone: root administrators)."""
    return deps.user_search_service().page(call.group, call.query)
