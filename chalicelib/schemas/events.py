"""Events and the calendar (spec "Event", "Events"; CONTRACT §7, §8)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator
from pydantic import WithJsonSchema as Documented

from chalicelib.schemas.common import (
    ApiModel,
    GroupRef,
    Guid,
    IntPageQuery,
    LongText,
    Record,
    SingleLine,
    UserRef,
    UtcDateTime,
    document_trimming,
    rule_error,
)

# An event touches one calendar item per month it spans (store/events.py); all of them are
# rewritten in one transaction (at most 100 actions), so an event may not last for ever.
MAX_EVENT_DURATION = timedelta(days=731)
MAX_SHORT_TEXT = 500


def _none_if_blank(value: Any) -> Any:
    # A query string cannot send null: `endDate=` means "no date".
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _empty_if_none(value: Any) -> Any:
    return "" if value is None else value


def _iso_text(value: Any) -> Any:
    # Pydantic would also take a number as Unix time; the spec's dates are ISO 8601 strings.
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or value.strip().replace(".", "", 1).lstrip("-").isdigit():
        raise ValueError("must be an ISO 8601 date such as 2026-04-01T09:00:00Z")
    return value


IsoDate = Annotated[UtcDateTime, BeforeValidator(_iso_text)]
# A date, or blank (Python's whitespace alone, read alike by ECMA-262) for none, as the document says.
_BLANK = r"^[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*(?![\s\S])"
_DATE_OR_BLANK = [{"type": "string", "format": "date-time"}, {"type": "string", "pattern": _BLANK}]
_NO_DATE = Documented({"anyOf": [*_DATE_OR_BLANK, {"type": "null"}]})
OptionalDate = Annotated[IsoDate | None, BeforeValidator(_none_if_blank), _NO_DATE]
OptionalBool = Annotated[bool | None, BeforeValidator(_none_if_blank)]
OptionalText = Annotated[
    SingleLine, BeforeValidator(_empty_if_none), Field(max_length=MAX_SHORT_TEXT)
]


def end_date_problem(start: datetime, end: datetime | None, all_day: bool) -> str | None:
    """Why an event's endDate is not acceptable (CONTRACT §8), or None."""
    if end is None:
        return None if all_day else "is required unless the event lasts all day (allDay true)"
    if end < start:
        return "must not be before startDate"
    if end - start > MAX_EVENT_DURATION:
        return f"must be at most {MAX_EVENT_DURATION.days} days after startDate"
    return None


def _check_end_date(end: datetime | None, info: ValidationInfo) -> datetime | None:
    start = info.data.get("start_date")
    if start is None:  # startDate is missing or wrong: that error is the one to report
        return end
    problem = end_date_problem(start, end, bool(info.data.get("all_day", False)))
    if problem:
        raise rule_error("endDate", problem)
    return end


# endDate is required unless allDay is true (CONTRACT §8), said in the document as validation
# checks it, so that a client generated from it builds only requests the API accepts.
END_DATE_RULE = {
    "anyOf": [
        {"required": ["allDay"], "properties": {"allDay": {"const": True}}},
        {"required": ["endDate"], "properties": {"endDate": {"type": "string"}}},
    ]
}


def _document_end_date_rule(schema: dict[str, Any], model: Any = None) -> None:
    document_trimming(schema)
    schema.update(END_DATE_RULE)


class EventFields(ApiModel):
    """What an event says of itself (domain/events.py `EventDetails`, field by field), as the API
    takes it: the one declaration of each field's JSON name, default and checks. A fixture's
    events take these fields too (schemas/fixture.py `FixtureEvent`), and what a write audits is
    named from them (services/events.py): a new field is declared here and in the record, and
    tests/services/test_event_fields.py holds the rest to them. Field order matters: endDate is
    checked against those before."""

    title: SingleLine = Field(min_length=1, max_length=MAX_SHORT_TEXT)
    all_day: bool = False
    start_date: IsoDate
    end_date: OptionalDate = Field(default=None, validate_default=True)
    content: Annotated[LongText, BeforeValidator(_empty_if_none)] = ""
    organizer: OptionalText = ""
    location: OptionalText = ""


class EventWrite(EventFields):
    """Body of create and update."""

    model_config = ConfigDict(
        **{**ApiModel.model_config, "json_schema_extra": _document_end_date_rule}
    )

    _end_date = field_validator("end_date")(_check_end_date)


# `groupId` is the first field of a body (a model's fields follow its bases from the last one), so
# it is checked and documented first; a create must name it, an update may.
class _NamesGroup(ApiModel):
    group_id: Guid


class _MayNameGroup(ApiModel):
    # A replacement of the event; without groupId it stays in its group.
    group_id: Guid | None = None


class EventCreate(EventWrite, _NamesGroup):
    # The last base's configuration would win: the body's own is EventWrite's.
    model_config = EventWrite.model_config


class EventUpdate(EventWrite, _MayNameGroup):
    model_config = EventWrite.model_config


class EventOut(Record):
    id: int
    type: Literal["event"] = "event"
    group: GroupRef
    created_on: UtcDateTime
    author: UserRef
    editor: UserRef
    all_day: bool
    start_date: UtcDateTime
    end_date: UtcDateTime | None
    organizer: str
    location: str
    title: str
    content: str
    url: str


class EventPage(Record):
    offset: int | None
    events: list[EventOut]


class EventListQuery(IntPageQuery):
    """Upcoming and expired lists: events after (before) `timeStamp`, which defaults to now."""

    time_stamp: OptionalDate = None


def _check_period_end(end: datetime, info: ValidationInfo) -> datetime:
    start = info.data.get("calendar_start_date")
    if start is not None and end <= start:
        raise rule_error("calendarEndDate", "must be after calendarStartDate")
    return end


class CalendarQuery(ApiModel):
    """The period of a calendar view: events overlapping [start, end) are listed."""

    calendar_start_date: IsoDate
    calendar_end_date: IsoDate

    _period_end = field_validator("calendar_end_date")(_check_period_end)


class CalendarMoveFields(ApiModel):
    """What a calendar plugin sends when an event is dragged: in the query string or the body.

    Every field is optional here; the fields of both places are merged and then validated as a
    `CalendarMove`.
    """

    start_date: OptionalDate = None
    end_date: OptionalDate = None
    all_day: OptionalBool = None
    calendar_start_date: OptionalDate = None
    calendar_end_date: OptionalDate = None


class CalendarMove(ApiModel):
    """The merged fields of a calendar update (the body wins over the query string)."""

    start_date: IsoDate
    # Omitted: the event keeps its duration. Sent empty or null: no end (all-day events only).
    end_date: OptionalDate = None
    # Omitted: the event keeps its kind.
    all_day: OptionalBool = None
    calendar_start_date: IsoDate
    calendar_end_date: IsoDate

    _period_end = field_validator("calendar_end_date")(_check_period_end)

    @field_validator("end_date")
    @classmethod
    def _end_after_start(cls, end: datetime | None, info: ValidationInfo) -> datetime | None:
        """An end sent is checked against the start sent here, with the other fields (an end
        before the start came back only once the rest was right). Whether an event may have no
        end depends on its stored kind: the service decides that."""
        start = info.data.get("start_date")
        if end is None or start is None:
            return end
        problem = end_date_problem(start, end, all_day=True)
        if problem:
            raise rule_error("endDate", problem)
        return end
