"""The audit log (CONTRACT §12): who changed what, when, from what to what."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, field_validator

from chalicelib.schemas.common import (
    ApiModel,
    GroupRef,
    GuidPageQuery,
    Record,
    UserRef,
    UtcDateTime,
    rule_error,
)

# Every action the log records (CONTRACT §12), by resource: `action` filters by one of them or by
# a resource (tests/api/test_audit.py checks the services record no other).
ACTIONS: dict[str, tuple[str, ...]] = {
    "feedSettings": ("update",),
    "groupEmail": ("update",),
    "newsletterSettings": ("update",),
    "homePage": ("update",),
    "privateLandingPage": ("update",),
    "premiumLandingPage": ("update",),
    "emailToPost": ("update",),
    "emailToComment": ("update",),
    "mailbox": ("poll", "failureEmail"),
    "connector": ("update",),
    "event": ("create", "update", "delete", "move"),
    "comment": ("approve", "update", "delete", "undelete", "purge", "deleteSpamReports"),
    "notification": ("update",),
    "feedKey": ("create", "revoke"),
    "player": ("create",),
    "profileSection": ("create", "update", "delete"),
    "profileField": ("create", "update", "delete"),
    "user": ("create", "update", "unlock"),
    "admin": ("create",),
    "fixture": ("load",),
    "migration": ("run",),
}
KNOWN_ACTIONS = frozenset(
    f"{resource}.{verb}" for resource, verbs in ACTIONS.items() for verb in verbs
)


def _blank_is_none(value: Any) -> Any:
    return value or None


# What `action` may be, as the document says it: a resource, one of its actions, or blank (no
# filter). The API refuses any other word (`_known_action`), which a pattern let through.
ACTION_FILTERS = ["", *sorted(ACTIONS), *sorted(KNOWN_ACTIONS)]


class AuditQuery(GuidPageQuery):
    """`action` (an action, `event.create`, or its resource, `event`) and `actorId` (a user id,
    or a system actor's name) narrow the list."""

    action: Annotated[
        str | None,
        BeforeValidator(_blank_is_none),
        WithJsonSchema({"anyOf": [{"type": "string", "enum": ACTION_FILTERS}, {"type": "null"}]}),
    ] = Field(
        default=None,
        max_length=100,
        description="an action (`event.create`) or a resource (`event`): only its entries",
    )
    actor_id: Annotated[str | None, BeforeValidator(_blank_is_none)] = Field(
        default=None,
        max_length=100,
        description="a user id, or a system actor's name (`create-admin`): only its entries",
    )

    @field_validator("action")
    @classmethod
    def _known_action(cls, action: str | None) -> str | None:
        # An unknown filter would answer an empty list, as if nothing had happened.
        if action is None or action in ACTIONS or action in KNOWN_ACTIONS:
            return action
        raise rule_error(
            "action",
            "is not an action of the log: give one such as event.create, or a resource such as "
            "event ({resources})",
            resources=", ".join(ACTIONS),
        )


class SystemActor(ApiModel):
    type: Literal["system"] = "system"
    name: str


class AuditTarget(ApiModel):
    type: str
    id: str
    # What a person calls it (a group's name for its settings, a user's for their notifications,
    # an event's title), or null where nothing names it.
    name: str | None = None


class AuditChange(ApiModel):
    field: str
    before: Any = None
    after: Any = None


class AuditEntryOut(Record):
    type: Literal["auditEntry"] = "auditEntry"
    id: str
    at: UtcDateTime
    actor: UserRef | SystemActor
    via: Literal["api", "cli", "job"]
    action: str
    group: GroupRef | None
    target: AuditTarget
    changes: list[AuditChange]
    request_id: str | None


class AuditPage(Record):
    offset: str | None
    entries: list[AuditEntryOut]
