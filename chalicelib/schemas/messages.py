"""Pydantic's errors in people's words (issue 51): an administrator who typed year 10000 reads
that the date is out of range, not "invalid date separator, expected `-`", and a fixture's bad
email address is not answered with a regular expression.

`people_message` is the one place a validation error becomes a sentence: the API's envelope and
the fixture loader both call it."""

from __future__ import annotations

import re
from typing import Any

from chalicelib.schemas.common import OUT_OF_CALENDAR

DATE_ERRORS = frozenset(
    {
        "datetime_from_date_parsing",
        "datetime_parsing",
        "date_from_datetime_parsing",
        "date_parsing",
        "datetime_type",
        "date_type",
    }
)
DATE_EXAMPLE = "a date and time such as 2026-04-01T09:00:00Z"
# Pydantic's reasons that already say what is wrong in plain words.
PLAIN_DATE_REASONS = ("month value is outside", "day value is outside", "hour value is outside")
# A year of five digits or more, a negative one, or year 0: outside what a date can hold.
YEAR_OUT_OF_RANGE = re.compile(r"^\s*(?:\+?\d{5,}|-\d|\+?0000-)")

# The patterns of the models' fields, as the words a person reads.
PATTERN_WORDS = {
    r"^[^@\s]+@[^@\s]+$": "is not an email address (name@example.org)",
    r"^[a-z0-9][a-z0-9-]*$": (
        "may hold only lowercase letters, digits and hyphens, and starts with a letter or digit"
    ),
    r"^\$argon2(id|i|d)\$": "is not an argon2 password hash (it starts with $argon2id$)",
}
PREFIXES = ("Value error, ", "Assertion failed, ")


def people_message(error: Any) -> str:
    """The sentence for one of Pydantic's error details (`ValidationError.errors()` items)."""
    kind = str(error.get("type") or "")
    ctx = error.get("ctx") or {}
    if kind in DATE_ERRORS:
        return _date_message(error.get("input"), str(ctx.get("error") or ""))
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern") or "")
        return PATTERN_WORDS.get(pattern, "is not in the form this field takes")
    message = str(error.get("msg") or "is not valid")
    # "Value error, must be ..." → "must be ...": the prefix says nothing to an administrator.
    for prefix in PREFIXES:
        message = message.removeprefix(prefix)
    return message


def _date_message(sent: Any, reason: str) -> str:
    if isinstance(sent, str) and (YEAR_OUT_OF_RANGE.match(sent) or "out of range" in reason):
        return OUT_OF_CALENDAR
    if reason.startswith(PLAIN_DATE_REASONS):
        return f"is not a valid date: {reason} (send {DATE_EXAMPLE})"
    return f"is not {DATE_EXAMPLE}"
