"""What the posts, comments, events and settings documents rules need of the store."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypedDict, Unpack

from chalicelib.domain.comments import Comment, PurgeCandidate
from chalicelib.domain.events import Event
from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject
from chalicelib.domain.posts import Post
from chalicelib.domain.users import User

# --- documents (feed, newsletter, group email, system pages) --------------------------------------


class DocumentWrite(TypedDict, total=False):
    """What rides with a document's write: its audit entries (in the same transaction), when
    and by whom it was changed."""

    audit: Sequence[object]
    modified_on: datetime | None
    editor_id: str | None


class DocumentStore(Protocol):
    """One JSON document per (scope, kind): a group's or the system's settings."""

    def get(self, scope: str, kind: str) -> JsonObject | None: ...
    def put(
        self, scope: str, kind: str, doc: JsonObject, **write: Unpack[DocumentWrite]
    ) -> JsonObject: ...


# --- posts and comments ---------------------------------------------------------------------------


class PostReader(Protocol):
    def get(self, post_id: str) -> Post | None: ...


class PostStore(PostReader, Protocol):
    def get_many(self, post_ids: set[str]) -> Mapping[str, Post]: ...
    def position(self, post_id: str) -> Post | None: ...
    def page_newest_first(
        self, group_id: str, *, limit: int, after: Post | None, text: str | None
    ) -> Sequence[Post]: ...


class CommentReader(Protocol):
    def get(self, comment_id: int) -> Comment | None: ...


@dataclass(frozen=True)
class UnapprovedListing:
    """A page of a group's live comments awaiting approval, by creation time."""

    limit: int
    after: Comment | None
    text: str | None
    newest_first: bool


class CommentStore(CommentReader, Protocol):
    """The moderation lists are one Query each, continuing after `after`'s place in the list;
    a conditional write is refused (None, False) when the stored comment is no longer the one
    read (domain/comments.py: the rules hand the store the comment as read and as changed).
    The store and its fake subclass this: they list an `UnapprovedListing`, `unapproved_page`
    says it in words (its defaults are the moderation page's)."""

    def position(self, comment_id: int) -> Comment | None: ...
    def visible_page(
        self, post_id: str, *, limit: int, after: Comment | None
    ) -> Sequence[Comment]: ...
    def deleted_page(
        self, group_id: str, *, limit: int, after: Comment | None, text: str | None
    ) -> Sequence[Comment]: ...
    def unapproved_page(
        self,
        group_id: str,
        *,
        limit: int,
        after: Comment | None,
        text: str | None = None,
        newest_first: bool = True,
    ) -> Sequence[Comment]:
        return self.unapproved(group_id, UnapprovedListing(limit, after, text, newest_first))

    def unapproved(self, group_id: str, listing: UnapprovedListing) -> Sequence[Comment]: ...
    def reported_page(
        self, group_id: str, *, limit: int, after: Comment | None, text: str | None
    ) -> Sequence[Comment]: ...
    def deleted_before_in_group(
        self, group_id: str, cutoff: datetime, *, limit: int, after: PurgeCandidate | None
    ) -> Sequence[PurgeCandidate]: ...
    def deleted_before(
        self, cutoff: datetime, *, limit: int, after: PurgeCandidate | None
    ) -> Sequence[PurgeCandidate]: ...
    def replace_if_unchanged(
        self, read: Comment, changed: Comment, *, announcements: Sequence[object] = ()
    ) -> Comment | None: ...
    def purge_if_unchanged(self, record: Comment, announcements: Sequence[object] = ()) -> bool: ...
    def purge_if_deleted_before(
        self, comment_id: int, cutoff: datetime, announcements: Sequence[object] = ()
    ) -> bool: ...


class References(Protocol):
    """Posts, groups and users read at once (one BatchGetItem across tables)."""

    @property
    def posts(self) -> Mapping[str, Post]: ...
    @property
    def groups(self) -> Mapping[str, Group]: ...
    @property
    def users(self) -> Mapping[str, User]: ...


class ReferenceStore(Protocol):
    def read(
        self,
        *,
        users: Iterable[str | None] = (),
        groups: Iterable[str | None] = (),
        posts: Iterable[str | None] = (),
    ) -> References: ...


# --- events ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EventListing:
    """A page of a group's events: starting after `moment` ascending (upcoming) or before it
    descending (expired), continuing after `after`, matching `text`."""

    moment: datetime
    upcoming: bool
    limit: int
    after: Event | None
    text: str | None


class EventStore(Protocol):
    """An update or delete of an event changed since it was read raises Conflict (`state`);
    `announcements` (domain events, made by the service) go to the outbox in the same write.
    The store and its fake subclass this: they list an `EventListing`, `page` says it in words."""

    def get(self, event_id: int) -> Event | None: ...
    def position(self, event_id: int) -> Event | None: ...
    def next_id(self) -> int: ...
    def create(self, event: Event, *, announcements: Sequence[object] = ()) -> Event: ...
    def update(
        self, read: Event, changed: Event, *, announcements: Sequence[object] = ()
    ) -> Event: ...
    def delete(self, event: Event, *, announcements: Sequence[object] = ()) -> None: ...
    def page(
        self,
        group_id: str,
        *,
        moment: datetime,
        upcoming: bool,
        limit: int,
        after: Event | None,
        text: str | None,
    ) -> Sequence[Event]:
        return self.listed(group_id, EventListing(moment, upcoming, limit, after, text))

    def listed(self, group_id: str, listing: EventListing) -> Sequence[Event]: ...
    def overlaps(self, event: Event, start: datetime, end: datetime) -> bool: ...
    def overlapping(
        self, group_id: str, start: datetime, end: datetime, *, cap: int
    ) -> Sequence[Event]: ...
