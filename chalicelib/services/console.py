"""The console's view of its user: which groups it may show, and what it may do in each.

The API has no route that lists groups (the spec has none); the console must still offer only what
the signed-in user may do, so this answers from the same `Caller` that every route's privilege check
uses (auth.py decides, nothing here re-implements a rule).
"""

from __future__ import annotations

from collections import defaultdict, deque

from chalicelib.auth import Caller, Need
from chalicelib.domain.groups import Group
from chalicelib.domain.ports.people import GroupDirectory, UserReader
from chalicelib.schemas.console import ConsoleGroup, ConsoleSession

# Communities have tens of groups, not thousands: the session reads at most this many, in one
# Query (a group is a few hundred bytes: a thousand fit in DynamoDB's 1 MB answer).
MAX_GROUPS = 1000


class ConsoleService:
    def __init__(self, groups: GroupDirectory, users: UserReader) -> None:
        self.groups = groups
        self.users = users

    def session(self, caller: Caller) -> ConsoleSession:
        user = self.users.get(caller.user_id)
        return ConsoleSession(
            user_id=caller.user_id,
            alias=user.alias if user is not None else "",
            email=user.email if user is not None else "",
            is_root_admin=caller.is_root_admin,
            groups=[self._entry(caller, group) for group in self._visible(caller)],
        )

    def _visible(self, caller: Caller) -> list[Group]:
        """The groups the caller moderates or administers, parents first: a walk of the tree
        from the root, each group's children by name. The tree is read whole from the by-name
        index, one Query, where the walk used to read each group and query its children (two
        requests a group). A group whose parent chain does not reach the root is not shown."""
        if not caller.root_group_id:
            return []
        by_id: dict[str, Group] = {}
        children: defaultdict[str | None, list[Group]] = defaultdict(list)
        for group in self.groups.by_name(limit=MAX_GROUPS, after=None):
            by_id[group.id] = group
            children[group.parent_id].append(group)
        root = by_id.get(caller.root_group_id)
        queue = deque([root] if root is not None else [])
        seen: set[str] = set()
        ordered: list[Group] = []
        while queue:
            group = queue.popleft()
            if group.id in seen:
                continue  # a corrupted parent chain cannot loop
            seen.add(group.id)
            if caller.has(Need.MODERATOR, group) or caller.has(Need.GROUP_ADMIN, group):
                ordered.append(group)
            queue.extend(children[group.id])
        return ordered

    @staticmethod
    def _entry(caller: Caller, group: Group) -> ConsoleGroup:
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
