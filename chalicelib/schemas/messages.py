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

# Every other error of Pydantic's, in the form's words: each reads after the field's name
# ("Time to live (minutes): must be at least 0"). `{x_s}` is "s" unless `{x}` is 1. Errors no
# JSON body can cause (a Python object expected, a frozen model) still get words, never Pydantic's
# (tests/api/test_envelope.py walks every type Pydantic has).
NOT_TAKEN = "is not a value this field takes"
NUMBER = "must be a number"
WHOLE = "must be a whole number"
TEXT = "must be text"
LIST = "must be a list"
OBJECT = "must be a JSON object"
TRUE_OR_FALSE = "must be true or false"
A_URL = "must be a web address (http:// or https:// and a host)"
AN_ID = "must be an id (a GUID such as 123e4567-e89b-12d3-a456-426614174000)"
WORDS: dict[str, str] = {
    "missing": "is required",
    "extra_forbidden": "is not a field this takes",
    "json_invalid": "is not valid JSON ({error})",
    "json_type": "must be JSON text",
    "greater_than": "must be more than {gt}",
    "greater_than_equal": "must be at least {ge}",
    "less_than": "must be less than {lt}",
    "less_than_equal": "must be at most {le}",
    "multiple_of": "must be a multiple of {multiple_of}",
    "finite_number": "must be a finite number",
    "too_short": "must hold at least {min_length} item{min_length_s}",
    "too_long": "must hold at most {max_length} item{max_length_s}",
    "string_type": TEXT,
    "string_unicode": TEXT,
    "string_too_short": "must be at least {min_length} character{min_length_s}",
    "string_too_long": "must be at most {max_length} character{max_length_s}",
    "string_not_ascii": "may hold only ASCII characters",
    "enum": "must be one of {expected}",
    "literal_error": "must be one of {expected}",
    "bool_type": TRUE_OR_FALSE,
    "bool_parsing": TRUE_OR_FALSE,
    "int_type": WHOLE,
    "int_parsing": WHOLE,
    "int_from_float": WHOLE,
    "int_parsing_size": "is too large a number",
    "float_type": NUMBER,
    "float_parsing": NUMBER,
    "decimal_type": NUMBER,
    "decimal_parsing": NUMBER,
    "decimal_max_digits": "must have at most {max_digits} digit{max_digits_s}",
    "decimal_max_places": "must have at most {decimal_places} decimal place{decimal_places_s}",
    "decimal_whole_digits": "must have at most {whole_digits} digit{whole_digits_s} before the point",
    "fraction_type": NUMBER,
    "fraction_parsing": NUMBER,
    "complex_type": NUMBER,
    "complex_str_parsing": NUMBER,
    "list_type": LIST,
    "tuple_type": LIST,
    "set_type": LIST,
    "deque_type": LIST,
    "frozen_set_type": LIST,
    "iterable_type": LIST,
    "iteration_error": LIST,
    "set_item_not_hashable": "must hold only texts or numbers",
    "dict_type": OBJECT,
    "frozen_dict_type": OBJECT,
    "ordered_dict_type": OBJECT,
    "counter_type": OBJECT,
    "mapping_type": OBJECT,
    "model_type": OBJECT,
    "model_attributes_type": OBJECT,
    "dataclass_type": OBJECT,
    "dataclass_exact_type": OBJECT,
    "named_tuple_type": OBJECT,
    "invalid_key": "must have text keys",
    "none_required": "must be null",
    "bytes_type": TEXT,
    "bytes_too_short": "must be at least {min_length} byte{min_length_s}",
    "bytes_too_long": "must be at most {max_length} byte{max_length_s}",
    "bytes_invalid_encoding": TEXT,
    "date_from_datetime_inexact": "must be a date without a time of day",
    "date_past": "must be a day in the past",
    "date_future": "must be a day in the future",
    "datetime_past": "must be in the past",
    "datetime_future": "must be in the future",
    "datetime_object_invalid": f"is not {DATE_EXAMPLE}",
    "time_type": "must be a time of day such as 09:00:00",
    "time_parsing": "must be a time of day such as 09:00:00",
    "timezone_naive": "must have no time zone",
    "timezone_aware": "must say its time zone (end it with Z for UTC)",
    "timezone_offset": "must be in another time zone (end it with Z for UTC)",
    "time_delta_type": "must be a duration such as PT1H",
    "time_delta_parsing": "must be a duration such as PT1H",
    "url_type": A_URL,
    "url_parsing": A_URL,
    "url_syntax_violation": A_URL,
    "url_too_long": "must be at most {max_length} character{max_length_s}",
    "url_scheme": "must start with {expected_schemes}",
    "uuid_type": AN_ID,
    "uuid_parsing": AN_ID,
    "uuid_version": AN_ID,
    "union_tag_invalid": "must be one of {expected_tags}",
    "union_tag_not_found": "must say which kind it is ({discriminator})",
    "recursion_loop": "is nested too deeply",
    "recursion_depth_exceeded": "is nested too deeply",
    "frozen_field": "cannot be changed",
    "frozen_instance": "cannot be changed",
}
# What only Python code (never a request) can get wrong: no field a person fills in.
CODE_ONLY = frozenset(
    {
        "no_such_attribute",
        "needs_python_object",
        "get_attribute_error",
        "default_factory_not_called",
        "missing_sentinel_error",
        "ellipsis_error",
        "is_instance_of",
        "is_subclass_of",
        "callable_type",
        "arguments_type",
        "missing_argument",
        "unexpected_keyword_argument",
        "missing_keyword_only_argument",
        "unexpected_positional_argument",
        "missing_positional_only_argument",
        "multiple_argument_values",
    }
)


def people_message(error: Any) -> str:
    """The sentence for one of Pydantic's error details (`ValidationError.errors()` items)."""
    kind = str(error.get("type") or "")
    ctx = error.get("ctx") or {}
    if kind in DATE_ERRORS:
        return _date_message(error.get("input"), str(ctx.get("error") or ""))
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern") or "")
        return PATTERN_WORDS.get(pattern, "is not in the form this field takes")
    if kind in WORDS:
        return _worded(WORDS[kind], ctx)
    if kind in CODE_ONLY:
        return NOT_TAKEN
    message = str(error.get("msg") or NOT_TAKEN)
    # "Value error, must be ..." → "must be ...": the prefix says nothing to an administrator.
    # Our own rules (value_error, agora_field and the like) are written in the form's words.
    for prefix in PREFIXES:
        message = message.removeprefix(prefix)
    return message


def _worded(template: str, ctx: dict[str, Any]) -> str:
    values = {str(k): v for k, v in ctx.items()}
    for name, value in list(values.items()):
        values[f"{name}_s"] = "" if value == 1 else "s"
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError):
        # A context Pydantic did not give: the words without the number.
        return template.split(" {", 1)[0].split("{", 1)[0].rstrip(" (")


def _date_message(sent: Any, reason: str) -> str:
    if isinstance(sent, str) and (YEAR_OUT_OF_RANGE.match(sent) or "out of range" in reason):
        return OUT_OF_CALENDAR
    if reason.startswith(PLAIN_DATE_REASONS):
        return f"is not a valid date: {reason} (send {DATE_EXAMPLE})"
    return f"is not {DATE_EXAMPLE}"
