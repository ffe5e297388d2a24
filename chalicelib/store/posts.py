"""Posts: by id, by group newest first, and by (group, slug) for permalinks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import TransactWriteError
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.aws import cancellation_codes
from chalicelib.clock import utc_now
from chalicelib.domain.posts import NewPost, Post
from chalicelib.sanitize import html_to_text
from chalicelib.store import outbox
from chalicelib.store.base import (
    UtcAttribute,
    conditionally,
    frozen,
    global_index,
    query_page,
    read_through,
    register,
    remember_last,
    search_text,
    table_meta,
    transact,
)


@register
class PostRecord(Model):
    Meta = table_meta("posts")

    id = UnicodeAttribute(hash_key=True)
    group_id = UnicodeAttribute()
    author_id = UnicodeAttribute()
    title = UnicodeAttribute()
    slug = UnicodeAttribute()
    content = UnicodeAttribute(default="")
    created_on = UtcAttribute()
    source = UnicodeAttribute(default="fixture")  # fixture | email
    # Lower-cased title and text, for the case-insensitive `filter` (DynamoDB `contains` is not).
    search_text = UnicodeAttribute(default="")
    # Approved, not deleted comments (the `commentsCount` of CONTRACT §10): moved by every comment
    # write in the same transaction (store/comments.py), so reading a post reads no comment.
    comments_count = NumberAttribute(default=0)

    by_group = global_index("group-created", "group_id", "created_on")
    by_group_slug = global_index(
        "group-slug", "group_id", "slug", range_type=UnicodeAttribute, keys_only=True
    )

    def refresh_index_keys(self) -> None:
        """What the `filter` searches, derived from the title and content: every writer of a new
        post calls this, so the rule lives here only."""

        self.search_text = search_text(self.title, html_to_text(self.content or ""))

    def as_post(self) -> Post:
        """The record as the rules hold it (domain/posts.py)."""
        return frozen(self, Post, comments_count=int(self.comments_count or 0))


# Where a page ended: the `offset` of the next page names it (chalicelib.store.base).
POSITION = "post-position"


class PostRepository:
    def position(self, post_id: str) -> Post | None:
        """The post an `offset` names, for its place in the group's list: from the warm
        container's memory when a page ended there lately (its place never changes)."""
        found: Post | None = read_through(POSITION, post_id, lambda: self.get(post_id))
        return found

    def get(self, post_id: str) -> Post | None:
        try:
            return PostRecord.get(post_id).as_post()
        except PostRecord.DoesNotExist:
            return None

    def get_many(self, post_ids: set[str]) -> dict[str, Post]:
        if not post_ids:
            return {}
        return {p.id: p.as_post() for p in PostRecord.batch_get(list(post_ids))}

    def by_slug(self, group_id: str, slug: str) -> Post | None:
        for key in PostRecord.by_group_slug.query(group_id, PostRecord.slug == slug, limit=1):
            return self.get(key.id)
        return None

    def slugs(self, group_id: str) -> list[str]:
        """Every post slug of a group (keys-only index: thousands a request)."""
        return [key.slug for key in PostRecord.by_group_slug.query(group_id)]

    def page_newest_first(
        self, group_id: str, *, limit: int, after: Post | None, text: str | None
    ) -> list[Post]:
        place = None
        if after is not None:
            place = PostRecord(id=after.id, group_id=after.group_id, created_on=after.created_on)
        records = query_page(
            PostRecord.by_group,
            group_id,
            limit=limit,
            forward=False,
            after=place,
            filter_condition=PostRecord.search_text.contains(text) if text else None,
        )
        return remember_last(POSITION, records.mapped(PostRecord.as_post))

    def insert(self, *, announcements: Sequence[object] = (), **values: Unpack[NewPost]) -> bool:
        """Store a new post, with the outbox items of `announcements` in the same transaction;
        False when one with this id exists already (then nothing is written), as a comment's."""
        record = PostRecord(**values)
        record.refresh_index_keys()
        condition = PostRecord.id.does_not_exist()
        if not announcements:
            return conditionally(lambda: record.save(condition=condition))
        items = outbox.records(announcements, utc_now())

        def fill(write: TransactWrite) -> None:
            write.save(record, condition=condition)
            outbox.add_to(write, items)

        try:
            transact(PostRecord._get_connection().connection, fill)
        except TransactWriteError as error:
            if (cancellation_codes(error) or [""])[0] == "ConditionalCheckFailed":
                return False
            raise
        return True

    def put(self, **values: Unpack[NewPost]) -> Post:
        record = PostRecord(**values)
        record.refresh_index_keys()
        record.save()
        return record.as_post()
