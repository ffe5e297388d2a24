"""Post comments, with a sparse index per moderation list.

An index only holds items that carry its key attributes, so each list (visible comments of a post,
deleted, unapproved and spam-reported comments of a group) is a Query over exactly its members.
`refresh_index_keys()` derives those attributes from the comment's state; every write calls it.
Writes are guarded by `version` (optimistic locking), so two moderators cannot overwrite each other.
A write that makes a comment visible or invisible moves its post's `comments_count` in the same
transaction: the count is always the number of members of the post's visible list. A write that
announces domain events (`announcements`) puts their outbox items (store/outbox.py) in the same
transaction too.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import TransactWriteError
from pynamodb.indexes import Index
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.aws import cancellation_codes, is_cancelled_by_race
from chalicelib.domain.ports.content import CommentStore, UnapprovedListing
from chalicelib.store import cache, outbox
from chalicelib.store.base import (
    UtcAttribute,
    conditionally,
    global_index,
    index_start_key,
    nullable,
    query_page,
    register,
    table_meta,
)
from chalicelib.store.posts import PostRecord

# A transaction cancelled only because another one wrote the same post at the same moment is run
# again this many times in all; then the caller answers 409.
RACE_ATTEMPTS = 3

# Every deleted comment of every group sits under this one key of the purge index, ordered by
# deletion time: the monthly purge reads only the comments old enough to go.
PURGE_BUCKET = "deleted"


class SpamReport(MapAttribute):
    author_id = UnicodeAttribute()
    created_on = UtcAttribute()


@register
class CommentRecord(Model):
    Meta = table_meta("comments")

    id = NumberAttribute(hash_key=True)
    post_id = UnicodeAttribute()
    group_id = UnicodeAttribute()
    author_id = UnicodeAttribute()
    content = UnicodeAttribute(default="")
    created_on = UtcAttribute()
    parent_comment_id = NumberAttribute(default=0)
    is_approved = BooleanAttribute(default=True)
    approved_on = nullable(UtcAttribute(null=True))
    rating = NumberAttribute(default=0)
    votes = NumberAttribute(default=0)
    is_anonymous = BooleanAttribute(default=False)
    deleted_on = nullable(UtcAttribute(null=True))
    deleted_by_id = nullable(UnicodeAttribute(null=True))
    # When it was last deleted, kept after an undelete: an `offset` naming a comment that has left
    # the deleted list since still continues from its place there (CONTRACT §7).
    last_deleted_on = nullable(UtcAttribute(null=True))
    spam_reports = ListAttribute(of=SpamReport, default=list)
    # Where the mail that created it came from, when it did (mail-in idempotency).
    source = UnicodeAttribute(default="fixture")
    # Lower-cased content and author alias, for the case-insensitive `filter`.
    search_text = UnicodeAttribute(default="")

    # Sparse index keys, derived from the state by refresh_index_keys().
    visible_post_id = UnicodeAttribute(null=True)
    deleted_group_id = UnicodeAttribute(null=True)
    unapproved_group_id = UnicodeAttribute(null=True)
    reported_group_id = UnicodeAttribute(null=True)
    last_reported_on = nullable(UtcAttribute(null=True))
    purge_bucket = UnicodeAttribute(null=True)

    version = VersionAttribute()

    visible_by_post = global_index("visible-by-post", "visible_post_id", "created_on")
    deleted_by_group = global_index("deleted-by-group", "deleted_group_id", "deleted_on")
    unapproved_by_group = global_index("unapproved-by-group", "unapproved_group_id", "created_on")
    reported_by_group = global_index("reported-by-group", "reported_group_id", "last_reported_on")
    purge_index = global_index("purge", "purge_bucket", "deleted_on", keys_only=True)

    @property
    def is_deleted(self) -> bool:
        return self.deleted_on is not None

    @property
    def deleted_list_position(self) -> datetime | None:
        """Its place in the deleted list, now or when it was last there."""
        return self.deleted_on or self.last_deleted_on

    def refresh_index_keys(self, author_alias: str | None = None) -> None:
        """Derive the index keys from the state; with the author's alias (a new comment: the alias
        is not stored with it), also what the `filter` searches: the text and the alias."""
        if author_alias is not None:
            from chalicelib.sanitize import html_to_text
            from chalicelib.store.search import search_text

            self.search_text = search_text(html_to_text(self.content or ""), author_alias)
        live = self.deleted_on is None
        self.visible_post_id = self.post_id if live and self.is_approved else None
        self.unapproved_group_id = self.group_id if live and not self.is_approved else None
        self.deleted_group_id = None if live else self.group_id
        self.purge_bucket = None if live else PURGE_BUCKET
        if self.deleted_on is not None:
            self.last_deleted_on = self.deleted_on
        reports = list(self.spam_reports or [])
        # A deleted comment needs no more moderation: it leaves the spam-report list (and comes
        # back, reports and all, when undeleted).
        self.reported_group_id = self.group_id if live and reports else None
        # Without reports the last position is kept, for `offset` continuation (CONTRACT §7).
        if reports:
            self.last_reported_on = max(r.created_on for r in reports)


# Where a page ended: the `offset` of the next page names it (chalicelib.store.cache).
POSITION = "comment-position"


class CommentRepository(CommentStore):
    def position(self, comment_id: int) -> CommentRecord | None:
        """The comment an `offset` names, for its place in a list: from the warm container's
        memory when a page ended there lately (this container's own writes forget it)."""
        return cache.read_through(POSITION, int(comment_id), lambda: self.get(comment_id))

    def get(self, comment_id: int) -> CommentRecord | None:
        try:
            return CommentRecord.get(comment_id)
        except CommentRecord.DoesNotExist:
            return None

    def insert(
        self, *, author_alias: str | None = None, announcements: Sequence[Any] = (), **values: Any
    ) -> bool:
        """Store a new comment and the outbox items of `announcements`; False when one with this
        id exists already (conditional put: then neither is written)."""
        condition = CommentRecord.id.does_not_exist()
        return _write_counted(CommentRecord(**values), condition, author_alias, announcements)

    def visible_page(
        self, post_id: str, *, limit: int, after: CommentRecord | None
    ) -> list[CommentRecord]:
        """Approved, not deleted comments of a post, oldest first."""
        return _list_page(
            CommentRecord.visible_by_post,
            "visible_post_id",
            post_id,
            limit=limit,
            after=after,
            forward=True,
        )

    def count_visible(self, post_id: str) -> int:
        """Reads the whole visible list: for the fixture loader's recount, never a request path."""
        return CommentRecord.visible_by_post.count(post_id)

    # --- moderation lists: one Query each, continuing after `after`'s place in the list ---------

    def deleted_page(
        self, group_id: str, *, limit: int, after: CommentRecord | None, text: str | None
    ) -> list[CommentRecord]:
        """Deleted comments of a group, newest deletion first."""
        return _list_page(
            CommentRecord.deleted_by_group,
            "deleted_group_id",
            group_id,
            limit=limit,
            after=after,
            forward=False,
            text=text,
            # An undeleted comment keeps its place in the list it has left.
            position={"deleted_on": after.deleted_list_position} if after is not None else None,
        )

    def unapproved(self, group_id: str, listing: UnapprovedListing) -> list[CommentRecord]:
        return _list_page(
            CommentRecord.unapproved_by_group,
            "unapproved_group_id",
            group_id,
            limit=listing.limit,
            after=listing.after,
            forward=not listing.newest_first,
            text=listing.text,
        )

    def reported_page(
        self, group_id: str, *, limit: int, after: CommentRecord | None, text: str | None
    ) -> list[CommentRecord]:
        """Live comments of a group with spam reports, newest report first."""
        return _list_page(
            CommentRecord.reported_by_group,
            "reported_group_id",
            group_id,
            limit=limit,
            after=after,
            forward=False,
            text=text,
        )

    # --- purge candidates: only comments deleted at or before the cutoff are read ---------------

    def deleted_before_in_group(
        self, group_id: str, cutoff: datetime, *, limit: int, after: CommentRecord | None
    ) -> list[CommentRecord]:
        return _deleted_before(CommentRecord.deleted_by_group, group_id, cutoff, limit, after)

    def deleted_before(
        self, cutoff: datetime, *, limit: int, after: CommentRecord | None
    ) -> list[CommentRecord]:
        """Keys of comments of every group deleted at or before `cutoff`, oldest first."""
        return _deleted_before(CommentRecord.purge_index, PURGE_BUCKET, cutoff, limit, after)

    # --- conditional writes: False when the stored comment is no longer the one that was read ---

    def replace_if_unchanged(
        self, record: CommentRecord, *, was_deleted: bool, announcements: Sequence[Any] = ()
    ) -> bool:
        """Write `record` (and the outbox items of `announcements`) if the stored item is still
        the version read (and as deleted as it was)."""
        state = (
            CommentRecord.deleted_on.exists()
            if was_deleted
            else CommentRecord.deleted_on.does_not_exist()
        )
        # PynamoDB adds `version = <version read>`
        return _write_counted(record, state, announcements=announcements)

    def purge_if_unchanged(self, record: CommentRecord, announcements: Sequence[Any] = ()) -> bool:
        """Remove a deleted comment (and its embedded reports) if nobody changed it since read."""
        cache.forget(POSITION, [int(record.id)])
        if not announcements:
            return conditionally(lambda: record.delete(condition=CommentRecord.deleted_on.exists()))
        return _transact_first_conditional(
            lambda write: write.delete(record, condition=CommentRecord.deleted_on.exists()),
            announcements,
        )

    def purge_if_deleted_before(
        self, comment_id: int, cutoff: datetime, announcements: Sequence[Any] = ()
    ) -> bool:
        """Remove a comment that is (still) deleted at or before `cutoff`: one that was undeleted,
        or deleted again since, in the meantime is left alone."""
        cache.forget(POSITION, [int(comment_id)])
        condition = CommentRecord.deleted_on <= cutoff
        if not announcements:
            return conditionally(
                lambda: CommentRecord(id=comment_id).delete(
                    condition=condition, add_version_condition=False
                )
            )
        return _transact_first_conditional(
            lambda write: write.delete(
                CommentRecord(id=comment_id), condition=condition, add_version_condition=False
            ),
            announcements,
        )


def _transact_first_conditional(change: Any, announcements: Sequence[Any]) -> bool:
    """`change` (one conditional write) and the outbox items of `announcements` in one
    transaction; False when the change's condition did not hold (then nothing is written)."""
    from chalicelib.clock import utc_now

    items = outbox.records(announcements, utc_now())
    connection = CommentRecord._get_connection().connection
    for attempt in range(1, RACE_ATTEMPTS + 1):
        try:
            with TransactWrite(connection=connection) as write:
                change(write)
                outbox.add_to(write, items)
            return True
        except TransactWriteError as error:
            if (cancellation_codes(error) or [""])[0] == "ConditionalCheckFailed":
                return False
            if not is_cancelled_by_race(error) or attempt >= RACE_ATTEMPTS:
                raise
    return False  # not reached: the last attempt returns or raises


def _write_counted(
    record: CommentRecord,
    condition: Any,
    author_alias: str | None = None,
    announcements: Sequence[Any] = (),
) -> bool:
    """Save the comment under `condition`; False when the condition (or the version) failed.

    Its index keys are derived anew; `visible_post_id` still holds the stored value until then,
    so the change in visibility is known without a read. When it changes, the post's count moves
    in the same transaction: a failed write changes neither. Purges take only deleted comments,
    which are not counted, so they never touch the count.
    """
    was_visible = record.visible_post_id is not None
    record.refresh_index_keys(author_alias)
    cache.forget(POSITION, [int(record.id)])
    delta = int(record.visible_post_id is not None) - int(was_visible)
    if delta == 0 and not announcements:
        return conditionally(lambda: record.save(condition=condition))

    def change(write: TransactWrite) -> None:
        write.save(record, condition=condition)
        if delta:
            write.update(
                PostRecord(id=record.post_id),
                actions=[PostRecord.comments_count.add(delta)],
                add_version_condition=False,
            )

    # The comment first: a failed condition on it (not as read, or exists already) is False.
    # Another transaction that wrote the same post at the same moment (DynamoDB cancels one of
    # two) wrote nothing, and the same transaction may simply run again.
    return _transact_first_conditional(change, announcements)


def _list_page(
    index: Any,
    key_name: str,
    key: str,
    *,
    limit: int,
    after: CommentRecord | None,
    forward: bool,
    text: str | None = None,
    position: dict[str, Any] | None = None,
) -> list[CommentRecord]:
    """One page of a sparse comment index, right after `after`'s place in it.

    `after` may have left the list since (approved, undeleted, reports cleared): its start key
    is built from the values it had in the list, so the page still continues after it.
    """
    start = None
    if after is not None:
        start = index_start_key(after, index, {key_name: key, **(position or {})})
    records = query_page(
        index, key, limit=limit, forward=forward, start_key=start, filter_condition=_matching(text)
    )
    cache.remember(POSITION, {int(r.id): r for r in records[-1:]})
    return records


def _matching(text: str | None):
    # `search_text` is stored lower-cased: DynamoDB's `contains` is case-sensitive.
    return CommentRecord.search_text.contains(text) if text else None


def _deleted_before(
    index: Index, hash_key: str, cutoff: datetime, limit: int, after: CommentRecord | None
) -> list[CommentRecord]:
    """A page of an index sorted by `deleted_on`, oldest first, up to `cutoff`."""
    return query_page(
        index,
        hash_key,
        limit=limit,
        forward=True,
        after=after,
        range_key_condition=CommentRecord.deleted_on <= cutoff,
    )
