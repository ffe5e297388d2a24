"""The group feed: RSS 2.0 of the group's latest posts, honouring the group's feed settings."""

from __future__ import annotations

from chalice import Blueprint, Response

from chalicelib.api.routing import Call, authenticate, route
from chalicelib.auth import Need
from chalicelib.services.rss import CONTENT_TYPE, RssService

rss_api = Blueprint(__name__)
PATH = "/api/v1/en_US/feed/{groupId}"


@route(rss_api, "GET", PATH, need=None, group="groupId", content_type=CONTENT_TYPE)
def group_feed(call: Call) -> Response:
    """RSS 2.0 of the group's latest posts; private and premium groups need a member's token."""
    group = call.group
    public = group.access == "public"
    if not public:
        # Feed readers send the token like any client (X-Auth or Authorization: Bearer).
        authenticate(call.request, PATH).require(Need.ENTER, group)
    return Response(
        body=RssService.default().feed(group),
        status_code=200,
        headers={
            "Content-Type": f"{CONTENT_TYPE}; charset=utf-8",
            # Readers come back after `ttl`; a members-only feed must not sit in shared caches.
            "Cache-Control": "public, max-age=300" if public else "private, no-store",
        },
    )
