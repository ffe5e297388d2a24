"""The groups a signed-in user administers or moderates, by name (CONTRACT §10)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from chalicelib.auth import Caller, Role
from chalicelib.domain.ports.people import GroupDirectory, GroupStore
from chalicelib.errors import ValidationFailed
from chalicelib.schemas.group_list import GroupListed, GroupListQuery, GroupPage
from chalicelib.services.links import group_ref
from chalicelib.services.paging import next_offset


class GroupListing(GroupStore, GroupDirectory, Protocol):
    """Groups by id, and every group by name."""


def name_order(group: Any) -> tuple[str, str]:
    """The list's order for groups read by id: the by-name index's (store/groups.py) order."""
    from chalicelib.sanitize import search_key

    return (search_key(group.name)[:200], group.id)


class GroupListService:
    def __init__(self, groups: GroupListing) -> None:
        self.groups = groups

    def page(self, caller: Caller, query: GroupListQuery) -> GroupPage:
        after = None
        if query.offset:
            after = self.groups.get(query.offset)
            if after is None:
                raise ValidationFailed.one("offset", query.offset, "no group has this id")
        if caller.is_root_admin:
            # Every group: one Query of the by-name index, sized by the page.
            records: Sequence[Any] = self.groups.by_name(limit=query.page_size, after=after)
        else:
            records = self._managed(caller, query.page_size, after)
        return GroupPage(
            offset=next_offset(records, query.offset, lambda g: g.id),
            groups=[
                GroupListed(**group_ref(g).model_dump(), parent_id=g.parent_id, access=g.access)
                for g in records
            ],
        )

    def _managed(self, caller: Caller, limit: int, after: Any | None) -> list[Any]:
        """The groups the caller moderates or administers: their memberships (already read with
        the caller) name them, one BatchGetItem per 100 reads their names."""
        ids = {group_id for group_id, role in caller.roles.items() if role >= Role.MODERATOR}
        found = sorted(self.groups.get_many(ids).values(), key=name_order)
        if after is not None:
            found = [g for g in found if name_order(g) > name_order(after)]
        return found[:limit]
