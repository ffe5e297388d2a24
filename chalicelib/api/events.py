"""Events (spec "Events"): CRUD, upcoming and expired lists, calendar list and calendar update.

Reads need the privilege to enter the event's group; writes need a moderator of it (CONTRACT §5).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalice import Blueprint
from pydantic import model_validator

from chalicelib import deps
from chalicelib.api.routing import Call, Routes, route, validate
from chalicelib.auth import Need
from chalicelib.errors import FieldError, ValidationFailed
from chalicelib.schemas.events import (
    CalendarMove,
    CalendarMoveFields,
    CalendarQuery,
    EventCreate,
    EventListQuery,
    EventOut,
    EventPage,
    EventUpdate,
)
from chalicelib.schemas.paths import EventPath, GroupPath

events_api = Blueprint(__name__)
PREFIX = "/api/v1/en_US/event"
entered = Routes(events_api, Need.ENTER, "groupId")


@route(events_api, "GET", f"{PREFIX}/{{eventId}}", response=EventOut)
def get_event(call: Call[EventPath, None, None]) -> EventOut:
    """An event."""
    return deps.event_service().get(call.path.eventId, call.signed_in)


@route(events_api, "POST", PREFIX, need=Need.MODERATOR, group="body.groupId", response=EventOut)
def create_event(call: Call[None, None, EventCreate]) -> EventOut:
    """Create an event in the group named by `groupId`."""
    return deps.event_service().create(call.body, call.signed_in)


@route(events_api, "PUT", f"{PREFIX}/{{eventId}}", response=EventOut)
def update_event(call: Call[EventPath, None, EventUpdate]) -> EventOut:
    """Replace an event's fields."""
    service = deps.event_service()
    found = service.find(call.path.eventId, call.signed_in, Need.MODERATOR)
    return service.update(found, call.body, call.signed_in)


@route(events_api, "DELETE", f"{PREFIX}/{{eventId}}", response=EventOut)
def delete_event(call: Call[EventPath, None, None]) -> EventOut:
    """Delete an event; the answer is the event as it was."""
    return deps.event_service().delete(call.path.eventId, call.signed_in)


@entered("GET", f"{PREFIX}/list/upcoming/{{groupId}}", EventPage)
def list_upcoming_events(call: Call[GroupPath, EventListQuery, None]) -> EventPage:
    """Events starting after `timeStamp` (default now), soonest first."""
    return deps.event_service().upcoming(call.group, call.query)


@entered("GET", f"{PREFIX}/list/expired/{{groupId}}", EventPage)
def list_expired_events(call: Call[GroupPath, EventListQuery, None]) -> EventPage:
    """Events starting before `timeStamp` (default now), latest first."""
    return deps.event_service().expired(call.group, call.query)


@entered("GET", f"{PREFIX}/list/calendar/{{groupId}}", EventPage)
def list_calendar_events(call: Call[GroupPath, CalendarQuery, None]) -> EventPage:
    """Every event overlapping the period, start date ascending."""
    return deps.event_service().calendar(call.group, call.query)


class CalendarMoveQuery(CalendarMoveFields):
    """The calendar move's query parameters as the route declares (and documents) them, read
    by the handler only once the caller is known to be a moderator of the event's group: the
    group comes from the event, so the router cannot check the privilege first, and a caller
    without it gets 403 before anything they sent is validated (CONTRACT §6)."""

    @model_validator(mode="wrap")
    @classmethod
    def _after_the_privilege(cls, value: Any, handler: Any) -> Any:
        return cls.model_construct()


# The dates a calendar move cannot do without (`CalendarMove`); its endDate sent null or empty
# means an event with no end, and stays as sent.
MOVE_NEEDS = frozenset({"startDate", "calendarStartDate", "calendarEndDate"})


def _left_out(key: str, value: Any) -> bool:
    return key in MOVE_NEEDS and (value is None or (isinstance(value, str) and not value.strip()))


@route(events_api, "PUT", f"{PREFIX}/{{eventId}}/calendar", body_required=False, response=EventPage)
def move_event(call: Call[EventPath, CalendarMoveQuery, CalendarMoveFields]) -> EventPage:
    """Move an event (new dates) and answer the calendar of the period.

    The spec lists the fields as parameters without saying where they travel: calendar plugins send
    them in the query string, API clients in a JSON body. Both are read; the body wins.
    """
    service = deps.event_service()
    found = service.find(call.path.eventId, call.signed_in, Need.MODERATOR)
    query = dict(call.request.query_params or {})
    body = call.raw_body or {}
    sent: dict[str, Any] = {**query, **body}
    call.submitted = sent
    # A date the move needs, sent null or blank (which the fields of either place allow, the other
    # place may hold it), is not sent there: the query's then counts, and with neither it is
    # missing ("is required", not "must be an ISO 8601 date" for a null the document allows).
    merged = {
        **{key: value for key, value in query.items() if not _left_out(key, value)},
        **{key: value for key, value in body.items() if not _left_out(key, value)},
    }
    # One 400 names every field that is wrong or missing, wherever it was sent: the query
    # string's values, the body's own types, then what the merged fields lack.
    errors: list[FieldError] = []
    checks: list[Callable[[], object]] = [
        lambda: validate(CalendarMoveFields, query, "query"),
        lambda: call.body,  # the body's own shape and JSON types, before merging
        # The query string's values are text: the body's own types were checked with its shape.
        lambda: validate(CalendarMove, merged, json_types=False),
    ]
    for check in checks:
        try:
            move = check()
        except ValidationFailed as failed:
            said = {error.key for error in errors}
            errors += [error for error in failed.errors or [] if error.key not in said]
    if errors:
        raise ValidationFailed(errors, sent)
    assert isinstance(move, CalendarMove)
    return service.move(found, move, call.signed_in, sent)
