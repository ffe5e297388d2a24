"""Agora's own message ids, which tie every mail about one post into one thread.

SES replaces the `Message-ID` (and `Date`) of what it sends, so no id of a sent mail is ours to
choose. Each notification instead names, in `References`, ids of the site's own, which never
belong to a real message:

    <post.{postId}@{host}>                        the post
    <comment.{commentId}.post.{postId}@{host}>    a comment on it

`{host}` is AGORA_BASE_URL's host. A post's mail references the post; a comment's mail the post,
then the comment (its `In-Reply-To` is the post). Mail clients thread on `References`, so every
mail about one post lands in one thread, and a reply carries them back: a mail to the
email-to-comment mailbox whose `In-Reply-To` or `References` names one of them is a comment on
that post, or a reply to that comment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_PART = r"[A-Za-z0-9_-]+"
_POST = re.compile(rf"^post\.({_PART})@(.+)$")
_COMMENT = re.compile(rf"^comment\.(\d+)\.post\.({_PART})@(.+)$")


def post_id_of(post_id: str, host: str) -> str:
    return f"post.{post_id}@{host}"


def comment_id_of(comment_id: int, post_id: str, host: str) -> str:
    return f"comment.{int(comment_id)}.post.{post_id}@{host}"


@dataclass(frozen=True)
class ThreadTarget:
    """What one of our ids names: a post, or a comment on it."""

    post_id: str
    comment_id: int | None = None


def read_id(message_id: str, host: str) -> ThreadTarget | None:
    """The post (or comment) an id of ours names; None for anyone else's id (another host
    included: the host compares without case, as domains do)."""
    value = message_id.strip().strip("<>").strip()
    if match := _COMMENT.match(value):
        comment, post, at = match.groups()
        return ThreadTarget(post, int(comment)) if at.lower() == host.lower() else None
    if match := _POST.match(value):
        post, at = match.groups()
        return ThreadTarget(post) if at.lower() == host.lower() else None
    return None


def reply_targets(
    in_reply_to: str | None, references: Iterable[str], host: str
) -> list[ThreadTarget]:
    """What a reply's headers name, the likeliest first: `In-Reply-To`, then `References` from the
    last (the nearest ancestor) to the first. Each named only once."""
    candidates = [in_reply_to] if in_reply_to else []
    candidates += reversed(list(references))
    found: list[ThreadTarget] = []
    for candidate in candidates:
        target = read_id(candidate, host)
        if target is not None and target not in found:
            found.append(target)
    return found


def site_host() -> str:
    """AGORA_BASE_URL's host: the right-hand side of our ids."""
    from urllib.parse import urlsplit

    from chalicelib.settings import get_settings

    return urlsplit(get_settings().public_base_url).hostname or "localhost"
