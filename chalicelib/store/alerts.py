"""Screen alerts and the red label: one item per (user, occurrence), one state item per user.

Table `alerts`, hash `user_id`, range `sk`:
- `alert#<alert id>` (alert id `post-<postId>` or `comment-<commentId>`): the alert. Keyed by the
  occurrence, so a domain event delivered twice finds its alert there (conditional put). The local
  index `recent` orders alerts by `recent_key` (`<stored on>#<alert id>`), newest first.
  What the alert shows (group, post, author refs) is kept on it: a page is one Query.
- `state`: `red_total` counts the red-label alerts ever stored, `red_read` that total when the user
  last marked the alerts read; the red label is the difference. Storing an alert adds to the total
  in the same transaction, marking read copies the total in one UpdateItem (`SET red_read =
  red_total`), so neither loses a count to the other.

Alerts expire after `ALERT_LIFETIME` (DynamoDB TTL); the counts do not depend on them.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
)
from pynamodb.exceptions import TransactWriteError
from pynamodb.indexes import AllProjection, LocalSecondaryIndex
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.aws import error_code
from chalicelib.domain.alerts import Alert, AlertState
from chalicelib.domain.ports.notify import NewAlert
from chalicelib.store.base import (
    UtcAttribute,
    conditionally,
    index_meta,
    moment_key,
    query_page,
    register,
    table_meta,
)

ALERT = "alert#"
STATE = "state"
ALERT_LIFETIME = timedelta(days=180)


class RecentIndex(LocalSecondaryIndex):
    Meta = index_meta("recent", AllProjection())
    user_id = UnicodeAttribute(hash_key=True)
    recent_key = UnicodeAttribute(range_key=True)


@register
class AlertRecord(Model):
    Meta = table_meta("alerts")

    user_id = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)

    # Alerts
    alert_id = UnicodeAttribute(null=True)
    recent_key = UnicodeAttribute(null=True)
    kind = UnicodeAttribute(null=True)  # newPost | newComment
    reason = UnicodeAttribute(null=True)  # the subscription that matched
    refs = JSONAttribute(
        null=True
    )  # {"group", "post", "author", "commentId", "url"} as the API shows
    occurred_on = UtcAttribute(null=True)
    stored_on = UtcAttribute(null=True)
    show_screen_alert = BooleanAttribute(null=True)
    show_red_label = BooleanAttribute(null=True)
    expires = TTLAttribute(null=True)

    # The state item
    red_total = NumberAttribute(null=True)
    red_read = NumberAttribute(null=True)
    read_on = UtcAttribute(null=True)

    recent = RecentIndex()

    def as_alert(self) -> Alert:
        return Alert(
            user_id=self.user_id,
            alert_id=self.alert_id or "",
            kind=self.kind or "",
            reason=self.reason or "",
            refs=self.refs or {},
            stored_on=self.stored_on,
            show_screen_alert=bool(self.show_screen_alert),
            show_red_label=bool(self.show_red_label),
        )

    def as_state(self) -> AlertState:
        return AlertState(int(self.red_total or 0), int(self.red_read or 0), self.read_on)


class AlertRepository:
    def add(self, alert: NewAlert) -> bool:
        """Store the alert unless it is there already; answers whether it was stored.

        A red-label alert adds one to the user's total in the same transaction.
        """
        user_id = alert.user_id
        record = AlertRecord(
            user_id,
            ALERT + alert.alert_id,
            alert_id=alert.alert_id,
            recent_key=moment_key(alert.stored_on, alert.alert_id),
            expires=alert.stored_on + ALERT_LIFETIME,
            **alert.fields(),
        )
        new_only = AlertRecord.sk.does_not_exist()
        if not alert.show_red_label:
            return conditionally(lambda: record.save(condition=new_only))
        connection = AlertRecord._get_connection().connection
        try:
            with TransactWrite(connection=connection) as transaction:
                transaction.save(record, condition=new_only)
                transaction.update(
                    AlertRecord(user_id, STATE), actions=[AlertRecord.red_total.add(1)]
                )
        except TransactWriteError as error:
            if error_code(error) == "TransactionCanceledException":
                return False  # the alert exists: this occurrence was alerted already
            raise
        return True

    def state(self, user_id: str) -> AlertState | None:
        try:
            return AlertRecord.get(user_id, STATE, consistent_read=True).as_state()
        except AlertRecord.DoesNotExist:
            return None

    def get(self, user_id: str, alert_id: str) -> Alert | None:
        try:
            return AlertRecord.get(user_id, ALERT + alert_id).as_alert()
        except AlertRecord.DoesNotExist:
            return None

    def page_newest_first(self, user_id: str, *, limit: int, after: Alert | None) -> list[Alert]:
        # The page goes on from `after`'s place in the list: its time and id, as `add` keyed it.
        place = (
            AlertRecord(
                after.user_id,
                ALERT + after.alert_id,
                recent_key=moment_key(after.stored_on, after.alert_id),
            )
            if after is not None
            else None
        )
        records = query_page(AlertRecord.recent, user_id, limit=limit, forward=False, after=place)
        return [record.as_alert() for record in records]

    def mark_read(self, user_id: str, now: datetime) -> None:
        """Everything stored so far is read: the red label drops to 0 (one UpdateItem)."""
        state = AlertRecord(user_id, STATE)
        state.update(
            actions=[
                AlertRecord.red_read.set(AlertRecord.red_total | 0),
                AlertRecord.read_on.set(now),
            ]
        )
