"""A fixture whose dates are written relative to a day (`datesRelativeTo`, CONTRACT §1, §4):
`load` moves every date of the file by the whole days from that day to the day of the load, so
the demo has a past and a future on any day. A file without it (what `export` writes) keeps its
dates as they are."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from pydantic import BaseModel

from chalicelib.schemas.common import OUT_OF_CALENDAR
from chalicelib.schemas.fixture import Fixture
from chalicelib.services.fixture_references import FixtureError
from chalicelib.services.fixture_rules import FixtureInvalid


def days_moved(fixture: Fixture, today: date) -> int:
    """The whole days the file's dates move when loaded on `today` (0: as written)."""
    if fixture.dates_relative_to is None:
        return 0
    return (today - fixture.dates_relative_to).days


def move_dates(fixture: Fixture, days: int) -> None:
    """Every date of `fixture` (its records' and their entries', a player's quests and log
    too) `days` later; FixtureInvalid naming the dates the move would take out of the
    calendar. The marker itself is spent: the loaded records hold absolute dates."""
    if days:
        errors: list[FixtureError] = []
        _move(fixture, timedelta(days=days), "", errors)
        if errors:
            raise FixtureInvalid(errors)
    fixture.dates_relative_to = None


def _move(value: BaseModel, by: timedelta, path: str, errors: list[FixtureError]) -> None:
    for name, info in type(value).model_fields.items():
        here = f"{path}.{info.alias or name}" if path else (info.alias or name)
        field = getattr(value, name)
        if isinstance(field, datetime):
            try:
                setattr(value, name, field + by)
            except OverflowError:
                moved = f"moved {by.days} day(s) by datesRelativeTo, it {OUT_OF_CALENDAR}"
                errors.append(FixtureError(here, moved))
        elif isinstance(field, BaseModel):
            _move(field, by, here, errors)
        elif isinstance(field, list):
            for index, item in enumerate(field):
                if isinstance(item, BaseModel):
                    _move(item, by, f"{here}[{index}]", errors)
