"""What the administrators' console needs to know about its signed-in user (CONTRACT §10 `/console/`)."""

from __future__ import annotations

from typing import Literal

from chalicelib.schemas.common import ApiModel, Record


class ConsoleGroup(ApiModel):
    id: str
    name: str
    slug: str
    access: str
    parent_id: str | None
    role: str
    may_moderate: bool
    may_administer: bool


class ConsoleSession(Record):
    type: Literal["consoleSession"] = "consoleSession"
    user_id: str
    alias: str
    email: str
    is_root_admin: bool
    # Groups the user may moderate or administer, root first, each parent before its children.
    groups: list[ConsoleGroup]
