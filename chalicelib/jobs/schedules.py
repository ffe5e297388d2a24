"""The schedules, in one place: `app.py` declares them to Lambda, `make run`'s scheduler follows them.

Each is `(minute, hour, day-of-month)`-style or a plain interval, with the next run computed the
same way for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Every:
    minutes: int = 0
    seconds: int = 0

    def next_after(self, moment: datetime) -> datetime:
        return moment + timedelta(minutes=self.minutes, seconds=self.seconds)


@dataclass(frozen=True)
class DailyAt:
    hour: int
    minute: int = 0

    def next_after(self, moment: datetime) -> datetime:
        candidate = moment.replace(hour=self.hour, minute=self.minute, second=0, microsecond=0)
        return candidate if candidate > moment else candidate + timedelta(days=1)


@dataclass(frozen=True)
class MonthlyAt:
    day: int
    hour: int
    minute: int = 0

    def next_after(self, moment: datetime) -> datetime:
        candidate = moment.replace(
            day=self.day, hour=self.hour, minute=self.minute, second=0, microsecond=0
        )
        if candidate > moment:
            return candidate
        year, month = (
            (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
        )
        return candidate.replace(year=year, month=month)


MAIL_POLL = Every(minutes=5)
COMMENT_PURGE = MonthlyAt(day=1, hour=3)
DAILY_DIGEST = DailyAt(hour=6)
