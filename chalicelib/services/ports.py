"""What the services need of the store: one Protocol per repository, and the records it answers.

The services are written against these, never against a PynamoDB class: `deps.py` passes the
DynamoDB repositories (chalicelib/store), the fast tests pass the in-memory ones
(tests/support/fakes.py), and tests/store/test_repository_contract.py holds both to the same
answers. A record Protocol names the attributes the rules read and write; the store's nullable
attributes are typed as such (`store.base.nullable`), so a record is checked against its Protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

# --- groups and users -----------------------------------------------------------------------------


class Group(Protocol):
    # Plain attributes, as chalicelib.auth's GroupLike asks of what it is shown.
    id: str
    access: str

    @property
    def name(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def thumb_url(self) -> str | None: ...
    @property
    def permissions(self) -> Mapping[str, Any]: ...


class GroupStore(Protocol):
    def get(self, group_id: str) -> Group | None: ...
    def get_many(self, group_ids: set[str]) -> Mapping[str, Group]: ...
    def root_id(self) -> str | None: ...


class GroupTree(GroupStore, Protocol):
    def children_of(self, group_id: str) -> list[str]: ...


class User(Protocol):
    # Plain attributes, as chalicelib.auth's UserLike asks of what it is shown.
    id: str
    memberships: Mapping[str, str] | None

    @property
    def alias(self) -> str: ...
    @property
    def email(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def avatar_url(self) -> str | None: ...


class UserReader(Protocol):
    def get(self, user_id: str) -> User | None: ...
    def get_many(self, user_ids: set[str]) -> Mapping[str, User]: ...


class Account(User, Protocol):
    """A user as the sign-in and `create-admin` rules change it."""

    email_lower: str
    password_hash: str | None
    token_version: float


class UserStore(UserReader, Protocol):
    def by_email(self, email: str) -> Account | None: ...
    def new(self, **values: Any) -> Account: ...
    def save(self, user: Any) -> Account: ...


class TakenAttempt(Protocol):
    """A sign-in attempt counted: how many this source had in the window, itself included."""

    @property
    def from_source(self) -> int: ...


class LoginAttemptStore(Protocol):
    def take_attempt(
        self,
        email_lower: str,
        source: str,
        now: datetime,
        window: timedelta,
        per_source: int,
        per_account: int,
    ) -> TakenAttempt | None: ...
    def forget_source(self, attempt: Any) -> None: ...


class FoundUser(Protocol):
    """A user as the people search holds them."""

    @property
    def id(self) -> str: ...
    @property
    def alias(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def email(self) -> str: ...
    @property
    def avatar_url(self) -> str | None: ...


class PeopleIndex(Protocol):
    def page(
        self, query_key: str, group_id: str | None, *, limit: int, after: Any | None
    ) -> Sequence[FoundUser]: ...


# --- documents (feed, newsletter, group email, system pages) --------------------------------------


class DocumentStore(Protocol):
    """One JSON document per (scope, kind): a group's or the system's settings."""

    def get(self, scope: str, kind: str) -> dict[str, Any] | None: ...
    def put(self, scope: str, kind: str, doc: dict[str, Any], **meta: Any) -> dict[str, Any]: ...


# --- posts and comments ---------------------------------------------------------------------------


class Post(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def group_id(self) -> str: ...
    @property
    def author_id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def created_on(self) -> datetime: ...
    @property
    def source(self) -> str: ...
    @property
    def comments_count(self) -> float: ...


class PostStore(Protocol):
    def get(self, post_id: str) -> Post | None: ...
    def get_many(self, post_ids: set[str]) -> Mapping[str, Post]: ...
    def position(self, post_id: str) -> Post | None: ...
    def page_newest_first(
        self, group_id: str, *, limit: int, after: Any, text: str | None
    ) -> Sequence[Post]: ...


class SpamReport(Protocol):
    @property
    def author_id(self) -> str: ...
    @property
    def created_on(self) -> datetime: ...


class Comment(Protocol):
    """A comment as moderation reads and changes it; `version` guards the write."""

    @property
    def id(self) -> float: ...
    @property
    def post_id(self) -> str: ...
    @property
    def group_id(self) -> str: ...
    @property
    def author_id(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def created_on(self) -> datetime: ...
    @property
    def parent_comment_id(self) -> float: ...
    @property
    def rating(self) -> float: ...
    @property
    def votes(self) -> float: ...
    @property
    def is_anonymous(self) -> bool: ...
    @property
    def is_deleted(self) -> bool: ...
    @property
    def deleted_list_position(self) -> datetime | None: ...
    @property
    def last_reported_on(self) -> datetime | None: ...

    is_approved: bool
    approved_on: datetime | None
    deleted_on: datetime | None
    deleted_by_id: str | None
    # The store's report items (each a SpamReport): a list the rules may empty.
    spam_reports: list[Any]


class CommentStore(Protocol):
    """The moderation lists are one Query each, continuing after `after`'s place in the list;
    a conditional write answers False when the stored comment is no longer the one read."""

    def get(self, comment_id: int) -> Comment | None: ...
    def position(self, comment_id: int) -> Comment | None: ...
    def visible_page(self, post_id: str, *, limit: int, after: Any) -> Sequence[Comment]: ...
    def deleted_page(
        self, group_id: str, *, limit: int, after: Any, text: str | None
    ) -> Sequence[Comment]: ...
    def unapproved_page(
        self,
        group_id: str,
        *,
        limit: int,
        after: Any,
        text: str | None = None,
        newest_first: bool = True,
    ) -> Sequence[Comment]: ...
    def reported_page(
        self, group_id: str, *, limit: int, after: Any, text: str | None
    ) -> Sequence[Comment]: ...
    def deleted_before_in_group(
        self, group_id: str, cutoff: datetime, *, limit: int, after: Any
    ) -> Sequence[Comment]: ...
    def deleted_before(self, cutoff: datetime, *, limit: int, after: Any) -> Sequence[Comment]: ...
    def replace_if_unchanged(
        self, record: Any, *, was_deleted: bool, events: Sequence[object] = ()
    ) -> bool: ...
    def purge_if_unchanged(self, record: Any, events: Sequence[object] = ()) -> bool: ...
    def purge_if_deleted_before(
        self, comment_id: int, cutoff: datetime, events: Sequence[object] = ()
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


class EventFields(Protocol):
    """What an event says of itself: as sent to the API, written in a fixture, or stored."""

    @property
    def title(self) -> str: ...
    @property
    def all_day(self) -> bool: ...
    @property
    def start_date(self) -> datetime: ...
    @property
    def end_date(self) -> datetime | None: ...
    @property
    def content(self) -> str: ...
    @property
    def organizer(self) -> str: ...
    @property
    def location(self) -> str: ...


class Event(EventFields, Protocol):
    @property
    def id(self) -> float: ...
    @property
    def group_id(self) -> str: ...
    @property
    def author_id(self) -> str: ...
    @property
    def editor_id(self) -> str: ...
    @property
    def created_on(self) -> datetime: ...
    @property
    def modified_on(self) -> datetime: ...
    @property
    def start_key(self) -> str: ...


# The domain events a write announces, made from the record as stored.
Happened = Callable[[Any], Sequence[object]]


class EventStore(Protocol):
    """An update or delete of an event changed since it was read raises Conflict (`state`)."""

    def get(self, event_id: int) -> Event | None: ...
    def position(self, event_id: int) -> Event | None: ...
    def next_id(self) -> int: ...
    def create(self, *, happened: Happened | None = None, **values: Any) -> Event: ...
    def update(self, record: Any, *, happened: Happened | None = None, **changes: Any) -> Event: ...
    def delete(self, record: Any, *, happened: Happened | None = None) -> None: ...
    def page(
        self,
        group_id: str,
        *,
        moment: datetime,
        upcoming: bool,
        limit: int,
        after: Any,
        text: str | None,
    ) -> Sequence[Event]: ...
    def overlaps(self, record: Any, start: datetime, end: datetime) -> bool: ...
    def overlapping(
        self, group_id: str, start: datetime, end: datetime, *, cap: int
    ) -> Sequence[Event]: ...


# --- players, feed keys, email suppressions -------------------------------------------------------


class Player(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def experience(self) -> float: ...
    @property
    def is_public_profile(self) -> bool: ...
    @property
    def last_log_notifation(self) -> datetime | None: ...
    @property
    def last_log_read(self) -> datetime | None: ...
    @property
    def last_modified(self) -> datetime: ...
    @property
    def quests(self) -> Sequence[Any]: ...  # JSON objects, checked when answered
    @property
    def cards(self) -> Sequence[Any]: ...
    @property
    def log(self) -> Sequence[Any]: ...


class PlayerStore(Protocol):
    def create(self, **values: Any) -> Player: ...
    def get(self, player_id: str) -> Player | None: ...


class FeedKey(Protocol):
    @property
    def nonce(self) -> str | None: ...
    @property
    def created_on(self) -> datetime: ...


class FeedKeyStore(Protocol):
    def create(self, user_id: str, nonce: str, key_hash: str, now: datetime) -> bool: ...
    def delete(self, record: Any) -> None: ...
    def of_user(self, user_id: str) -> FeedKey | None: ...
    def user_of(self, key_hash: str) -> str | None: ...


class Suppression(Protocol):
    @property
    def reason(self) -> str: ...
    @property
    def suppressed_on(self) -> datetime: ...


class SuppressionStore(Protocol):
    def get(self, address: str) -> Suppression | None: ...
    def suppress(
        self, address: str, reason: str, detail: str, feedback_id: str, now: datetime
    ) -> None: ...
    def clear(self, address: str) -> bool: ...


class PendingDigestItems(Protocol):
    """The items waiting for a user's daily digest; `take` settles one (False: already taken).
    (`mail_ports.DigestQueue` is the other side: notifications queueing items.)"""

    def pending_items(self, user_id: str, limit: int) -> Sequence[object]: ...
    def take(self, record: Any, day: str, now: datetime) -> bool: ...


# --- notification settings ----------------------------------------------------------------------


class Subscription(Protocol):
    """A user's subscription to a notification of a group, post, author or of their own (the
    digest's item, which has no target, is read through `digest_type` only)."""

    @property
    def sort_key(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def target_id(self) -> str: ...
    @property
    def group_id(self) -> str | None: ...
    @property
    def notification_id(self) -> float: ...
    @property
    def email_alert_id(self) -> float | None: ...
    @property
    def show_screen_alert(self) -> bool | None: ...
    @property
    def show_red_label(self) -> bool | None: ...


class NotificationStore(Protocol):
    def of_user(self, user_id: str, prefix: str) -> Sequence[Subscription]: ...
    def get(self, user_id: str, key: str) -> Subscription | None: ...
    def upsert(
        self,
        user_id: str,
        *,
        kind: str,
        target_id: str,
        notification_id: int,
        group_id: str | None,
        settings: dict[str, Any],
        modified_on: datetime,
    ) -> Subscription: ...
    def stop_email(self, user_id: str, key: str, modified_on: datetime) -> bool: ...
    def stop_digest_emails(self, user_id: str, modified_on: datetime) -> bool: ...
    def digest_type(self, user_id: str) -> int | None: ...
    def set_digest_type(self, user_id: str, type_id: int, modified_on: datetime) -> None: ...


# --- profile structure ----------------------------------------------------------------------------


class ProfileItem(Protocol):
    """A section (`kind` "section") or a field of the profile structure."""

    @property
    def item_key(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def field_id(self) -> str | None: ...

    name: str
    position: float
    section_id: float
    default_visibility_id: float | None
    type_id: float | None
    parent_id: str | None
    parent_selected_value_id: str | None
    data: Any  # the field's settings as JSON: a dict of the field type's keys


class ProfileStore(Protocol):
    """The whole structure is read at once and written in all-or-nothing commits conditioned on
    the version each record was read at (a stale record fails the commit: StaleStructure)."""

    def load(self) -> Sequence[ProfileItem]: ...
    def next_section_id(self) -> int: ...
    def new_section(self, section_id: int, **values: Any) -> ProfileItem: ...
    def new_field(self, field_id: str, **values: Any) -> ProfileItem: ...
    def commit(
        self,
        saves: Sequence[Any] = (),
        moves: Sequence[Any] = (),
        deletes: Sequence[Any] = (),
    ) -> None: ...
