"""Users with their memberships (one item: signing in costs one GetItem)."""

from __future__ import annotations

from pynamodb.attributes import JSONAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from chalicelib.store.base import index_meta, register, table_meta


class EmailIndex(GlobalSecondaryIndex):
    Meta = index_meta("email", AllProjection())
    email_lower = UnicodeAttribute(hash_key=True)


@register
class UserRecord(Model):
    Meta = table_meta("users")

    id = UnicodeAttribute(hash_key=True)
    alias = UnicodeAttribute()
    email = UnicodeAttribute()
    # Addresses are compared case-insensitively (sign-in and mail senders).
    email_lower = UnicodeAttribute()
    slug = UnicodeAttribute()
    avatar_url = UnicodeAttribute(null=True)
    password_hash = UnicodeAttribute(null=True)
    # {group id: role name}; users outside a group are `regular` there.
    memberships = JSONAttribute(default=dict)

    by_email = EmailIndex()


class UserRepository:
    def get(self, user_id: str) -> UserRecord | None:
        try:
            return UserRecord.get(user_id)
        except UserRecord.DoesNotExist:
            return None

    def get_many(self, user_ids: set[str]) -> dict[str, UserRecord]:
        if not user_ids:
            return {}
        return {u.id: u for u in UserRecord.batch_get(list(user_ids))}

    def by_email(self, email: str) -> UserRecord | None:
        for user in UserRecord.by_email.query(email.strip().lower(), limit=1):
            return user
        return None

    def save(self, user: UserRecord) -> UserRecord:
        user.save()
        return user

    def new(self, **values: object) -> UserRecord:
        return UserRecord(**values)
