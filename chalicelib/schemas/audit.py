"""The audit log (CONTRACT §12): who changed what, when, from what to what."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from chalicelib.schemas.common import (
    ApiModel,
    GroupRef,
    GuidPageQuery,
    Record,
    UserRef,
    UtcDateTime,
)


def _blank_is_none(value: Any) -> Any:
    return value or None


class AuditQuery(GuidPageQuery):
    """`action` (an action, `event.create`, or its resource, `event`) and `actorId` (a user id,
    or a system actor's name) narrow the list."""

    action: Annotated[str | None, BeforeValidator(_blank_is_none)] = Field(
        default=None,
        max_length=100,
        pattern=r"^[a-zA-Z]+(\.[a-zA-Z]+)?$",
        description="an action (`event.create`) or a resource (`event`): only its entries",
    )
    actor_id: Annotated[str | None, BeforeValidator(_blank_is_none)] = Field(
        default=None,
        max_length=100,
        description="a user id, or a system actor's name (`create-admin`): only its entries",
    )


class SystemActor(ApiModel):
    type: Literal["system"] = "system"
    name: str


class AuditTarget(ApiModel):
    type: str
    id: str


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
