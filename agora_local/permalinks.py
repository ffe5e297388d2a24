"""No dead ends in make run: a post's or event's permalink opens it in the console.

Agora makes permalinks under AGORA_BASE_URL (`/{group slug}/{post slug}`, `#{comment id}` after
it, `/{group slug}/events/{id}`, `/{group slug}`), for the community's own web site, which make
run does not have. Its API server, which AGORA_BASE_URL names there, answers such a path with a
redirect to the console page that shows it: the post, the event in the calendar, the group's
moderation. Anything else is a 404: the envelope for a program, and for a browser (which asks
for `text/html`) a page in words with the ways on, rather than raw JSON.
"""

from __future__ import annotations

import html
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


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Nothing at this address · Agora</title>
<style>
body {{ font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2330;
  background: #f4f6fa; margin: 0; padding: 2rem 1.25rem; }}
main {{ max-width: 40rem; margin: 0 auto; background: #fff; border: 1px solid #c9d0dc;
  border-radius: 6px; padding: 1rem 1.5rem; overflow-wrap: anywhere; }}
h1 {{ font-size: 1.4rem; }} a {{ color: #1f5bd1; }}
</style></head>
<body><main>
<h1>Nothing at this address</h1>
<p>{said}</p>
<ul>{ways}</ul>
</main></body></html>
"""


def wants_html(accept: str | None) -> bool:
    """A browser's navigation asks for `text/html` first; a program asks for JSON or anything."""
    return "text/html" in (accept or "").lower()


def not_found_page(path: str) -> str | None:
    """The page a browser gets for a permalink path that names nothing stored; None for the API's
    and the console's own paths, whose 404 stays the envelope."""
    from chalicelib import deps

    address = urlsplit(path).path
    parts = [part for part in address.split("/") if part]
    if parts and parts[0].lower() in RESERVED:
        return None
    shown = html.escape(address, quote=True)
    said = f"Agora has no post, event or group at <code>{shown}</code>."
    ways = [
        '<li><a href="/console/">The console</a>: every group\'s posts, comments and events</li>'
    ]
    group = deps.groups().by_slug(parts[0].lower()) if parts and SLUG.fullmatch(parts[0]) else None
    if group is not None and len(parts) > 1:
        name = html.escape(group.name)
        said = (
            f"{name} has nothing at <code>{shown}</code>: the address may be mistyped, or what "
            "it named was removed."
        )
        ways.insert(0, f'<li><a href="/{quote(group.slug)}">{name}</a> in the console</li>')
    ways.append('<li><a href="/api/v1/en_US/">The API</a> and its documentation</li>')
    return _PAGE.format(said=said, ways="".join(ways))
