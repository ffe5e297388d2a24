"""Pieces every resource's schemas share: the base models, reference objects, dates, ids, paging."""

from __future__ import annotations

import re
import types
import typing
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from chalicelib.sanitize import sent_length, without_bidi

# DynamoDB items hold at most 400 KB; a text field is capped well below it (CONTRACT §6).
MAX_TEXT_BYTES = 300_000


OUT_OF_CALENDAR = (
    "is outside the dates Agora can store: from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z"
)


def _to_utc(moment: datetime) -> datetime:
    # A date without an offset is taken as UTC (the spec's dates are UTC); others are converted.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        # 0001-01-01T00:00:00+01:00 is in year 0 once in UTC, 9999-12-31T23:00:00-02:00 in 10000.
        raise ValueError(OUT_OF_CALENDAR) from None


def _utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


UtcDateTime = Annotated[
    datetime, AfterValidator(_to_utc), PlainSerializer(_utc_text, return_type=str, when_used="json")
]


def _guid(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, str):
        try:
            return str(uuid.UUID(value.strip()))
        except ValueError:
            raise ValueError(
                "must be a GUID such as 3f2504e0-4f89-11d3-9a0c-0305e82c3301"
            ) from None
    raise ValueError("must be a GUID string")


def rule_error(field: str, message: str, **context: Any) -> PydanticCustomError:
    """A rule across fields, reported on the field it concerns (envelope.py reads `field` from the
    error's context); `message` may name other context values (`{name!r}`)."""
    return PydanticCustomError("agora_field", message, {"field": field, **context})


def parse_guid(text: str) -> str | None:
    """Canonical GUID text of `text`, or None when it is not a GUID."""
    try:
        return str(uuid.UUID(text.strip()))
    except (ValueError, AttributeError):
        return None


# Lowercase canonical GUID text, as ids are stored.
Guid = Annotated[str, BeforeValidator(_guid), WithJsonSchema({"type": "string", "format": "uuid"})]


def email_address(text: str) -> str:
    """`text` as a normalised email address, checked for syntax only (CONTRACT §6).

    No DNS lookup, and special-use and internal domains (`.test`, `.local`, `.internal`,
    `.example`, a single-label intranet host) are valid: intranet communities use them, and
    whether mail reaches an address is not the API's business. email-validator refuses the
    special-use names outright, so their last label is checked as an ordinary one.
    """
    from email_validator import SPECIAL_USE_DOMAIN_NAMES, EmailNotValidError, validate_email

    local, at, domain = text.rpartition("@")
    head, dot, last = domain.rpartition(".")
    special = bool(at) and last.lower() in SPECIAL_USE_DOMAIN_NAMES
    probe = f"{local}@{head}{dot}example" if special else text
    try:
        checked = validate_email(
            probe, check_deliverability=False, globally_deliverable=False, test_environment=True
        )
    except EmailNotValidError as error:
        raise ValueError(f"must be an email address ({error})") from None
    if special:
        return f"{checked.local_part}@{domain.lower()}"
    return checked.normalized


def _fits_item(text: str) -> str:
    if len(text.encode("utf-8")) > MAX_TEXT_BYTES:
        raise ValueError(f"is too long: at most {MAX_TEXT_BYTES} bytes")
    return text


LongText = Annotated[str, AfterValidator(_fits_item)]

# Line breaks a single-line field may not hold (the router has already removed the control
# characters among them, CR and U+0085 included).
_LINE_BREAKS = re.compile("[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def _single_line(text: str) -> str:
    # A name, title, address or subject may end up in a mail header, where a line break starts
    # a new header (CONTRACT §8).
    if _LINE_BREAKS.search(text):
        raise ValueError("must be one line: line breaks are not allowed")
    shown = without_bidi(text)  # CONTRACT §8: a title reads as it says
    if text.strip() and not shown.strip():
        raise ValueError("must hold more than direction controls")
    return shown


# The document's patterns read alike in ECMA-262 and Python's re (their `\s` differ: U+FEFF,
# U+001C) and say what happens before a check: the router removes control characters (they may be
# anywhere), the model trims blanks (they may lead and trail, line breaks among them).
# Python's whitespace that the router leaves, which trimming removes.
BLANKS = r"\t\n \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# What the router removes (sanitize.without_controls).
CONTROLS = r"\x00-\x08\x0b-\x1f\x7f-\x9f"
_BIDI = r"\u202a-\u202e\u2066-\u2069"  # direction controls, which a single line loses
TRIMMED = f"[{BLANKS}{CONTROLS}]*"  # what the router and trimming remove around a text
_NOT_A_BREAK = r"[^\n\u2028\u2029]"  # the line breaks `_LINE_BREAKS` refuses, the router leaves
# A character a single line shows: neither blank, nor removed by the router or `without_bidi`.
_SHOWN = f"[^{BLANKS}{CONTROLS}{_BIDI}]"
TEXT_END = r"(?![\s\S])"  # the end, as both read it (Python's `$` also matches before a last \n)
# A single-line text: trimmed, no line break, and empty or showing a character (one of direction
# controls alone is refused).
ONE_LINE = f"^{TRIMMED}({_NOT_A_BREAK}*{_SHOWN}{_NOT_A_BREAK}*)?{TRIMMED}{TEXT_END}"


class _DocumentedOneLine:
    """Has the document state the single line `_single_line` checks: a client, and a fuzzer
    reading the document, learn it from the schema instead of from a 400."""

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema: dict[str, Any] = handler(core_schema)
        schema.setdefault("pattern", ONE_LINE)
        return schema


SingleLine = Annotated[str, AfterValidator(_single_line), _DocumentedOneLine]


# At least one character that trimming and control-character removal leave (CONTRACT §6): what a
# text with a minimum length must hold, as the document says it (ECMA-262 and Python read it alike).
VISIBLE_CHARACTER = f"[^{BLANKS}{CONTROLS}]"
# A required single line: trimmed, no line break, and a character it shows.
ONE_VISIBLE_LINE = f"^{TRIMMED}{_NOT_A_BREAK}*{_SHOWN}{_NOT_A_BREAK}*{TRIMMED}{TEXT_END}"


def document_trimming(schema: dict[str, Any], model: Any = None) -> None:
    """Have the document say what validation does to a text before its length is checked: a
    required text of blanks or control characters alone (`"\\f"`, `"\\u0005"`) is refused, so
    its schema asks for a visible character."""
    for prop in schema.get("properties", {}).values():
        for variant in (prop, *prop.get("anyOf", [])):
            if (
                variant.get("type") == "string"
                and variant.get("minLength", 0) >= 1
                and variant.get("pattern") in (None, ONE_LINE)
                and variant.get("format") in (None, "password")
            ):
                one_line = variant.get("pattern") == ONE_LINE
                variant["pattern"] = ONE_VISIBLE_LINE if one_line else VISIBLE_CHARACTER


def _max_length(annotation: Any, metadata: list[Any]) -> int | None:
    """The maximum length a field's text may have, wherever its type declares it."""

    found = [getattr(m, "max_length", None) for m in metadata]
    for argument in typing.get_args(annotation):
        found += [getattr(m, "max_length", None) for m in getattr(argument, "__metadata__", ())]
    limits = [limit for limit in found if isinstance(limit, int)]
    return min(limits) if limits else None


# Validation context of a JSON document (a request body, a fixture file): its booleans and
# integers must be JSON's own (CONTRACT §6), where a query string's are text.
JSON_TYPES = {"json_types": True}


class _NotJsonType:
    """Stands for a value of the wrong JSON type, so that the field's own validation refuses it
    (with every other error of the record) instead of reading `"yes"` as true."""

    __slots__ = ()


NOT_JSON_TYPE = _NotJsonType()


def _json_kind(annotation: Any) -> type | None:
    """`bool` or `int` when a field holds a JSON boolean or integer (or null), else None."""

    options = (
        typing.get_args(annotation)
        if typing.get_origin(annotation) in (typing.Union, types.UnionType)
        else (annotation,)
    )
    kinds: set[type] = set()
    for option in options:
        if option is type(None):
            continue
        if typing.get_origin(option) is Annotated:
            option = typing.get_args(option)[0]
        if option is bool:
            kinds.add(bool)
        elif isinstance(option, type) and issubclass(option, int):
            kinds.add(int)  # an integer enumeration too (a profile field's typeId)
        else:
            return None
    return kinds.pop() if len(kinds) == 1 else None


def _is_json(kind: type, value: Any) -> bool:
    if value is None:
        return True
    if kind is bool:
        return isinstance(value, bool)
    # JSON Schema's integer: 1 and 1.0, never true or "1".
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )


class ApiModel(BaseModel):
    """Base of every request and response model: camelCase JSON, trimmed strings."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=True,
        extra="ignore",
        # Build each model's validator when it is first used, not at import: a Lambda cold
        # start pays only for the models of the route it serves.
        defer_build=True,
        json_schema_extra=document_trimming,
    )

    @model_validator(mode="before")
    @classmethod
    def _json_types(cls, data: Any, info: ValidationInfo) -> Any:
        """In a JSON document, a boolean is `true`/`false` and an integer a number, as the
        document declares them (CONTRACT §6): `"allDay": "yes"` is refused, not read as true."""
        if not isinstance(data, dict) or not (info.context or {}).get("json_types"):
            return data
        wrong = {}
        for name, field in cls.model_fields.items():
            key = field.alias or name
            present = key if key in data else name if name in data else None
            if present is None:
                continue
            kind = _json_kind(field.annotation)
            if kind is not None and not _is_json(kind, data[present]):
                wrong[present] = NOT_JSON_TYPE
        return {**data, **wrong} if wrong else data

    @model_validator(mode="before")
    @classmethod
    def _length_as_sent(cls, data: Any) -> Any:
        """A text longer than its maximum is refused as sent, not cut by trimming to fit: the
        document's maxLength counts what the client sends (a 101-character name with a blank
        at the end is a 400, never stored as 100)."""
        if not isinstance(data, dict):
            return data
        for name, field in cls.model_fields.items():
            key = field.alias or name
            value = data.get(key, data.get(name))
            if not isinstance(value, str):
                continue
            limit = _max_length(field.annotation, field.metadata)
            # As sent: the router's removal of control characters does not make a text fit.
            if limit is not None and sent_length(value) > limit:
                raise PydanticCustomError(
                    "string_too_long",
                    "String should have at most {max_length} characters",
                    # relative: the key within this model, wherever the model is nested.
                    {"field": key, "max_length": limit, "relative": True},
                )
        return data


class AccessWarning(ApiModel):
    key: str
    code: str
    message: str


class Record(ApiModel):
    """A record returned in `object`: every one carries `accessWarnings` (spec rule 3)."""

    access_warnings: list[AccessWarning] = Field(default_factory=list)


class GroupRef(ApiModel):
    id: str
    name: str
    slug: str
    thumb_url: str
    url: str


class UserRef(ApiModel):
    id: str
    alias: str
    extended_alias: str
    slug: str
    avatar_url: str
    url: str


class PostRef(ApiModel):
    id: str
    title: str
    slug: str
    url: str


class EmailAlert(ApiModel):
    id: int
    name: str
    description: str


class Result(Record):
    """Result of a bulk operation (purge all, delete unapproved)."""

    type: str = "result"
    count: int


def _json_integer(value: Any) -> Any:
    """A JSON integer as JSON Schema's `integer` reads it: `1` and `1.0`, never `false` or "1"."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise PydanticCustomError("int_type", "Input should be a valid integer")
        return int(value)
    return value


# What the OpenAPI document calls `integer`, accepted exactly so (no booleans, no strings).
JsonInt = Annotated[int, BeforeValidator(_json_integer)]


class PageQuery(ApiModel):
    """`offset`, `pageSize`, `filter` (CONTRACT §7). `offset` is interpreted by each list (the
    subclasses: a model's fields follow its bases from the last one, so `offset` comes first)."""

    page_size: int = Field(default=15, ge=1, le=100)
    filter: str | None = None

    @property
    def search(self) -> str | None:
        text = (self.filter or "").strip().lower()
        return text or None


class _IntOffset(ApiModel):  # absent or empty: from the start (CONTRACT §7), as documented
    offset: Annotated[
        int | None,
        BeforeValidator(lambda v: None if v in ("", None) else v),
        WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string", "enum": [""]}]}),
    ] = None


class IntPageQuery(PageQuery, _IntOffset):
    pass


class _GuidOffset(ApiModel):
    # Absent, `0` or empty: from the start (CONTRACT §7), and the document says so.
    offset: Annotated[
        Guid | None,
        BeforeValidator(lambda v: None if v in ("", "0", None) else v),
        WithJsonSchema(
            {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "string", "enum": ["0", ""]}]}
        ),
    ] = None


class GuidPageQuery(PageQuery, _GuidOffset):
    pass
