"""The group feed: RSS 2.0 of a group's latest posts, made with feedgen, with the feed settings.

Feed settings map to RSS as: `ttl` (minutes) → `<ttl>`; `imageUrl`, `imageLinkUrl`, `imageAlt` →
`<image>` url, link (the group page when blank) and title (the alternative text; the group name
when blank); `editorEmail` → `<managingEditor>`; `webmasterEmail` → `<webMaster>`; `skipDays` →
`<skipDays>`; `skipHours` → `<skipHours>` with the spec's `24:00` as RSS hour 0 (RSS counts 0–23).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from chalicelib.domain.groups import Group
from chalicelib.domain.ports.content import PostStore
from chalicelib.domain.ports.people import UserReader
from chalicelib.domain.posts import Post
from chalicelib.domain.users import User
from chalicelib.sanitize import xml_text as x
from chalicelib.schemas.feed import FeedSettingsOut
from chalicelib.services.links import group_url, post_url

if TYPE_CHECKING:
    from feedgen.feed import FeedGenerator

    from chalicelib.services.feed import FeedService

FEED_ITEMS = 20
CONTENT_TYPE = "application/rss+xml"


def rss_hour(name: str) -> int:
    """`H:00` (1:00 … 24:00) as an RSS hour (0 … 23)."""
    return int(name.split(":", 1)[0]) % 24


class RssService:
    def __init__(self, posts: PostStore, users: UserReader, feed_settings: FeedService) -> None:
        self.posts = posts
        self.users = users
        self.feed_settings = feed_settings

    def feed(self, group: Group) -> str:
        posts = self.posts.page_newest_first(group.id, limit=FEED_ITEMS, after=None, text=None)
        authors = self.users.get_many({post.author_id for post in posts})
        return render_feed(group, self.feed_settings.get(group), posts, authors)


def render_feed(
    group: Group, settings: FeedSettingsOut, posts: Sequence[Post], authors: Mapping[str, User]
) -> str:
    from feedgen.feed import FeedGenerator

    # Every text passes through `x`: XML cannot carry control characters at all (lxml refuses
    # them), and stored text may hold some (written before they were removed, or mailed in).

    feed = FeedGenerator()
    feed.load_extension("dc")
    feed.title(x(group.name))
    feed.link(href=x(group_url(group)), rel="alternate")
    feed.description(x(f"The latest posts of {group.name}"))
    feed.language("en-US")
    feed.generator("Agora")
    _apply_settings(feed, group, settings)
    if posts:
        # The newest post's date, so that an unchanged feed is byte-for-byte the same.
        feed.lastBuildDate(posts[0].created_on)
    for post in posts:
        entry = feed.add_entry(order="append")
        url = x(post_url(group, post))
        entry.title(x(post.title))
        entry.link(href=url)
        entry.guid(url, permalink=True)
        entry.pubDate(post.created_on)
        entry.description(x(post.content or ""))
        author = authors.get(post.author_id)
        if author is not None:
            # An alias, never the address: RSS's own <author> wants an email.
            entry.dc.dc_creator(x(author.alias))
    rss: bytes = feed.rss_str(pretty=True)
    return rss.decode("utf-8")


def _apply_settings(feed: FeedGenerator, group: Group, settings: FeedSettingsOut) -> None:
    """The feed settings' channel elements (the module docstring maps each one)."""

    feed.ttl(settings.ttl)
    if settings.image_url:
        feed.image(
            url=x(settings.image_url),
            title=x(settings.image_alt or group.name),
            link=x(settings.image_link_url or group_url(group)),
        )
    if settings.editor_email:
        feed.managingEditor(x(settings.editor_email))
    if settings.webmaster_email:
        feed.webMaster(x(settings.webmaster_email))
    days = [flag.name for flag in settings.skip_days if flag.selected]
    if days:
        feed.skipDays(days)
    hours = [rss_hour(flag.name) for flag in settings.skip_hours if flag.selected]
    if hours:
        feed.skipHours(hours)
