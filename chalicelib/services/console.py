"""The console's view of its user: which groups it may show, and what it may do in each.

The API has no route that lists groups (the spec has none); the console must still offer only what
the signed-in user may do, so this answers from the same `Caller` that every route's privilege check
uses (auth.py decides, nothing here re-implements a rule).
"""

from __future__ import annotations

from typing import Any

from chalicelib.auth import Caller, Need
from chalicelib.domain.ports.people import GroupTree, UserReader
from chalicelib.schemas.console import ConsoleGroup, ConsoleSession

# A tree walk from the root: communities have tens of groups, not thousands; the cap keeps a
# corrupted parent chain from looping.
MAX_GROUPS = 1000


class ConsoleService:
    def __init__(self, groups: GroupTree, users: UserReader) -> None:
        self.groups = groups
        self.users = users

    def session(self, caller: Caller) -> ConsoleSession:
        user = self.users.get(caller.user_id)
        return ConsoleSession(
            user_id=caller.user_id,
            alias=getattr(user, "alias", "") or "",
            email=getattr(user, "email", "") or "",
            is_root_admin=caller.is_root_admin,
            groups=[self._entry(caller, group) for group in self._visible(caller)],
        )

    def _visible(self, caller: Caller) -> list[Any]:
        ordered: list[Any] = []
        seen: set[str] = set()
        queue = [caller.root_group_id] if caller.root_group_id else []
        while queue and len(seen) < MAX_GROUPS:
            group_id = queue.pop(0)
            if group_id in seen:
                continue
            seen.add(group_id)
            group = self.groups.get(group_id)
            if group is None:
                continue
            if caller.has(Need.MODERATOR, group) or caller.has(Need.GROUP_ADMIN, group):
                ordered.append(group)
            queue.extend(self.groups.children_of(group_id))
        return ordered

    @staticmethod
    def _entry(caller: Caller, group: Any) -> ConsoleGroup:
        return ConsoleGroup(
            id=group.id,
            name=group.name,
            slug=group.slug,
            access=group.access,
            parent_id=group.parent_id,
            role=caller.role_in(group.id).label,
            may_moderate=caller.has(Need.MODERATOR, group),
            may_administer=caller.has(Need.GROUP_ADMIN, group),
        )
