"""Failed sign-ins per address, to throttle password guessing (items expire by TTL)."""

from __future__ import annotations

from datetime import datetime, timedelta

from pynamodb.attributes import (
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.models import Model

from chalicelib.store.base import register, table_meta


@register
class LoginAttemptRecord(Model):
    Meta = table_meta("login-attempts")

    email_lower = UnicodeAttribute(hash_key=True)
    failures = NumberAttribute(default=0)
    window_start = UTCDateTimeAttribute()
    expires = TTLAttribute()


class LoginAttemptRepository:
    def failures_since(self, email_lower: str, since: datetime) -> int:
        try:
            record = LoginAttemptRecord.get(email_lower, consistent_read=True)
        except LoginAttemptRecord.DoesNotExist:
            return 0
        return int(record.failures) if record.window_start >= since else 0

    def record_failure(self, email_lower: str, now: datetime, window: timedelta) -> None:
        try:
            record = LoginAttemptRecord.get(email_lower, consistent_read=True)
        except LoginAttemptRecord.DoesNotExist:
            record = None
        if record is None or record.window_start < now - window:
            LoginAttemptRecord(
                email_lower, failures=1, window_start=now, expires=now + window
            ).save()
            return
        record.update(actions=[LoginAttemptRecord.failures.add(1)])

    def clear(self, email_lower: str) -> None:
        LoginAttemptRecord(email_lower).delete()
