"""Outgoing notification mail: daily digest items, the digest of each day, instant email claims.

Table `digests`, hash `user_id`, range `sk`:
- `item#<occurrence id>`: an occurrence queued for the user's daily digest (conditional put: once per
  user and occurrence). While it waits it carries `pending_shard` and `pending_key`, which put it
  in two sparse indexes: `pending` (hash `pending_shard`), where the daily job finds the users with
  something to send without a Scan, and the local `pending-by-user`, where it finds that user's
  items without reading the ones sent before. A digest takes an item with a conditional update
  (`sent_on` set only if absent, both keys removed), so no item is ever sent twice.
- `day#<YYYY-MM-DD>`: that day's digest of the user (conditional put: one per user per day).
- `instant#<occurrence id>`: the instant email of an occurrence was claimed for the user
  (conditional put: one email per user and occurrence, however often the event is delivered).

Users are spread over `PENDING_SHARDS` index partitions by a hash of their id. Everything expires
by TTL after `KEEP_FOR`: long after a repeated event could arrive, and the table stays small.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from pynamodb.attributes import JSONAttribute, NumberAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    KeysOnlyProjection,
    LocalSecondaryIndex,
)
from pynamodb.models import Model

from chalicelib.store.base import (
    UtcAttribute,
    conditionally,
    index_meta,
    moment_key,
    register,
    table_meta,
)

ITEM = "item#"
DAY = "day#"
INSTANT = "instant#"
PENDING_SHARDS = 8
KEEP_FOR = timedelta(days=30)


def pending_shard(user_id: str) -> str:
    return str(int(hashlib.sha1(user_id.encode()).hexdigest()[:8], 16) % PENDING_SHARDS)


class PendingIndex(GlobalSecondaryIndex):
    Meta = index_meta("pending", KeysOnlyProjection())
    pending_shard = UnicodeAttribute(hash_key=True)
    pending_key = UnicodeAttribute(range_key=True)


class PendingByUserIndex(LocalSecondaryIndex):
    Meta = index_meta("pending-by-user", AllProjection())
    user_id = UnicodeAttribute(hash_key=True)
    pending_key = UnicodeAttribute(range_key=True)


@register
class DigestRecord(Model):
    Meta = table_meta("digests")

    user_id = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)

    # Digest items
    occurrence_id = UnicodeAttribute(null=True)
    pending_shard = UnicodeAttribute(null=True)
    pending_key = UnicodeAttribute(null=True)  # <queued on>#<occurrence id>, while pending
    queued_on = UtcAttribute(null=True)
    # What the digest lists, as it was when queued: kind, group, post, comment ids, title, url…
    item = JSONAttribute(null=True)
    sent_on = UtcAttribute(null=True)
    digest_day = UnicodeAttribute(null=True)

    # Day markers and instant claims
    claimed_on = UtcAttribute(null=True)
    item_count = NumberAttribute(null=True)
    message_id = UnicodeAttribute(null=True)
    expires = TTLAttribute(null=True)

    pending = PendingIndex()
    pending_by_user = PendingByUserIndex()


class DigestRepository:
    # --- digest items --------------------------------------------------------------------------

    def queue(self, user_id: str, occurrence_id: str, item: dict[str, Any], now: datetime) -> bool:
        """Queue an occurrence for the user's digest; False when it was queued already."""
        record = DigestRecord(
            user_id,
            ITEM + occurrence_id,
            occurrence_id=occurrence_id,
            pending_shard=pending_shard(user_id),
            pending_key=moment_key(now, occurrence_id),
            queued_on=now,
            item=item,
            expires=now + KEEP_FOR,
        )
        return conditionally(lambda: record.save(condition=DigestRecord.sk.does_not_exist()))

    def users_with_pending_items(self) -> Iterator[str]:
        """Each user with queued items once per shard, oldest items first (index Queries)."""
        for shard in range(PENDING_SHARDS):
            seen: set[str] = set()
            for key in DigestRecord.pending.query(str(shard)):
                if key.user_id not in seen:
                    seen.add(key.user_id)
                    yield key.user_id

    def pending_items(self, user_id: str, limit: int) -> list[DigestRecord]:
        """The user's queued, unsent items, oldest first (consistent: the index may lag)."""
        return list(
            DigestRecord.pending_by_user.query(
                user_id, consistent_read=True, limit=limit, page_size=limit
            )
        )

    def take(self, record: DigestRecord, day: str, now: datetime) -> bool:
        """Mark the item sent in the digest of `day`, unless some digest took it already."""
        return conditionally(
            lambda: record.update(
                actions=[
                    DigestRecord.sent_on.set(now),
                    DigestRecord.digest_day.set(day),
                    DigestRecord.pending_shard.remove(),
                    DigestRecord.pending_key.remove(),
                ],
                condition=DigestRecord.sent_on.does_not_exist(),
            )
        )

    def put_back(self, record: DigestRecord) -> None:
        """The digest could not be sent: the item waits for the next one."""
        record.update(
            actions=[
                DigestRecord.sent_on.remove(),
                DigestRecord.digest_day.remove(),
                DigestRecord.pending_shard.set(pending_shard(record.user_id)),
                DigestRecord.pending_key.set(moment_key(record.queued_on, record.occurrence_id)),
            ]
        )

    # --- one digest per user per day -----------------------------------------------------------

    def claim_day(self, user_id: str, day: str, now: datetime) -> bool:
        record = DigestRecord(user_id, DAY + day, claimed_on=now, expires=now + KEEP_FOR)
        return conditionally(lambda: record.save(condition=DigestRecord.sk.does_not_exist()))

    def release_day(self, user_id: str, day: str) -> None:
        DigestRecord(user_id, DAY + day).delete()

    def finish_day(self, user_id: str, day: str, item_count: int, message_id: str) -> None:
        DigestRecord(user_id, DAY + day).update(
            actions=[
                DigestRecord.item_count.set(item_count),
                DigestRecord.message_id.set(message_id),
            ]
        )

    def day(self, user_id: str, day: str) -> DigestRecord | None:
        try:
            return DigestRecord.get(user_id, DAY + day, consistent_read=True)
        except DigestRecord.DoesNotExist:
            return None

    # --- instant emails ------------------------------------------------------------------------

    def claim_instant(self, user_id: str, occurrence_id: str, now: datetime) -> bool:
        record = DigestRecord(
            user_id, INSTANT + occurrence_id, claimed_on=now, expires=now + KEEP_FOR
        )
        return conditionally(lambda: record.save(condition=DigestRecord.sk.does_not_exist()))

    def release_instant(self, user_id: str, occurrence_id: str) -> None:
        DigestRecord(user_id, INSTANT + occurrence_id).delete()

    def record_instant(self, user_id: str, occurrence_id: str, message_id: str) -> None:
        DigestRecord(user_id, INSTANT + occurrence_id).update(
            actions=[DigestRecord.message_id.set(message_id)]
        )
