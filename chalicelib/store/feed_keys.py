"""Feed keys: a secret per user that stands for sign-in on the group feeds (`?key=`).

Table `feed-keys`, hash `pk`, two items per key:
    user#<userId>   the user's current key: `nonce` (what the key is derived from) and `key_hash`
    key#<sha256>    the key's hash → `user_id`: how a feed request finds its user (one GetItem)

The key itself is never stored: it is an HMAC of the nonce under the server's secret, so the table
alone (a backup, a leaked export) gives nobody a key. Revoking deletes both items.
"""

from __future__ import annotations

from collections.abc import Sequence

from pynamodb.attributes import UnicodeAttribute
from pynamodb.exceptions import TransactWriteError
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.aws import error_code
from chalicelib.clock import utc_now
from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.users import FeedKey
from chalicelib.store import outbox
from chalicelib.store.base import UtcAttribute, register, table_meta

USER = "user#"
KEY = "key#"


@register
class FeedKeyRecord(Model):
    Meta = table_meta("feed-keys")

    pk = UnicodeAttribute(hash_key=True)
    user_id = UnicodeAttribute()
    nonce = UnicodeAttribute(null=True)
    key_hash = UnicodeAttribute(null=True)
    created_on = UtcAttribute()


class FeedKeyRepository:
    def of_user(self, user_id: str) -> FeedKey | None:
        try:
            item = FeedKeyRecord.get(USER + user_id, consistent_read=True)
        except FeedKeyRecord.DoesNotExist:
            return None
        return FeedKey(user_id, str(item.nonce), str(item.key_hash), item.created_on)

    def user_of(self, key_hash: str) -> str | None:
        try:
            return str(FeedKeyRecord.get(KEY + key_hash).user_id)
        except FeedKeyRecord.DoesNotExist:
            return None

    def create(self, key: FeedKey, audit: Sequence[AuditEntry] = ()) -> bool:
        """Store a new key for its user, with `audit` (the change's entries) in the same
        transaction; False when the user got one meanwhile (a race)."""

        mine = FeedKeyRecord(
            USER + key.user_id,
            user_id=key.user_id,
            nonce=key.nonce,
            key_hash=key.key_hash,
            created_on=key.created_on,
        )
        lookup = FeedKeyRecord(KEY + key.key_hash, user_id=key.user_id, created_on=key.created_on)
        try:
            with TransactWrite(connection=FeedKeyRecord._get_connection().connection) as write:
                write.save(mine, condition=FeedKeyRecord.pk.does_not_exist())
                write.save(lookup, condition=FeedKeyRecord.pk.does_not_exist())
                outbox.add_to(write, outbox.records(audit, key.created_on))
        except TransactWriteError as error:
            if error_code(error) == "TransactionCanceledException":
                return False
            raise
        return True

    def delete(self, key: FeedKey, audit: Sequence[AuditEntry] = ()) -> None:
        items = outbox.records(audit, utc_now())
        with TransactWrite(connection=FeedKeyRecord._get_connection().connection) as write:
            write.delete(FeedKeyRecord(KEY + key.key_hash))
            write.delete(FeedKeyRecord(USER + key.user_id))
            outbox.add_to(write, items)
