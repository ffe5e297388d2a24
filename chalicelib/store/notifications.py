"""Notification subscriptions: one item per (user, subscription), and the digest choice per user.

The table is keyed by user, so a user's list is a few Queries on key prefixes:
    sort_key   group#<groupId>#<n>  post#<groupId>#<postId>#<n>  author#<authorId>#<n>  personal#<n>

The group of a post is part of its sort key because the list shows the post subscriptions of one
group. The `subscribers` index answers the other direction (who is subscribed to this?), which
sending notification emails needs without a Scan:
    target_key group#<groupId>#<n>  post#<postId>#<n>  author#<authorId>#<n>  personal#<userId>#<n>

The digest item (`sort_key` "digest") has no `target_key`, so it stays out of that index.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.expressions.update import Action
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from chalicelib.domain.ports.notify import NotificationStore, SubscriptionChange
from chalicelib.domain.subscriptions import Subscription
from chalicelib.store import outbox
from chalicelib.store.base import (
    UtcAttribute,
    conditionally,
    index_meta,
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
