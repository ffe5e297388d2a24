"""Schemathesis hooks for tests/local/test_fuzz.py (loaded through SCHEMATHESIS_HOOKS).

`positive_data_acceptance` expects a schema-valid request to succeed. A few 400s answer schema-valid
requests for what no JSON Schema can say: an id that names no record (a list's `offset`, CONTRACT
§7; a field's section), a name or id another record already has (CONTRACT §5), one date against
another. The test lets those operations answer 400 to valid data (`STATE_RULES`, written into the
run's `[[operations]]`), and `refused_only_for_state` then fails any such 400 with an error (key
and message) other than the rules listed for that operation: the allowance is that narrow.

`Reached` records which operations each phase answered with what, for the test to read.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import schemathesis

# An error a 400 to schema-valid data may carry: its key, and what its message says (both matched
# in full), each a rule on stored state or between two values that JSON Schema cannot express.
Rule = tuple[str, str]
# An `offset` (a well-formed id) that names no item of the list (CONTRACT §7).
UNKNOWN_OFFSET: Rule = (
    "offset",
    r"no \w+( of this group)? has this id|is not the id of an alert of this user"
    r"|this comment has never been (in the deleted list|reported)"
    r"|the search's list holds no user with this id|the list holds no group with this id",
)
# The paged lists (CONTRACT §7), and marking alerts read, which answers the first page.
PAGED_LISTS = (
    "GET /api/v1/en_US/audit",
    "GET /api/v1/en_US/audit/{groupId}",
    "GET /api/v1/en_US/comment/post/list/{groupId}/deleted",
    "GET /api/v1/en_US/comment/post/list/{groupId}/spam-reports",
    "GET /api/v1/en_US/comment/post/list/{groupId}/unapproved",
    "GET /api/v1/en_US/connector/email-to-comment/log",
    "GET /api/v1/en_US/connector/email-to-post/{groupId}/log",
    "GET /api/v1/en_US/event/list/expired/{groupId}",
    "GET /api/v1/en_US/event/list/upcoming/{groupId}",
    "GET /api/v1/en_US/group/list",
    "GET /api/v1/en_US/post/list/{groupId}",
    "GET /api/v1/en_US/post/{postId}/comments",
    "GET /api/v1/en_US/user/search",
    "GET /api/v1/en_US/user/{userId}/alerts",
    "POST /api/v1/en_US/user/{userId}/alerts/read",
)
# An end date against its start (CONTRACT §9): JSON Schema compares no two values.
EVENT_DATES: Rule = (
    "endDate",
    r"must not be before startDate|must be at most \d+ days after startDate",
)
# An end date is needed unless allDay is true (CONTRACT §8): one value against another, as the
# calendar's move has it; a blank or null endDate, which the document allows, meets it.
END_NEEDED: Rule = ("endDate", r"is required unless the event lasts all day \(allDay true\)")
# An event's group (a body's id, not the path's) is a stored record.
GROUP_EXISTS: Rule = ("groupId", r"no group has this id")
# A field's section, parent and the parent's option are stored records; a name is unique per
# section; option keys and values are unique in a list, and a default is one of its options or
# no longer than the field's own maxLength (one value against another).
FIELD_RULES: tuple[Rule, ...] = (
    ("sectionId", r"no profile section has this id"),
    ("name", r"another field of this section has this name"),
    (
        "parentId",
        r"no field has this id|only a .* can be a parent|a field cannot be its own ancestor",
    ),
    (
        "parentSelectedValueId",
        r"needs a parentId|is needed with a parentId|is not the key of one of the parent's options",
    ),
    (r"data\.options\.\d+\.(key|value)", r"is the (key|value) of another option too"),
    (r"data\.defaultValue", r"is not one of the options|is longer than maxLength \(\d+\)"),
)
SECTION_NAME: Rule = ("name", r"another section already has this name")
# A mailbox's host is resolved: it must name one public server (CONTRACT §8, no SSRF).
MAILBOX_HOST: Rule = (
    "serverName",
    r".* (is not the address of a single server|is a link-local or cloud metadata address.*"
    r"|is a loopback or private-network address.*)",
)
# An enabled mailbox needs a password: the one sent, or one stored before.
PASSWORD_KEPT: Rule = ("serverPassword", r"an enabled connector needs the POP3 account's password")
# Two values of one body: an enabled mailbox needs its user name (reached once a password is
# stored, as make run stores the demo's: the password rule answers first otherwise).
USER_NAMED: Rule = ("serverUsername", r"an enabled connector needs the POP3 account's username")
# No two flags of a list may name the same day or hour: unique by one key of an object, which
# JSON Schema's uniqueItems (whole items) cannot say.
ONCE: Rule = ("skipDays|skipHours", r"'.*' appears more than once")
# A date-time whose offset takes it out of years 1 to 9999 once in UTC (0001-01-01T00:00:00+01:00):
# valid RFC 3339, but no date Python, DynamoDB's sort keys or iCalendar can hold.
CALENDAR_RANGE: Rule = (
    "startDate|endDate|timeStamp|calendarStartDate|calendarEndDate",
    r"is outside the dates Agora can store: .*",
)
# Whether the user may follow a private or premium group (of the body's group, or of its post) is
# its membership, a stored record.
MAY_ENTER: Rule = ("userRoleId", r"the user is not a member of the (private|premium) group .*")
# A local connector's settings take the shape of its kind, a stored record the path's id names:
# the CRM connector has none, where the chat connector's object is valid.
NO_SETTINGS: Rule = ("settings", r"the CRM connector has no settings: send an empty object")
# Whether the path's group is the root, which has no parent to inherit a connector's settings from.
ROOT_INHERITS: Rule = (
    "inheritSettings",
    r"the root group has no parent group to inherit settings from",
)
EVENT_LISTS = (
    "GET /api/v1/en_US/event/list/expired/{groupId}",
    "GET /api/v1/en_US/event/list/upcoming/{groupId}",
)
STATE_RULES: dict[str, tuple[Rule, ...]] = {
    **{label: (UNKNOWN_OFFSET,) for label in PAGED_LISTS},
    **{label: (UNKNOWN_OFFSET, CALENDAR_RANGE) for label in EVENT_LISTS},
    "GET /api/v1/en_US/event/list/calendar/{groupId}": (
        ("calendarEndDate", r"must be after calendarStartDate"),
        CALENDAR_RANGE,
    ),
    "POST /api/v1/en_US/event": (EVENT_DATES, END_NEEDED, GROUP_EXISTS, CALENDAR_RANGE),
    "PUT /api/v1/en_US/event/{eventId}": (EVENT_DATES, END_NEEDED, GROUP_EXISTS, CALENDAR_RANGE),
    # A calendar plugin sends the dates in the query or the body (CONTRACT §9): each is required
    # in one of the two, which no schema of either place can say.
    "PUT /api/v1/en_US/event/{eventId}/calendar": (
        ("startDate|calendarStartDate|calendarEndDate", r"is required"),
        ("calendarEndDate", r"must be after calendarStartDate"),
        END_NEEDED,
        EVENT_DATES,
        CALENDAR_RANGE,
    ),
    "POST /api/v1/en_US/profile/field": FIELD_RULES,
    "PUT /api/v1/en_US/profile/field/{fieldId}": FIELD_RULES,
    "POST /api/v1/en_US/profile/section": (SECTION_NAME,),
    "PUT /api/v1/en_US/profile/section/{sectionId}": (SECTION_NAME,),
    "POST /rest/v1/en_US/player": ((r"id|name", r"(id|name) is already taken"),),
    "PUT /api/v1/en_US/connector/email-to-comment": (MAILBOX_HOST, PASSWORD_KEPT, USER_NAMED),
    "PUT /api/v1/en_US/connector/email-to-post/{groupId}": (
        MAILBOX_HOST,
        PASSWORD_KEPT,
        USER_NAMED,
    ),
    "PUT /api/v1/en_US/feed/settings/{groupId}": (ONCE,),
    "PUT /api/v1/en_US/connector/local/{connectorId}/group/{groupId}": (NO_SETTINGS, ROOT_INHERITS),
    "POST /api/v1/en_US/user/{userId}/notifications/group/{notificationId}": (MAY_ENTER,),
    "POST /api/v1/en_US/user/{userId}/notifications/post/{notificationId}": (MAY_ENTER,),
    # The unsubscribe token is signed: a client cannot make one that the API accepts.
    "POST /api/v1/en_US/unsubscribe": (("token", r"the unsubscribe link is not valid"),),
}
# Pages for people answer a refusal as a page: its title must say why (the token again).
PAGE_REFUSALS = {"GET /api/v1/en_US/unsubscribe": "<title>Unsubscribe link not valid</title>"}

# Where Reached writes what it saw (the test sets it).
REACHED_FILE = "AGORA_FUZZ_REACHED"


def _errors(response: Any) -> list[tuple[str, str]]:
    try:
        errors = response.json().get("errors") or []
    except (ValueError, AttributeError):
        return []
    return [(str(e.get("key")), str(e.get("message"))) for e in errors if isinstance(e, dict)]


def _allowed(error: tuple[str, str], rules: tuple[Rule, ...]) -> bool:
    key, message = error
    return any(re.fullmatch(k, key) and re.fullmatch(m, message) for k, m in rules)


@schemathesis.check
def refused_only_for_state(ctx: Any, response: Any, case: Any) -> bool | None:
    """A 400 to schema-valid data on an operation of STATE_RULES says only what its rules say."""
    label = case.operation.label
    rules = STATE_RULES.get(label)
    meta = case.meta
    if meta is None or response.status_code != 400 or not meta.generation.mode.is_positive:
        return None
    if label in PAGE_REFUSALS:
        if PAGE_REFUSALS[label] not in response.text:
            raise AssertionError(f"Schema-valid request refused: {response.text[:300]}")
        return None
    if rules is None:
        return None
    errors = _errors(response)
    if not errors or not all(_allowed(error, rules) for error in errors):
        raise AssertionError(
            f"Schema-valid data refused with {errors}; only these may be refused here (rules on"
            f" stored state the document cannot state): {list(rules)}"
        )
    return None


@schemathesis.check
class Reached:
    """The statuses each phase saw per operation, written as JSON when the run ends."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str, int]] = set()

    def after_response(self, ctx: Any, response: Any, case: Any) -> None:
        phase = str(case.meta.phase.name) if case.meta is not None else "unknown"
        self.seen.add((phase, case.operation.label, int(response.status_code)))

    def after_run(self, ctx: Any) -> None:
        target = os.environ.get(REACHED_FILE)
        if target:
            with open(target, "w", encoding="utf-8") as out:
                json.dump(sorted(self.seen), out)
