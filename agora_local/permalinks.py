"""No dead ends in make run: a post's or event's permalink opens it in the console.

Agora makes permalinks under AGORA_BASE_URL (`/{group slug}/{post slug}`, `#{comment id}` after
it, `/{group slug}/events/{id}`, `/{group slug}`), for the community's own web site, which make
run does not have. Its API server, which AGORA_BASE_URL names there, answers such a path with a
redirect to the console page that shows it: the post, the event in the calendar, the group's
moderation. Anything else stays the envelope's 404.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

SLUG = re.compile(r"[a-z0-9][a-z0-9-]*", re.IGNORECASE)
# The API's and the console's own paths are never permalinks.
RESERVED = {"api", "console", "rest", "images"}


def console_address(path: str) -> str | None:
    """The console address a permalink path opens, or None when it names nothing stored."""
    from chalicelib import deps

    parts = [part for part in urlsplit(path).path.split("/") if part]
    if not 1 <= len(parts) <= 3 or parts[0].lower() in RESERVED:
        return None
    if not all(SLUG.fullmatch(part) for part in parts):
        return None
    group = deps.groups().by_slug(parts[0].lower())
    if group is None:
        return None
    if len(parts) == 1:
        return f"/console/#/moderation?group={quote(group.id)}"
    if len(parts) == 2:
        post = deps.posts().by_slug(group.id, parts[1].lower())
        return None if post is None else f"/console/#/post?id={quote(post.id)}"
    return _event_address(group.id, parts[1], parts[2])


def _event_address(group_id: str, section: str, number: str) -> str | None:
    from chalicelib import deps

    if section != "events" or not number.isdigit() or len(number) > 18:
        return None
    event = deps.events().get(int(number))
    if event is None or event.group_id != group_id:
        return None
    return f"/console/#/events?group={quote(group_id)}&event={event.id}"
