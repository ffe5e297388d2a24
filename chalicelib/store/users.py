"""Users with their memberships (one item: signing in costs one GetItem)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pynamodb.attributes import JSONAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.users import User
from chalicelib.store import outbox
from chalicelib.store.base import (
    cached_get,
    forget,
    frozen,
    global_index,
    nullable,
    read_many,
    register,
    table_meta,
)
from chalicelib.store.user_search import SearchIndex


@register
class UserRecord(Model):
    Meta = table_meta("users")
    # Kept by a warm container for AGORA_CACHE_SECONDS (chalicelib.store.base).
    CACHE_KIND = "user"

    id = UnicodeAttribute(hash_key=True)
    alias = UnicodeAttribute()
    email = UnicodeAttribute()
    # Addresses are compared case-insensitively (sign-in and mail senders).
    email_lower = UnicodeAttribute()
    slug = UnicodeAttribute()
    avatar_url = nullable(UnicodeAttribute(null=True))
    password_hash = nullable(UnicodeAttribute(null=True))
    # Raised by each new password: a token issued under an older version is refused.
    token_version = NumberAttribute(default=0)
    # {group id: role name}; users outside a group are `regular` there.
    memberships = JSONAttribute(default=dict)

    by_email = global_index("email", "email_lower")

    def as_user(self) -> User:
        """The item as the rules hold it (domain/users.py)."""
        return frozen(
            self,
            User,
            token_version=int(self.token_version or 0),
            memberships=dict(self.memberships or {}),
        )

    @classmethod
    def of(cls, user: User) -> UserRecord:
        """The item that stores `user` whole."""
        values = dataclasses.asdict(user)
        values["memberships"] = dict(user.memberships)
        return cls(**values)


class UserRepository:
    """Users by id come from the warm container's memory when it has them (sign-in never does:
    it reads the password hash afresh)."""

    def get(self, user_id: str) -> User | None:
        found = cached_get(UserRecord, user_id)
        return found.as_user() if found is not None else None

    @staticmethod
    def _read(user_id: str) -> UserRecord | None:
        try:
            return UserRecord.get(user_id)
        except UserRecord.DoesNotExist:
            return None

    def get_many(self, user_ids: set[str]) -> dict[str, User]:
        found = read_many({UserRecord: {i for i in user_ids if i}})[UserRecord]
        return {user_id: item.as_user() for user_id, item in found.items()}

    @staticmethod
    def forget(user_ids: set[str] | None = None) -> None:
        """This container changed these users: the next read is fresh."""
        forget(UserRecord.CACHE_KIND, user_ids)

    def by_email(self, email: str) -> User | None:
        for user in UserRecord.by_email.query(email.strip().lower(), limit=1):
            return user.as_user()
        return None

    def save(self, user: User, audit: Sequence[AuditEntry] = ()) -> User:
        """Store the user whole, and what the people search finds them by
        (store/user_search.py); `audit` (the change's entries) in the same transaction as the
        user."""

        before = self._read(user.id)
        item = UserRecord.of(user)
        if audit:
            outbox.save_with(item, audit)
        else:
            item.save()
        SearchIndex().replace([(before, item)])
        self.forget({user.id})
        return user
