"""What the people, sign-in, player and profile rules need of the store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from chalicelib.domain.groups import Group
from chalicelib.domain.players import Player

# --- groups and users -----------------------------------------------------------------------------


class GroupReader(Protocol):
    def get(self, group_id: str) -> Group | None: ...
    def root_id(self) -> str | None: ...


class GroupStore(GroupReader, Protocol):
    def get_many(self, group_ids: set[str]) -> Mapping[str, Group]: ...


class GroupDirectory(Protocol):
    def by_name(self, *, limit: int, after: Group | None) -> Sequence[Group]: ...


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

    alias: str  # `create-admin --alias` names the account
    email_lower: str
    password_hash: str | None
    token_version: float


class AccountFinder(Protocol):
    def by_email(self, email: str) -> Account | None: ...


class UserStore(UserReader, AccountFinder, Protocol):
    def new(self, **values: Any) -> Account: ...
    def save(self, user: Any, audit: Sequence[Any] = ()) -> Account: ...


class TakenAttempt(Protocol):
    """A sign-in attempt counted: how many this source had in the window, itself included."""

    @property
    def from_source(self) -> int: ...


@dataclass(frozen=True)
class SignInAttempt:
    """An attempt to count for an account from a source address, in the fixed window `now` falls
    in: refused when the source has had `per_source` or the account `per_account` there (None:
    no ceiling for the account, for a source the owner signed in from)."""

    email_lower: str
    source: str
    now: datetime
    window: timedelta
    per_source: int
    per_account: int | None


class LoginAttemptStore(Protocol):
    """The store and its fake subclass this: they take a `SignInAttempt`, this says it in words."""

    def take_attempt(
        self,
        email_lower: str,
        source: str,
        now: datetime,
        window: timedelta,
        per_source: int,
        per_account: int | None,
    ) -> TakenAttempt | None:
        attempt = SignInAttempt(email_lower, source, now, window, per_source, per_account)
        return self.take(attempt)

    def take(self, attempt: SignInAttempt) -> TakenAttempt | None:
        """Count the attempt, or None (nothing counted) when its source or account has none
        left in the window."""
        ...

    def forget_source(self, attempt: Any) -> None: ...

    def is_known_source(self, email_lower: str, source: str, now: datetime) -> bool:
        """Whether the account's owner signed in from `source` and that is remembered still."""
        ...

    def remember_source(self, email_lower: str, source: str, until: datetime) -> None:
        """The owner signed in from `source`: remember it until `until`."""
        ...

    def end_windows(
        self, email_lower: str, now: datetime, window: timedelta, audit: Sequence[Any] = ()
    ) -> None:
        """Forget every attempt on the account in the window `now` falls in (every source)."""
        ...


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
    ) -> Sequence[FoundUser] | None:
        """The page after user `after`; None when the list does not hold `after`."""
        ...


# --- players and feed keys -------------------------------------------------------------------------


class PlayerStore(Protocol):
    """Players as frozen records (domain/players.py): the store maps its items once."""

    def create(self, **values: Any) -> Player: ...
    def get(self, player_id: str) -> Player | None: ...


class FeedKey(Protocol):
    @property
    def nonce(self) -> str | None: ...
    @property
    def created_on(self) -> datetime: ...


class FeedKeyStore(Protocol):
    def create(
        self, user_id: str, nonce: str, key_hash: str, now: datetime, audit: Sequence[Any] = ()
    ) -> bool: ...
    def delete(self, record: Any, audit: Sequence[Any] = ()) -> None: ...
    def of_user(self, user_id: str) -> FeedKey | None: ...
    def user_of(self, key_hash: str) -> str | None: ...


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
        audit: Sequence[Any] = (),
    ) -> None: ...
