"""Group feed settings (spec "Group feed settings", CONTRACT §8)."""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, WithJsonSchema, field_validator

from chalicelib.schemas.common import (
    BLANKS,
    CONTROLS,
    ApiModel,
    GroupRef,
    JsonInt,
    Record,
    SingleLine,
    rule_error,
)
from chalicelib.schemas.group_email import OptionalEmailText

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
HOURS = tuple(f"{hour}:00" for hour in range(1, 25))
URL_MAX = 2048
DEFAULT_TTL_MINUTES = 60


def _web_url(text: str) -> str:
    if not text:
        return text
    try:
        parts = urlsplit(text)
        # `@`: credentials, sent to every reader, or a host that reads as another.
        usable = parts.scheme in ("http", "https") and parts.hostname and "@" not in parts.netloc
    except ValueError:  # an IPv6 bracket left open, a character NFKC makes a delimiter
        usable = False
    if not usable or re.search(r"\s", text):
        raise ValueError("must be an absolute http or https URL")
    return text


# Empty, or http(s):// and a host, with no blank anywhere: what `_web_url` takes, as the document
# says it of the text as sent (schemas/common.py BLANKS): control characters may be anywhere and do
# not make a host, blanks may lead and trail. A host holds no character that NFKC makes a delimiter
# (urlsplit refuses U+FF0F, "／").
_NFKC_DELIMITER = (
    r"\u2047-\u2049\u2100\u2101\u2105\u2106\u2a74\ufe13\ufe16\ufe55\ufe56\ufe5f\ufe6b"
    r"\uff03\uff0f\uff1a\uff1f\uff20"
)
_C = f"[{CONTROLS}]*"
_SCHEME = _C.join(("[hH]", "[tT]", "[tT]", "[pP]", f"([sS]{_C})?:", "/", "/"))
_NOT_HOST = f"{BLANKS}/?#@\\[\\]{_NFKC_DELIMITER}"
_HOST = f"{_C}[^{_NOT_HOST}{CONTROLS}:][^{_NOT_HOST}]*"
_AROUND = f"[{BLANKS}{CONTROLS}]*"
WEB_URL_OR_EMPTY = f"^{_AROUND}({_SCHEME}{_HOST}([/?#][^{BLANKS}]*)?)?{_AROUND}$"
OptionalWebUrl = Annotated[
    str,
    Field(max_length=URL_MAX),
    AfterValidator(_web_url),
    WithJsonSchema({"type": "string", "maxLength": URL_MAX, "pattern": WEB_URL_OR_EMPTY}),
]


class NamedFlag(ApiModel):
    name: str
    selected: bool = False


class DayFlag(NamedFlag):
    """A day of `skipDays`: the API takes its name in any case, the document the canonical one."""

    name: Annotated[str, WithJsonSchema({"type": "string", "enum": list(WEEKDAYS)})]


class HourFlag(NamedFlag):
    """An hour of `skipHours` (`1:00` to `24:00`; `01:00` is taken too)."""

    name: Annotated[str, WithJsonSchema({"type": "string", "enum": list(HOURS)})]


def _canonical_day(name: str) -> str | None:
    return next((day for day in WEEKDAYS if day.lower() == name.strip().lower()), None)


def _canonical_hour(name: str) -> str | None:
    # `H:00` as the spec writes it; `01:00` is taken to mean the same hour.
    match = re.fullmatch(r"\s*(\d{1,2}):00\s*", name)
    if match and 1 <= int(match.group(1)) <= 24:
        return f"{int(match.group(1))}:00"
    return None


def _selected_names(flags: list[NamedFlag], canonical, field: str, known: str) -> list[NamedFlag]:
    seen: set[str] = set()
    out = []
    for flag in flags:
        name = canonical(flag.name)
        if name is None:
            raise rule_error(
                field, "{name} is not one of {known}", name=repr(flag.name), known=known
            )
        if name in seen:
            raise rule_error(field, "{name} appears more than once", name=repr(name))
        seen.add(name)
        out.append(NamedFlag(name=name, selected=flag.selected))
    return out


class FeedSettingsUpdate(ApiModel):
    """A PUT replaces the settings: every field the spec lists is required (blank is a value)."""

    image_url: OptionalWebUrl
    image_link_url: OptionalWebUrl
    image_alt: SingleLine = Field(max_length=500)
    # Minutes (CONTRACT §8).
    ttl: JsonInt = Field(ge=0)
    editor_email: OptionalEmailText
    webmaster_email: OptionalEmailText
    # Names left out are not selected.
    skip_days: list[DayFlag]
    skip_hours: list[HourFlag]

    @field_validator("skip_days")
    @classmethod
    def _known_days(cls, flags: list[NamedFlag]) -> list[NamedFlag]:
        return _selected_names(flags, _canonical_day, "skipDays", "Monday to Sunday")

    @field_validator("skip_hours")
    @classmethod
    def _known_hours(cls, flags: list[NamedFlag]) -> list[NamedFlag]:
        return _selected_names(flags, _canonical_hour, "skipHours", "1:00 to 24:00")


class FeedSettingsOut(Record):
    type: Literal["groupFeedSettings"] = "groupFeedSettings"
    group: GroupRef
    image_url: str
    image_link_url: str
    image_alt: str
    ttl: int
    editor_email: str
    webmaster_email: str
    skip_days: list[NamedFlag]
    skip_hours: list[NamedFlag]
