"""The notify pipeline's records: who is told of what (table `notifications`) and what was told
or waits to be (table `digests`: digest items, each day's digest, instant email claims).

Notification subscriptions: one item per (user, subscription), and the digest choice per user.

The table is keyed by user, so a user's list is a few Queries on key prefixes:
    sort_key   group#<groupId>#<n>  post#<groupId>#<postId>#<n>  author#<authorId>#<n>  personal#<n>

The group of a post is part of its sort key because the list shows the post subscriptions of one
group. The `subscribers` index answers the other direction (who is subscribed to this?), which
sending notification emails needs without a Scan:
    target_key group#<groupId>#<n>  post#<postId>#<n>  author#<authorId>#<n>  personal#<userId>#<n>

The digest item (`sort_key` "digest") has no `target_key`, so it stays out of that index.

Outgoing notification mail: daily digest items, the digest of each day, instant email claims.

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
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
)
from pynamodb.expressions.update import Action
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    KeysOnlyProjection,
    LocalSecondaryIndex,
)
from pynamodb.models import Model

from chalicelib.domain.ports.notify import NotificationStore, SubscriptionChange
from chalicelib.domain.subscriptions import Subscription
from chalicelib.store import outbox
from chalicelib.store.base import (
    UtcAttribute,
    conditionally,
    index_meta,
    moment_key,
    nullable,
    register,
    table_meta,
)

DIGEST_KEY = "digest"
# email_alert_id of a subscription whose notifications go into the daily digest.
DIGEST_EMAIL = 2


def sort_key(kind: str, target_id: str, notification_id: int, group_id: str | None = None) -> str:
    if kind == "post":
        return f"post#{group_id}#{target_id}#{notification_id}"
    if kind == "personal":
        return f"personal#{notification_id}"
    return f"{kind}#{target_id}#{notification_id}"


def target_key(kind: str, target_id: str, notification_id: int) -> str:
    return f"{kind}#{target_id}#{notification_id}"


class SubscribersIndex(GlobalSecondaryIndex):
    Meta = index_meta("subscribers", AllProjection())
    target_key = UnicodeAttribute(hash_key=True)
    user_id = UnicodeAttribute(range_key=True)


@register
class NotificationRecord(Model):
    Meta = table_meta("notifications")

    user_id = UnicodeAttribute(hash_key=True)
    sort_key = UnicodeAttribute(range_key=True)
    target_key = UnicodeAttribute(null=True)
    kind = UnicodeAttribute(null=True)  # group | post | author | personal
    target_id = UnicodeAttribute(null=True)  # group, post, author or (personal) the user itself
    group_id = nullable(UnicodeAttribute(null=True))  # the post's group, for post subscriptions
    notification_id = NumberAttribute(null=True)
    email_alert_id = nullable(NumberAttribute(null=True))
    show_screen_alert = nullable(BooleanAttribute(null=True))
    show_red_label = nullable(BooleanAttribute(null=True))
    # Only on the digest item.
    digest_type_id = nullable(NumberAttribute(null=True))
    modified_on = nullable(UtcAttribute(null=True))

    subscribers = SubscribersIndex()


def subscription_of(item: NotificationRecord) -> Subscription:
    """The item as the rules hold it: a setting the item lacks reads as its default, as the
    settings pages and the notifier always took it."""
    return Subscription(
        user_id=item.user_id,
        sort_key=item.sort_key,
        kind=item.kind or "",
        target_id=item.target_id or "",
        group_id=item.group_id,
        notification_id=int(item.notification_id or 0),
        email_alert_id=int(item.email_alert_id or 0),
        show_screen_alert=bool(item.show_screen_alert),
        show_red_label=bool(item.show_red_label),
        modified_on=item.modified_on,
    )


class NotificationRepository(NotificationStore):
    def of_user(self, user_id: str, prefix: str) -> list[Subscription]:
        """The user's subscriptions whose sort key starts with `prefix` (one Query)."""
        return [
            subscription_of(item)
            for item in NotificationRecord.query(
                user_id, NotificationRecord.sort_key.startswith(prefix)
            )
        ]

    def get(self, user_id: str, key: str) -> Subscription | None:
        item = self._item(user_id, key)
        return subscription_of(item) if item else None

    @staticmethod
    def _item(user_id: str, key: str) -> NotificationRecord | None:
        try:
            return NotificationRecord.get(user_id, key)
        except NotificationRecord.DoesNotExist:
            return None

    def subscription(self, user_id: str, change: SubscriptionChange) -> Subscription | None:
        key = sort_key(change.kind, change.target_id, change.notification_id, change.group_id)
        return self.get(user_id, key)

    def save_subscription(
        self, user_id: str, change: SubscriptionChange, audit: Sequence[Any] = ()
    ) -> Subscription:
        """In one UpdateItem: a setting left None keeps its stored value or takes its default.
        With `audit` (every setting given) one transaction, which answers no item: the record
        answered holds the settings written."""
        kind, target_id, number = change.kind, change.target_id, change.notification_id
        record = NotificationRecord(user_id, sort_key(kind, target_id, number, change.group_id))
        actions: list[Action] = [
            NotificationRecord.target_key.set(target_key(kind, target_id, number)),
            NotificationRecord.kind.set(kind),
            NotificationRecord.target_id.set(target_id),
            NotificationRecord.notification_id.set(number),
            NotificationRecord.modified_on.set(change.modified_on),
        ]
        if change.group_id is not None:
            actions.append(NotificationRecord.group_id.set(change.group_id))
        for name, default in SubscriptionChange.DEFAULTS.items():
            attribute = getattr(NotificationRecord, name)
            value = getattr(change, name)
            actions.append(attribute.set(value if value is not None else attribute | default))
        if not audit:
            # The update answers the whole item as written (ALL_NEW) into `record`.
            record.update(actions=actions)
            return subscription_of(record)

        outbox.update_with(record, actions, audit)
        record.kind, record.target_id, record.notification_id = kind, target_id, number
        record.group_id, record.modified_on = change.group_id, change.modified_on
        for name in SubscriptionChange.DEFAULTS:
            setattr(record, name, getattr(change, name))
        return subscription_of(record)

    def stop_email(self, user_id: str, key: str, modified_on: datetime) -> bool:
        """Email alert of one subscription to none (one-click unsubscribe); False when it was
        none already or the subscription is gone. Alerts and red labels stay as they are."""

        record = NotificationRecord(user_id, key)
        return conditionally(
            lambda: record.update(
                actions=[
                    NotificationRecord.email_alert_id.set(0),
                    NotificationRecord.modified_on.set(modified_on),
                ],
                condition=NotificationRecord.sort_key.exists()
                & (NotificationRecord.email_alert_id != 0),
            )
        )

    def stop_digest_emails(self, user_id: str, modified_on: datetime) -> bool:
        """Every subscription of the user that feeds the daily digest stops emailing."""
        changed = False
        for record in NotificationRecord.query(
            user_id, filter_condition=NotificationRecord.email_alert_id == DIGEST_EMAIL
        ):
            changed = self.stop_email(user_id, record.sort_key, modified_on) or changed
        return changed

    def digest_type(self, user_id: str) -> int | None:
        record = self._item(user_id, DIGEST_KEY)
        return int(record.digest_type_id) if record and record.digest_type_id else None

    def set_digest_type(
        self, user_id: str, type_id: int, modified_on: datetime, audit: Sequence[Any] = ()
    ) -> None:
        record = NotificationRecord(
            user_id, DIGEST_KEY, digest_type_id=type_id, modified_on=modified_on
        )
        if audit:
            outbox.save_with(record, audit)
        else:
            record.save()

    def subscribers(self, kind: str, target_id: str, notification_id: int) -> list[Subscription]:
        """Every subscription to notification `notification_id` of this group, post or author."""
        return [
            subscription_of(item)
            for item in NotificationRecord.subscribers.query(
                target_key(kind, target_id, notification_id)
            )
        ]


# -----------------------------------------------------------------------------------------------
# The digests table: what the daily digest and the instant emails were told (module docstring).


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

    def put_back(self, record: DigestRecord) -> bool:
        """The digest could not be sent: the item waits for the next one. False when the item
        is gone (expired since it was taken): it stays gone (see `_still_stored`)."""
        return _still_stored(
            record,
            [
                DigestRecord.sent_on.remove(),
                DigestRecord.digest_day.remove(),
                DigestRecord.pending_shard.set(pending_shard(record.user_id)),
                DigestRecord.pending_key.set(moment_key(record.queued_on, record.occurrence_id)),
            ],
        )

    # --- one digest per user per day -----------------------------------------------------------

    def claim_day(self, user_id: str, day: str, now: datetime) -> bool:
        record = DigestRecord(user_id, DAY + day, claimed_on=now, expires=now + KEEP_FOR)
        return conditionally(lambda: record.save(condition=DigestRecord.sk.does_not_exist()))

    def release_day(self, user_id: str, day: str) -> None:
        DigestRecord(user_id, DAY + day).delete()

    def finish_day(self, user_id: str, day: str, item_count: int, message_id: str) -> bool:
        """The day's digest went: its claim remembers the message. False when the claim is gone
        (expired, or released): nothing is written (see `_still_stored`)."""
        return _still_stored(
            DigestRecord(user_id, DAY + day),
            [DigestRecord.item_count.set(item_count), DigestRecord.message_id.set(message_id)],
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

    def record_instant(self, user_id: str, occurrence_id: str, message_id: str) -> bool:
        """The instant email went: its claim remembers the message. False when the claim is gone
        (expired, or released since): nothing is written (see `_still_stored`)."""
        return _still_stored(
            DigestRecord(user_id, INSTANT + occurrence_id),
            [DigestRecord.message_id.set(message_id)],
        )


def _still_stored(record: DigestRecord, actions: list[Action]) -> bool:
    """Update the item only while it is stored; False when it is gone. An unconditional update
    of an item gone since (its TTL ran out, or a release deleted it) would make a bare item with
    no `expires` that no TTL ever removes (as `NoticeClaims.release` in store/mail.py). The mail
    it records went all the same: the caller logs it and goes on."""
    return conditionally(lambda: record.update(actions=actions, condition=DigestRecord.sk.exists()))
