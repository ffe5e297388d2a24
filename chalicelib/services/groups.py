"""Groups as the rest of the services need them: found by id, or a 404 naming the parameter."""

from __future__ import annotations

from chalicelib.domain.groups import Group
from chalicelib.domain.ports.people import GroupStore
from chalicelib.errors import NotFound


class GroupService:
    def __init__(self, groups: GroupStore) -> None:
        self.groups = groups

    def get(self, group_id: str, key: str = "groupId") -> Group:
        group = self.groups.get(group_id)
        if group is None:
            raise NotFound(key, group_id, "group")
        return group

    def root_id(self) -> str | None:
        return self.groups.root_id()

    def ancestors(self, group: Group) -> list[Group]:
        """The parents of a group, nearest first, up to the root."""
        chain: list[Group] = []
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
