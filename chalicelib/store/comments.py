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

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import replace
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
from chalicelib.clock import utc_now
from chalicelib.domain import comments as domain
from chalicelib.domain.comments import Comment, PurgeCandidate
from chalicelib.domain.ports.content import CommentStore, UnapprovedListing
from chalicelib.store import outbox
from chalicelib.store.base import (
    Page,
    UtcAttribute,
    conditionally,
    forget,
    frozen,
    global_index,
    index_start_key,
    nullable,
    query_page,
    read_through,
    register,
    remember,
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
    # Why mail-in held it for approval when its sender was not verified (None otherwise).
    held_because = nullable(UnicodeAttribute(null=True))
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

    def as_comment(self) -> Comment:
        """The record as the rules hold it (domain/comments.py)."""
        reports = tuple(
            domain.SpamReport(r.author_id, r.created_on) for r in self.spam_reports or ()
        )
        return frozen(
            self,
            Comment,
            id=int(self.id),
            parent_comment_id=int(self.parent_comment_id or 0),
            spam_reports=reports,
            version=None if self.version is None else int(self.version),
        )

    def refresh_index_keys(self, author_alias: str | None = None) -> None:
        """Derive the index keys from the state; with the author's alias (a new comment: the alias
        is not stored with it), also what the `filter` searches: the text and the alias."""
        if author_alias is not None:
            from chalicelib.sanitize import html_to_text
            from chalicelib.store.base import search_text

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


# Where a page ended: the `offset` of the next page names it (chalicelib.store.base).
POSITION = "comment-position"


class CommentRepository(CommentStore):
    def position(self, comment_id: int) -> Comment | None:
        """The comment an `offset` names, for its place in a list: from the warm container's
        memory when a page ended there lately (this container's own writes forget it)."""
        return read_through(POSITION, int(comment_id), lambda: self.get(comment_id))

    def get(self, comment_id: int) -> Comment | None:
        try:
            return CommentRecord.get(comment_id).as_comment()
        except CommentRecord.DoesNotExist:
            return None

    def insert(
        self, *, author_alias: str | None = None, announcements: Sequence[Any] = (), **values: Any
    ) -> bool:
        """Store a new comment and the outbox items of `announcements`; False when one with this
        id exists already (conditional put: then neither is written)."""
        record = CommentRecord(**values)
        record.refresh_index_keys(author_alias)
        condition = CommentRecord.id.does_not_exist()
        return _write_counted(
            record,
            was_visible=False,
            alone=lambda: record.save(condition=condition),
            together=lambda write: write.save(record, condition=condition),
            announcements=announcements,
        )

    def visible_page(self, post_id: str, *, limit: int, after: Comment | None) -> list[Comment]:
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
        self, group_id: str, *, limit: int, after: Comment | None, text: str | None
    ) -> list[Comment]:
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

    def unapproved(self, group_id: str, listing: UnapprovedListing) -> list[Comment]:
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
        self, group_id: str, *, limit: int, after: Comment | None, text: str | None
    ) -> list[Comment]:
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
        self, group_id: str, cutoff: datetime, *, limit: int, after: PurgeCandidate | None
    ) -> list[PurgeCandidate]:
        return _deleted_before(
            CommentRecord.deleted_by_group, "deleted_group_id", group_id, cutoff, limit, after
        )

    def deleted_before(
        self, cutoff: datetime, *, limit: int, after: PurgeCandidate | None
    ) -> list[PurgeCandidate]:
        """Keys of comments of every group deleted at or before `cutoff`, oldest first."""
        return _deleted_before(
            CommentRecord.purge_index, "purge_bucket", PURGE_BUCKET, cutoff, limit, after
        )

    # --- conditional writes: refused when the stored comment is no longer the one that was read -

    def replace_if_unchanged(
        self, read: Comment, changed: Comment, *, announcements: Sequence[Any] = ()
    ) -> Comment | None:
        """Write `changed` (and the outbox items of `announcements`) if the stored comment is
        still `read`: at the version read, and as deleted as it was. The comment as written, or
        None when it was not (then nothing is written)."""
        record = record_of(replace(changed, version=read.version))
        record.refresh_index_keys()
        names = [*changed_values(read, changed), *DERIVED]

        def actions() -> list[Any]:
            # Built anew for each attempt: PynamoDB appends the version's increment to the list.
            return [_assign(name, getattr(record, name)) for name in names]

        state = (
            CommentRecord.deleted_on.exists()
            if read.is_deleted
            else CommentRecord.deleted_on.does_not_exist()
        )
        # PynamoDB adds `version = <version read>`
        written = _write_counted(
            record,
            was_visible=read.deleted_on is None and read.is_approved,
            alone=lambda: record.update(actions(), condition=state),
            together=lambda write: write.update(record, actions(), condition=state),
            announcements=announcements,
        )
        return record.as_comment() if written else None

    def purge_if_unchanged(self, record: Comment, announcements: Sequence[Any] = ()) -> bool:
        """Remove a deleted comment (and its embedded reports) if nobody changed it since read."""
        forget(POSITION, [record.id])
        # PynamoDB adds `version = <version read>`
        stored = record_of(record)
        if not announcements:
            return conditionally(lambda: stored.delete(condition=CommentRecord.deleted_on.exists()))
        return _transact_first_conditional(
            lambda write: write.delete(stored, condition=CommentRecord.deleted_on.exists()),
            announcements,
        )

    def purge_if_deleted_before(
        self, comment_id: int, cutoff: datetime, announcements: Sequence[Any] = ()
    ) -> bool:
        """Remove a comment that is (still) deleted at or before `cutoff`: one that was undeleted,
        or deleted again since, in the meantime is left alone."""
        forget(POSITION, [int(comment_id)])
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


# What a replace writes besides the fields it changes: what the record derives from its state.
DERIVED = (
    "visible_post_id",
    "deleted_group_id",
    "unapproved_group_id",
    "reported_group_id",
    "last_reported_on",
    "last_deleted_on",
    "purge_bucket",
)

# The fields a change may move (the id and the version are the write's, not the change's).
_CHANGEABLE = tuple(
    f.name for f in dataclasses.fields(Comment) if f.name not in ("id", "version", *DERIVED)
)


def record_of(comment: Comment) -> CommentRecord:
    values = {f.name: getattr(comment, f.name) for f in dataclasses.fields(Comment)}
    if comment.version is None:  # PynamoDB's VersionAttribute takes no None: unset is unversioned
        del values["version"]
    values["spam_reports"] = [
        SpamReport(author_id=r.author_id, created_on=r.created_on) for r in comment.spam_reports
    ]
    return CommentRecord(**values)


def changed_values(read: Comment, changed: Comment) -> dict[str, Any]:
    """The stored values of the fields `changed` moved from `read` (its reports as the store's
    report items)."""
    record = record_of(changed)
    return {
        name: getattr(record, name)
        for name in _CHANGEABLE
        if getattr(read, name) != getattr(changed, name)
    }


def _assign(name: str, value: Any) -> Any:
    attribute = getattr(CommentRecord, name)
    return attribute.remove() if value is None else attribute.set(value)


def _transact_first_conditional(change: Any, announcements: Sequence[Any]) -> bool:
    """`change` (one conditional write, and unconditional ones) and the outbox items of
    `announcements` in one transaction; False when the change's condition did not hold (then
    nothing is written)."""

    items = outbox.records(announcements, utc_now())
    connection = CommentRecord._get_connection().connection
    for attempt in range(1, RACE_ATTEMPTS + 1):
        try:
            with TransactWrite(connection=connection) as write:
                change(write)
                outbox.add_to(write, items)
            return True
        except TransactWriteError as error:
            # The comment's write is the only one with a condition (the outbox items are new
            # ids, the post's count is added to): wherever DynamoDB lists it among the
            # transaction's items (deletes, puts, then updates), a failed condition is its own.
            if "ConditionalCheckFailed" in cancellation_codes(error):
                return False
            if not is_cancelled_by_race(error) or attempt >= RACE_ATTEMPTS:
                raise
    return False  # not reached: the last attempt returns or raises


def _write_counted(
    record: CommentRecord,
    *,
    was_visible: bool,
    alone: Callable[[], Any],
    together: Callable[[TransactWrite], Any],
    announcements: Sequence[Any] = (),
) -> bool:
    """Write the comment (`alone`, or `together` inside a transaction); False when its condition
    (or the version) failed.

    `record` holds the index keys derived from the state it is written with; `was_visible` says
    whether the comment was in its post's visible list before. When that changes, the post's
    count moves in the same transaction: a failed write changes neither. Purges take only deleted
    comments, which are not counted, so they never touch the count.
    """
    forget(POSITION, [int(record.id)])
    delta = int(record.visible_post_id is not None) - int(was_visible)
    if delta == 0 and not announcements:
        return conditionally(alone)

    def change(write: TransactWrite) -> None:
        together(write)
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
    after: Comment | None,
    forward: bool,
    text: str | None = None,
    position: dict[str, Any] | None = None,
) -> list[Comment]:
    """One page of a sparse comment index, right after `after`'s place in it.

    `after` may have left the list since (approved, undeleted, reports cleared): its start key
    is built from the values it had in the list, so the page still continues after it.
    """
    start = None
    if after is not None:
        place = CommentRecord(
            id=after.id,
            created_on=after.created_on,
            deleted_on=after.deleted_on,
            last_reported_on=after.last_reported_on,
        )
        start = index_start_key(place, index, {key_name: key, **(position or {})})
    records = query_page(
        index, key, limit=limit, forward=forward, start_key=start, filter_condition=_matching(text)
    )
    page = Page(r.as_comment() for r in records)
    page.last_read_id = records.last_read_id
    remember(POSITION, {c.id: c for c in page[-1:]})
    return page


def _matching(text: str | None):
    # `search_text` is stored lower-cased: DynamoDB's `contains` is case-sensitive.
    return CommentRecord.search_text.contains(text) if text else None


def _deleted_before(
    index: Index,
    key_name: str,
    key: str,
    cutoff: datetime,
    limit: int,
    after: PurgeCandidate | None,
) -> list[PurgeCandidate]:
    """A page of an index sorted by `deleted_on`, oldest first, up to `cutoff` (the every-group
    index holds only the keys: its candidates have no post or group)."""
    start = None
    if after is not None:
        place = CommentRecord(id=after.id, deleted_on=after.deleted_on)
        start = index_start_key(place, index, {key_name: key})
    records = query_page(
        index,
        key,
        limit=limit,
        forward=True,
        start_key=start,
        range_key_condition=CommentRecord.deleted_on <= cutoff,
    )
    return [PurgeCandidate(int(r.id), r.deleted_on, r.post_id, r.group_id) for r in records]
