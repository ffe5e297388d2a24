"""The groups a signed-in user administers or moderates, by name (CONTRACT §10)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from chalicelib.auth import Caller, Role
from chalicelib.domain.groups import Group
from chalicelib.domain.ports.people import GroupDirectory, GroupStore
from chalicelib.errors import ValidationFailed
from chalicelib.sanitize import search_key
from chalicelib.schemas.group_list import GroupListed, GroupListQuery, GroupPage
from chalicelib.services.links import group_ref
from chalicelib.services.paging import next_offset


class GroupListing(GroupStore, GroupDirectory, Protocol):
    """Groups by id, and every group by name."""


def name_order(group: Group) -> tuple[str, str]:
    """The list's order for groups read by id: the by-name index's (store/groups.py) order."""

    return (search_key(group.name)[:200], group.id)


class GroupListService:
    def __init__(self, groups: GroupListing) -> None:
        self.groups = groups

    def page(self, caller: Caller, query: GroupListQuery) -> GroupPage:
        if caller.is_root_admin:
            # Every group: one Query of the by-name index, sized by the page.
            after = self.groups.get(query.offset) if query.offset else None
            if query.offset and after is None:
                raise not_in_list(query.offset)
            records: Sequence[Group] = self.groups.by_name(limit=query.page_size, after=after)
        else:
            records = self._managed(caller, query.page_size, query.offset)
        return GroupPage(
            offset=next_offset(records, query.offset, lambda g: g.id),
            groups=[
                GroupListed(**group_ref(g).model_dump(), parent_id=g.parent_id, access=g.access)
                for g in records
            ],
        )

    def _managed(self, caller: Caller, limit: int, offset: str | None) -> list[Group]:
        """The groups the caller moderates or administers: their memberships (already read with
        the caller) name them, one BatchGetItem per 100 reads their names. The offset is one of
        them: any other group's id, hidden or not, is the same 400 as an unknown one."""
        ids = {group_id for group_id, role in caller.roles.items() if role >= Role.MODERATOR}
        if offset and offset not in ids:
            raise not_in_list(offset)
        by_id = self.groups.get_many(ids)
        found = sorted(by_id.values(), key=name_order)
        if offset:
            after = by_id.get(offset)
            if after is None:  # the membership names a group that is gone
                raise not_in_list(offset)
            found = [g for g in found if name_order(g) > name_order(after)]
        return found[:limit]


def not_in_list(offset: str) -> ValidationFailed:
    """One answer for an id no group has and for a group the caller's list does not hold: the
    list tells no one which groups exist."""
    return ValidationFailed.one("offset", offset, "the list holds no group with this id")
