"""The fixture format (CONTRACT §4) on its two ways through the store: what a load hands the store
to write (by the stored attributes' names) and the documents an export writes (by the file's JSON
names, camelCase, in the order the file gives them). Groups, users, comments and events are loaded as
domain records, posts as domain/posts.py's NewPost: only what has no record of its own is here.

The file a load reads is not typed here: it is untrusted JSON, checked by schemas/fixture.py.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict

from chalicelib.domain.events import EventDetails
from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject
from chalicelib.domain.posts import Post

# --- what a load writes: a stored record's attributes, by name ------------------------------------


@dataclass(frozen=True)
class LoadedEvent(EventDetails):
    """An event as a fixture gives it (what it says of itself sanitised): the store makes the
    stored Event of it, its editor its author; what its `filter` searches the store derives."""

    id: int
    group_id: str
    author_id: str
    # None: the time of the first load (the store keeps it on a reload).
    created_on: datetime | None


class ConnectorValues(TypedDict):
    id: str
    kind: str
    name: str
    description: str
    # None: the first load's (the store keeps it on a reload), or no author at all.
    author_id: str | None
    created_on: datetime | None


class PlayerValues(TypedDict):
    id: str
    name: str
    experience: int
    is_public_profile: bool
    last_log_notifation: datetime | None  # the spec spells it so
    last_log_read: datetime | None
    # Quest, card and log entries as the spec names their fields: a read validates them back.
    quests: list[JsonObject]
    cards: list[JsonObject]
    log: list[JsonObject]
    last_modified: datetime | None  # None: the time of the load, or the stored one if unchanged


# --- what an export writes: the file's documents ---------------------------------------------------
# Dates are ISO 8601 UTC strings ending in `Z`; a date the store does not hold is null.
#
# The documents of groups, posts and events are their records' fields by the file's JSON names
# (camelCase), made from the records here, so that a field added to a record is in its document
# with nothing more said: `first` names the fields the file gives first, the rest follow in the
# record's order. services/fixture.py writes them from the fixture's models and
# tests/services/test_fixture_documents.py holds the two together, key by key. To the type
# checker they are JSON objects (it cannot read a type made at run time).


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _document(name: str, record: type, *, first: str = "", leave_out: str = "") -> type:
    names = [f.name for f in fields(record) if f.name not in leave_out.split()]
    ordered = [*first.split(), *(n for n in names if n not in first.split())]
    return TypedDict(name, {_camel(n): object for n in ordered})  # type: ignore[operator]


if TYPE_CHECKING:
    GroupDocument = JsonObject
    PostDocument = JsonObject
    EventDocument = JsonObject
else:
    GroupDocument = _document("GroupDocument", Group, first="id name slug")
    # `source` last, written for a mailed post only (MailedSource).
    PostDocument = _document("PostDocument", Post, leave_out="comments_count")
    EventDocument = _document("EventDocument", LoadedEvent, first="id group_id author_id")


class MembershipDocument(TypedDict):
    groupId: str
    role: str


class UserDocument(TypedDict):
    id: str
    alias: str
    email: str
    passwordHash: str | None
    slug: str
    avatarUrl: str | None
    memberships: list[MembershipDocument]


# Written for a mailed post or comment only, so that `load` keeps it: a fixture's is the default.
MailedSource = Literal["email"]


class SpamReportDocument(TypedDict):
    authorId: str
    createdOn: str | None


class CommentDocument(TypedDict):
    id: int
    postId: str
    authorId: str
    content: str
    createdOn: str | None
    parentCommentId: int
    isApproved: bool
    approvedOn: str | None
    rating: int
    votes: int
    isAnonymous: bool
    deletedOn: str | None
    deletedById: str | None
    spamReports: list[SpamReportDocument]
    source: NotRequired[MailedSource]


class ConnectorDocument(TypedDict):
    id: str
    kind: str
    name: str
    description: str
    isEnabled: bool
    authorId: str | None
    createdOn: str | None


class PlayerDocument(TypedDict):
    id: str
    name: str
    experience: int
    isPublicProfile: bool
    lastLogNotifation: str | None
    lastLogRead: str | None
    lastModified: str | None
    quests: list[JsonObject]
    cards: list[JsonObject]
    log: list[JsonObject]


class HomePageDocument(TypedDict):
    content: str


FixtureDocument = (
    GroupDocument
    | UserDocument
    | PostDocument
    | CommentDocument
    | EventDocument
    | ConnectorDocument
    | PlayerDocument
)
