"""The time, in one place: every rule and job asks this module for "now" and for the API's format.

Services take a clock callable (so tests pass a fixed one); this is the real one they default to.
`fixed_at` holds it at one moment for a block, for what has no clock of its own to pass: the
whole API answering as it did at a recorded moment (tests/upgrade replays a previous release's
answers at the moment they were taken).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

_fixed: datetime | None = None


def utc_now() -> datetime:
    return _fixed if _fixed is not None else datetime.now(UTC)


@contextmanager
def fixed_at(moment: datetime) -> Iterator[None]:
    """`utc_now` answers `moment` (an aware datetime) until the block ends."""
    global _fixed
    if moment.tzinfo is None:
        raise ValueError("fixed_at needs an aware datetime")
    before, _fixed = _fixed, moment.astimezone(UTC)
    try:
        yield
    finally:
        _fixed = before


def iso(moment: datetime) -> str:
    """ISO 8601 UTC ending in `Z`, as every date in the API."""
    text = moment.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")
