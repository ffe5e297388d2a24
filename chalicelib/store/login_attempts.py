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
    def reserve_attempt(
        self, email_lower: str, now: datetime, window: timedelta, limit: int
    ) -> bool:
        """Take one of the `limit` attempts of the address's open window, opening a window when
        none is open; False when all are taken. Each step is one conditional write, so parallel
        guesses never take more than `limit` attempts: the password is checked only after one
        was taken. `failures` counts the attempts taken; a good sign-in clears them."""
        record = LoginAttemptRecord(email_lower)

        def take_in_open_window() -> bool:
            return conditionally(
                lambda: record.update(
                    actions=[LoginAttemptRecord.failures.add(1)],
                    condition=(LoginAttemptRecord.window_start >= now - window)
                    & (LoginAttemptRecord.failures < limit),
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

        # Neither step worked: the window is open and full, or a parallel attempt opened it
        # between our two writes; one more try in it tells which.
        return take_in_open_window() or open_new_window() or take_in_open_window()

    def clear(self, email_lower: str) -> None:
        LoginAttemptRecord(email_lower).delete()  # deleting what is not there is no error
