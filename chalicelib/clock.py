"""The time, in one place: every rule and job asks this module for "now" and for the API's format.

Services take a clock callable (so tests pass a fixed one); this is the real one they default to.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """ISO 8601 UTC ending in `Z`, as every date in the API."""
    text = moment.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")
