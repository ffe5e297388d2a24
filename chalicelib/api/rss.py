"""The group feeds: RSS 2.0 of the latest posts, iCalendar of the events (CONTRACT §10).

Public groups' feeds need nothing. Other groups' feeds need a caller who may enter the group:
a token (X-Auth or Authorization: Bearer) or, since feed readers and calendar apps send no headers,
the user's feed key as `?key=` (a wrong or revoked key is a 401, even on a public group's feed).
"""

from __future__ import annotations

from chalice import Blueprint, Response

from chalicelib import deps
from chalicelib.api.routing import Call, authenticate, route
from chalicelib.auth import Need
from chalicelib.domain.groups import Group
from chalicelib.envelope import Headers
from chalicelib.schemas.feed_keys import FeedQuery
from chalicelib.schemas.paths import GroupPath
from chalicelib.services.ical import CONTENT_TYPE as ICAL_CONTENT_TYPE
from chalicelib.services.ical import etag_of, matches
from chalicelib.services.rss import CONTENT_TYPE

rss_api = Blueprint(__name__)
PATH = "/api/v1/en_US/feed/{groupId}"
ICAL_PATH = f"{PATH}/events.ics"


def require_feed_reader(call: Call[GroupPath, FeedQuery, None], path: str) -> None:
    """Check the caller of a feed: `?key=` or a token, when there is a key or the group is closed."""
    key = call.query.key
    if key is not None:
        caller = deps.feed_key_service().caller_for(key)
    elif call.group.access == "public":
        return
    else:
        caller = authenticate(call.request, path)
    caller.require(Need.ENTER, call.group)


def cache_control(group: Group) -> str:
    # A members-only feed is stored by no cache, shared or the reader's own (CONTRACT §8: an
    # answer for a signed-in caller); readers come back after `ttl` for a public one.
    return "public, max-age=300" if group.access == "public" else "private, no-store"


@route(rss_api, "GET", PATH, need=None, group="groupId", content_type=CONTENT_TYPE)
def group_feed(call: Call[GroupPath, FeedQuery, None]) -> Response:
    """RSS 2.0 of the group's latest posts; closed groups need a member's token or feed key."""
    require_feed_reader(call, PATH)
    group = call.group
    return Response(
        body=deps.rss_service().feed(group),
        status_code=200,
        headers={
            "Content-Type": f"{CONTENT_TYPE}; charset=utf-8",
            "Cache-Control": cache_control(group),
        },
    )


@route(rss_api, "GET", ICAL_PATH, need=None, group="groupId", content_type=ICAL_CONTENT_TYPE)
def group_calendar(call: Call[GroupPath, FeedQuery, None]) -> Response:
    """iCalendar (RFC 5545) of the group's events from 90 days back on; 304 on a matching ETag."""

    require_feed_reader(call, ICAL_PATH)
    body = deps.ical_service().calendar(call.group)
    etag = etag_of(body)
    headers: Headers = {"ETag": etag, "Cache-Control": cache_control(call.group)}
    if matches(call.request.headers.get("if-none-match"), etag):
        return Response(body="", status_code=304, headers=headers)
    return Response(
        body=body,
        status_code=200,
        headers={
            **headers,
            "Content-Type": f"{ICAL_CONTENT_TYPE}; charset=utf-8",
            "Content-Disposition": f'inline; filename="{call.group.slug}.ics"',
        },
    )
