"""Post comments, with a sparse index per moderation list.

An index only holds items that carry its key attributes, so each list (visible comments of a post,
deleted, unapproved and spam-reported comments of a group) is a Query over exactly its members.
`refresh_index_keys()` derives those attributes from the comment's state; every write calls it.
Writes are guarded by `version` (optimistic locking), so two moderators cannot overwrite each other.
"""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from chalicelib.store.base import (
    UtcAttribute,
    index_meta,
    index_start_key,
    query_page,
    register,
    table_meta,
)

# Every deleted comment of every group sits under this one key of the purge index, ordered by
# deletion time: the monthly purge reads only the comments old enough to go.
PURGE_BUCKET = "deleted"


class SpamReport(MapAttribute):
    author_id = UnicodeAttribute()
    created_on = UtcAttribute()


class VisibleByPostIndex(GlobalSecondaryIndex):
    Meta = index_meta("visible-by-post", AllProjection())
    visible_post_id = UnicodeAttribute(hash_key=True)
    created_on = UtcAttribute(range_key=True)


class DeletedByGroupIndex(GlobalSecondaryIndex):
    Meta = index_meta("deleted-by-group", AllProjection())
    deleted_group_id = UnicodeAttribute(hash_key=True)
    deleted_on = UtcAttribute(range_key=True)


class UnapprovedByGroupIndex(GlobalSecondaryIndex):
    Meta = index_meta("unapproved-by-group", AllProjection())
    unapproved_group_id = UnicodeAttribute(hash_key=True)
    created_on = UtcAttribute(range_key=True)


class ReportedByGroupIndex(GlobalSecondaryIndex):
    Meta = index_meta("reported-by-group", AllProjection())
    reported_group_id = UnicodeAttribute(hash_key=True)
    last_reported_on = UtcAttribute(range_key=True)


class PurgeIndex(GlobalSecondaryIndex):
    Meta = index_meta("purge", KeysOnlyProjection())
    purge_bucket = UnicodeAttribute(hash_key=True)
    deleted_on = UtcAttribute(range_key=True)


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
    approved_on = UtcAttribute(null=True)
    rating = NumberAttribute(default=0)
    votes = NumberAttribute(default=0)
    is_anonymous = BooleanAttribute(default=False)
    deleted_on = UtcAttribute(null=True)
    deleted_by_id = UnicodeAttribute(null=True)
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
    last_reported_on = UtcAttribute(null=True)
    purge_bucket = UnicodeAttribute(null=True)

    version = VersionAttribute()

    visible_by_post = VisibleByPostIndex()
    deleted_by_group = DeletedByGroupIndex()
    unapproved_by_group = UnapprovedByGroupIndex()
    reported_by_group = ReportedByGroupIndex()
    purge_index = PurgeIndex()

    @property
    def is_deleted(self) -> bool:
        return self.deleted_on is not None

    def refresh_index_keys(self) -> None:
        live = self.deleted_on is None
        self.visible_post_id = self.post_id if live and self.is_approved else None
        self.unapproved_group_id = self.group_id if live and not self.is_approved else None
        self.deleted_group_id = None if live else self.group_id
        self.purge_bucket = None if live else PURGE_BUCKET
        reports = list(self.spam_reports or [])
        self.reported_group_id = self.group_id if reports else None
        self.last_reported_on = max((r.created_on for r in reports), default=None)


class CommentRepository:
    def get(self, comment_id: int) -> CommentRecord | None:
        try:
            return CommentRecord.get(comment_id)
        except CommentRecord.DoesNotExist:
            return None

    def save(self, record: CommentRecord, *, only_if_new: bool = False) -> CommentRecord:
        record.refresh_index_keys()
        record.save(condition=CommentRecord.id.does_not_exist() if only_if_new else None)
        return record

    def visible_page(
        self, post_id: str, *, limit: int, after: CommentRecord | None
    ) -> list[CommentRecord]:
        """Approved, not deleted comments of a post, oldest first."""
        start = None
        if after is not None:
            start = index_start_key(
                after, CommentRecord.visible_by_post, {"visible_post_id": post_id}
            )
        return query_page(
            CommentRecord.visible_by_post, post_id, limit=limit, forward=True, start_key=start
        )

    def count_visible(self, post_id: str) -> int:
        return CommentRecord.visible_by_post.count(post_id)
