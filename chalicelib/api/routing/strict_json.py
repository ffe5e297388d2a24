"""Strict JSON (CONTRACT §6): what a request body may be before any model looks at it.

No NaN or Infinity (nor a number so large it becomes infinity), at most 64 levels of arrays and
objects, no lone surrogate anywhere (keys included); C0 control characters other than tab and
newline are removed from every string here, once for every route (they are never stored); such a
string keeps its length as sent, which a maxLength counts.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.errors import BadRequest, ValidationFailed, has_surrogate, safe_text
from chalicelib.sanitize import SentText, without_controls

# Deepest nesting of arrays and objects a body may have (CONTRACT §6).
MAX_BODY_DEPTH = 64

LONE_SURROGATE = (
    "contains a lone surrogate (an escape in \\ud800-\\udfff without its pair), "
    "which is not a character"
)


def parse_json(raw: bytes | str) -> Any:
    """`raw` as JSON, or the BadRequest (400) or ValidationFailed (a lone surrogate) it is."""
    try:
        data = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        raise too_deep() from None
    except json.JSONDecodeError as error:
        # Where it went wrong, as an editor counts: line and column from 1.
        raise BadRequest(
            f"The request body is not valid JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno}."
        ) from None
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("The request body is not valid JSON.") from None
    _check_parsed(data)
    return data


def too_deep() -> BadRequest:
    return BadRequest(f"The request body nests arrays and objects deeper than {MAX_BODY_DEPTH}.")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        # 1e999 parses as infinity, which JSON cannot carry back.
        raise ValueError("number out of range")
    return number


def _check_parsed(data: Any) -> None:
    """Depth and text of a parsed body, without recursion (a body may be nested on purpose)."""
    if isinstance(data, str) and has_surrogate(data):
        _refuse_surrogate((), data)
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(data, 0, ())]
    while stack:
        value, depth, loc = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if depth >= MAX_BODY_DEPTH:
            raise too_deep()
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        for key, item in items:
            if isinstance(key, str) and has_surrogate(key):
                _refuse_surrogate((*loc, key), key)
            if isinstance(item, str):
                if has_surrogate(item):
                    _refuse_surrogate((*loc, key), item)
                cleaned = without_controls(item)
                if cleaned is not item:
                    value[key] = SentText(cleaned, len(item))
            else:
                stack.append((item, depth + 1, (*loc, key)))


def _refuse_surrogate(loc: tuple[Any, ...], value: str) -> None:
    key = ".".join(safe_text(str(part)) for part in loc) or "body"
    raise ValidationFailed.one(key, value, LONE_SURROGATE)
