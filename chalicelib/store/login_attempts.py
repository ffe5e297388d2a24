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

from chalicelib.store.base import conditionally, register, table_meta


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
        """Count one failure, atomically: parallel guesses cannot reset each other's count."""
        record = LoginAttemptRecord(email_lower)

        def count_in_open_window() -> bool:
            return conditionally(
                lambda: record.update(
                    actions=[LoginAttemptRecord.failures.add(1)],
                    condition=LoginAttemptRecord.window_start >= now - window,
                )
            )

        def open_new_window() -> bool:
            fresh = LoginAttemptRecord(
                email_lower, failures=1, window_start=now, expires=now + window
            )
            return conditionally(
                lambda: fresh.save(
                    condition=LoginAttemptRecord.email_lower.does_not_exist()
                    | (LoginAttemptRecord.window_start < now - window)
                )
            )

        # A parallel failure may open the window between our two tries: then count in it.
        if not count_in_open_window() and not open_new_window():
            count_in_open_window()

    def clear(self, email_lower: str) -> None:
        LoginAttemptRecord(email_lower).delete()
