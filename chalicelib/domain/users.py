"""A user as the store reads it once and the rules hold it: a frozen record, not the PynamoDB item
(store/users.py maps one to the other).

A change of an account is a changed copy (`dataclasses.replace`) that the store writes whole, as
it wrote the item before; the people search's items follow it in the same call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass(frozen=True, kw_only=True)
class User:
    id: str
    alias: str
    avatar_url: str | None = None
    slug: str
    email: str
    # Addresses are compared case-insensitively (sign-in and mail senders).
    email_lower: str
    # None: the account has no password (it cannot sign in).
    password_hash: str | None = None
    # Raised by each new password: a token issued under an older version is refused.
    token_version: int = 0
    # {group id: role name}; users outside a group are `regular` there.
    memberships: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def new(cls, *, id: str, alias: str, email: str, slug: str) -> User:
        """An account not stored yet: no password, no membership."""
        return cls(id=id, alias=alias, email=email, email_lower=email.lower(), slug=slug)


@dataclass(frozen=True)
class FoundUser:
    """A user as the people search holds them (what a result shows)."""

    id: str
    alias: str
    email: str
    slug: str
    avatar_url: str | None


@dataclass(frozen=True)
class FeedKey:
    """A user's feed key as stored: the nonce it is derived from, and its hash (the lookup's
    key); the key itself is never stored (store/feed_keys.py)."""

    user_id: str
    nonce: str
    key_hash: str
    created_on: datetime


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


@dataclass(frozen=True)
class TakenAttempt:
    """A sign-in attempt counted: where it is counted, and how many this source had in the
    window, itself included."""

    counter: str
    source_name: str
    from_source: int
