"""A comment as the store reads it once and the rules hold it: a frozen record, not the PynamoDB
item (store/comments.py maps one to the other).

Moderation never changes a comment in place: it makes a changed copy (`dataclasses.replace`) and
hands the store both, the comment as read and as changed. `version` is the version it was read
at: the store writes the change only if the stored comment is still at that version (and as
deleted, or not, as it was read).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class SpamReport:
    author_id: str
    created_on: datetime


@dataclass(frozen=True)
class Comment:
    id: int
    post_id: str
    group_id: str
    author_id: str
    content: str
    created_on: datetime
    parent_comment_id: int
    is_approved: bool
    approved_on: datetime | None
    rating: float
    votes: float
    is_anonymous: bool
    deleted_on: datetime | None
    deleted_by_id: str | None
    # When it was last deleted, kept after an undelete (its place in the deleted list).
    last_deleted_on: datetime | None
    # When it was last reported, kept after its reports are cleared (its place in that list).
    last_reported_on: datetime | None
    spam_reports: tuple[SpamReport, ...]
    # Where the mail that created it came from, when it did (mail-in idempotency).
    source: str
    # None for a comment no write of the store has versioned yet (the fixture loader's).
    version: int | None
    # Why mail-in held it for approval when its sender was not verified (None otherwise).
    held_because: str | None = None

    @property
    def is_deleted(self) -> bool:
        return self.deleted_on is not None

    @property
    def deleted_list_position(self) -> datetime | None:
        """Its place in the deleted list, now or when it was last there."""
        return self.deleted_on or self.last_deleted_on


@dataclass(frozen=True)
class PurgeCandidate:
    """A deleted comment a bulk purge may remove, as a list of old deletions names it: the
    group-wide list knows its post and group, the every-group list (keys only) does not."""

    id: int
    deleted_on: datetime
    post_id: str | None
    group_id: str | None
