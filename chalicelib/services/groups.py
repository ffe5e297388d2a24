"""Groups as the rest of the services need them: found by id, or a 404 naming the parameter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chalicelib.errors import NotFound

if TYPE_CHECKING:
    from chalicelib.store.groups import GroupRepository


class GroupService:
    def __init__(self, groups: GroupRepository) -> None:
        self.groups = groups

    def get(self, group_id: str, key: str = "groupId") -> Any:
        group = self.groups.get(group_id)
        if group is None:
            raise NotFound(key, group_id, "group")
        return group

    def root_id(self) -> str | None:
        return self.groups.root_id()

    def ancestors(self, group: Any) -> list[Any]:
        """The parents of a group, nearest first, up to the root."""
        chain = []
        seen = {group.id}
        current = group
        while current.parent_id and current.parent_id not in seen:
            parent = self.groups.get(current.parent_id)
            if parent is None:
                break
            chain.append(parent)
            seen.add(parent.id)
            current = parent
        return chain
