"""What the people, sign-in, player and profile rules need of the store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.groups import Group
from chalicelib.domain.players import Player
from chalicelib.domain.profile import ProfileItem
from chalicelib.domain.users import FeedKey, FoundUser, SignInAttempt, TakenAttempt, User

# --- groups and users -----------------------------------------------------------------------------


class GroupReader(Protocol):
    def get(self, group_id: str) -> Group | None: ...
    def root_id(self) -> str | None: ...


class GroupStore(GroupReader, Protocol):
    def get_many(self, group_ids: set[str]) -> Mapping[str, Group]: ...


class GroupDirectory(Protocol):
    def by_name(self, *, limit: int, after: Group | None) -> Sequence[Group]: ...


class UserReader(Protocol):
    def get(self, user_id: str) -> User | None: ...
    def get_many(self, user_ids: set[str]) -> Mapping[str, User]: ...


class AccountFinder(Protocol):
    def by_email(self, email: str) -> User | None: ...


class UserStore(UserReader, AccountFinder, Protocol):
    def save(self, user: User, audit: Sequence[AuditEntry] = ()) -> User:
        """Store the user whole (a new one, or one as read with its changes)."""
        ...


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

    def forget_source(self, attempt: TakenAttempt) -> None: ...

    def is_known_source(self, email_lower: str, source: str, now: datetime) -> bool:
        """Whether the account's owner signed in from `source` and that is remembered still."""
        ...

    def remember_source(self, email_lower: str, source: str, until: datetime) -> None:
        """The owner signed in from `source`: remember it until `until`."""
        ...

    def end_windows(
        self, email_lower: str, now: datetime, window: timedelta, audit: Sequence[AuditEntry] = ()
    ) -> int:
        """Forget every attempt on the account in the window `now` falls in (every source), and
        answer how many there were; none: nothing is written, `audit` included."""
        ...


class PeopleIndex(Protocol):
    def page(
        self, query_key: str, group_id: str | None, *, limit: int, after: User | None
    ) -> Sequence[FoundUser] | None:
        """The page after user `after`; None when the list does not hold `after`."""
        ...


# --- players and feed keys -------------------------------------------------------------------------


class PlayerStore(Protocol):
    """Players as frozen records (domain/players.py): the store maps its items once."""

    def create(self, player: Player, audit: Sequence[AuditEntry] = ()) -> Player:
        """Store a new player; raise CreateRefused when its id or its name is taken."""
        ...

    def get(self, player_id: str) -> Player | None: ...


class FeedKeyStore(Protocol):
    def create(self, key: FeedKey, audit: Sequence[AuditEntry] = ()) -> bool:
        """Store a new key; False when its user has one (a race)."""
        ...

    def delete(self, key: FeedKey, audit: Sequence[AuditEntry] = ()) -> None: ...
    def of_user(self, user_id: str) -> FeedKey | None: ...
    def user_of(self, key_hash: str) -> str | None: ...


# --- profile structure ----------------------------------------------------------------------------


class ProfileStore(Protocol):
    """The whole structure is read at once and written in all-or-nothing commits conditioned on
    the version each record was read at (a stale record fails the commit: StaleStructure)."""

    def load(self) -> Sequence[ProfileItem]: ...
    def next_section_id(self) -> int: ...
    def commit(
        self,
        saves: Sequence[ProfileItem] = (),
        moves: Sequence[ProfileItem] = (),
        deletes: Sequence[ProfileItem] = (),
        audit: Sequence[AuditEntry] = (),
    ) -> None:
        """Write `saves` whole, the new `position` of `moves`, and `deletes`, each only if the
        stored record is still at the version it was read at."""
        ...
