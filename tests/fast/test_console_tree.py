"""The console session's walk of the group tree (services/console.py), from what the by-name
index answers, whatever the stored parents say: parents first, siblings by name, a group whose
chain never reaches the root left out, and a loop in the parents walked once."""

from __future__ import annotations

from types import SimpleNamespace

from chalicelib.auth import Caller, Role
from chalicelib.services.console import MAX_GROUPS, ConsoleService


class ByName:
    """What the by-name index answers: every group, in name order; the reads it was asked for."""

    def __init__(self, *groups: SimpleNamespace) -> None:
        self.groups = sorted(groups, key=lambda g: g.name)
        self.asked: list[dict] = []

    def by_name(self, *, limit, after):
        self.asked.append({"limit": limit, "after": after})
        return self.groups[:limit]


def group(group_id: str, parent_id: str | None, name: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(
        id=group_id, parent_id=parent_id, name=name or group_id, slug=group_id, access="public"
    )


NO_USERS = SimpleNamespace(get=lambda _user_id: None)


def walk(directory: ByName, caller: Caller) -> list[str]:
    """The ids of the session's groups, in its order."""
    return [g.id for g in ConsoleService(directory, NO_USERS).session(caller).groups]


ROOT_ADMIN = Caller("ann", {"root": Role.ADMINISTRATOR}, "root")


def test_parents_come_first_and_siblings_by_name_in_one_read():
    directory = ByName(
        group("root", None),
        group("b", "root", "Birds"),
        group("a", "root", "Apples"),
        group("a1", "a", "Zinnias"),
        group("b1", "b", "Ants"),
    )
    assert walk(directory, ROOT_ADMIN) == ["root", "a", "b", "a1", "b1"]
    assert directory.asked == [{"limit": MAX_GROUPS, "after": None}]


def test_a_chain_that_never_reaches_the_root_is_left_out_and_a_loop_is_walked_once():
    directory = ByName(
        group("root", "c2"),  # a damaged root whose parent is its own grandchild
        group("c1", "root"),
        group("c2", "c1"),
        group("orphan", "no-such-group"),
        group("x", "y"),  # a loop away from the root
        group("y", "x"),
    )
    assert walk(directory, ROOT_ADMIN) == ["root", "c1", "c2"]


def test_a_moderator_sees_only_their_groups_and_no_root_or_no_groups_shows_nothing():
    directory = ByName(group("root", None), group("a", "root"), group("a1", "a"))
    moderator = Caller("mo", {"a1": Role.MODERATOR, "a": Role.MEMBER}, "root")
    assert walk(directory, moderator) == ["a1"]
    assert walk(ByName(), ROOT_ADMIN) == []  # the root not (yet) in the index
    assert walk(directory, Caller("nobody", {}, None)) == []
