"""The list of groups an operator may manage (CONTRACT §10): `GET /api/v1/en_US/group/list`."""

from __future__ import annotations

from pydantic import Field

from chalicelib.schemas.common import GroupRef, Record, _GuidOffset


class GroupListQuery(_GuidOffset):
    page_size: int = Field(default=15, ge=1, le=100)


class GroupListed(GroupRef):
    parent_id: str | None = Field(description="The parent group's id; null for the root group")
    access: str = Field(description="public, private or premium")


class GroupPage(Record):
    offset: str | None = Field(description="Id of the last group of this page")
    groups: list[GroupListed]
