"""Users with their memberships (one item: signing in costs one GetItem)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pynamodb.attributes import JSONAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from chalicelib.store import cache
from chalicelib.store.base import global_index, nullable, register, table_meta
from chalicelib.store.batch import read_many
from chalicelib.store.user_search import SearchIndex


@register
class UserRecord(Model):
    Meta = table_meta("users")
    # Kept by a warm container for AGORA_CACHE_SECONDS (chalicelib.store.cache).
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


class UserRepository:
    """Users by id come from the warm container's memory when it has them (sign-in never does:
    it reads the password hash afresh)."""

    def get(self, user_id: str) -> UserRecord | None:
        return cache.read_through(UserRecord.CACHE_KIND, user_id, lambda: self._read(user_id))

    @staticmethod
    def _read(user_id: str) -> UserRecord | None:
        try:
            return UserRecord.get(user_id)
        except UserRecord.DoesNotExist:
            return None

    def get_many(self, user_ids: set[str]) -> dict[str, UserRecord]:
        return read_many({UserRecord: {i for i in user_ids if i}})[UserRecord]

    @staticmethod
    def forget(user_ids: set[str] | None = None) -> None:
        """This container changed these users: the next read is fresh."""
        cache.forget(UserRecord.CACHE_KIND, user_ids)

    def by_email(self, email: str) -> UserRecord | None:
        for user in UserRecord.by_email.query(email.strip().lower(), limit=1):
            return user
        return None

    def save(self, user: UserRecord, audit: Sequence[Any] = ()) -> UserRecord:
        """Store the user, and what the people search finds them by (store/user_search.py);
        `audit` (the change's entries) in the same transaction as the user."""

        before = self._read(user.id)
        if audit:
            from chalicelib.store import outbox

            outbox.save_with(user, audit)
        else:
            user.save()
        SearchIndex().replace([(before, user)])
        self.forget({user.id})
        return user

    def new(self, **values: Any) -> UserRecord:
        return UserRecord(**values)
