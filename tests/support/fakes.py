"""In-memory repositories for the rule tests of the fast tier (tests/fast/).

Each behaves as its PynamoDB counterpart does, as far as the rules can see: the same methods, the
same answers, the same failures (tests/store/test_repository_contract.py runs one set of tests
against both). Records are plain objects with the attributes the rules read.
"""

from __future__ import annotations

import copy
import itertools
from datetime import datetime, timedelta
from typing import Any

from chalicelib.store.profile import STRUCTURE, StaleStructure


class FakeRecord:
    """Attributes as keyword arguments; `version` as PynamoDB's VersionAttribute keeps it."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"FakeRecord({self.__dict__!r})"


# --- profile structure ----------------------------------------------------------------------------


class FakeProfileRepository:
    """Sections and fields of the structure, written in all-or-nothing commits conditioned on the
    version each record was read at (a stale record fails the whole commit)."""

    def __init__(self) -> None:
        self._items: dict[str, FakeRecord] = {}
        self._section_ids = itertools.count(1)

    def load(self) -> list[Any]:
        return [copy.deepcopy(self._items[key]) for key in sorted(self._items)]

    def next_section_id(self) -> int:
        return next(self._section_ids)

    def new_section(self, section_id: int, **values: Any) -> Any:
        return self._new(
            f"section#{section_id:010d}", kind="section", section_id=section_id, **values
        )

    def new_field(self, field_id: str, **values: Any) -> Any:
        return self._new(f"field#{field_id}", kind="field", field_id=field_id, **values)

    def commit(self, saves: Any = (), moves: Any = (), deletes: Any = ()) -> None:
        saves, moves, deletes = list(saves), list(moves), list(deletes)
        for record in [*saves, *moves, *deletes]:
            stored = self._items.get(record.item_key)
            if (stored.version if stored else None) != record.version:
                raise StaleStructure()
        for record in saves:
            record.version = (record.version or 0) + 1
            self._items[record.item_key] = copy.deepcopy(record)
        for record in moves:
            record.version += 1
            stored = self._items[record.item_key]
            stored.position, stored.version = record.position, record.version
        for record in deletes:
            del self._items[record.item_key]

    @staticmethod
    def _new(item_key: str, **values: Any) -> FakeRecord:
        defaults = {
            "default_visibility_id": None,
            "field_id": None,
            "type_id": None,
            "parent_id": None,
            "parent_selected_value_id": None,
            "data": None,
            "section_id": None,
        }
        return FakeRecord(
            structure=STRUCTURE, item_key=item_key, version=None, **{**defaults, **values}
        )


# --- sign-in --------------------------------------------------------------------------------------


class FakeUserRepository:
    def __init__(self) -> None:
        self._users: dict[str, FakeRecord] = {}

    def get(self, user_id: str) -> Any:
        user = self._users.get(user_id)
        return copy.deepcopy(user) if user else None

    def get_many(self, user_ids: set[str]) -> dict[str, Any]:
        return {i: copy.deepcopy(self._users[i]) for i in user_ids if i in self._users}

    def by_email(self, email: str) -> Any:
        wanted = email.strip().lower()
        for user in self._users.values():
            if user.email_lower == wanted:
                return copy.deepcopy(user)
        return None

    def new(self, **values: Any) -> Any:
        defaults = {"avatar_url": None, "password_hash": None, "memberships": {}}
        return FakeRecord(**{**defaults, **values})

    def save(self, user: Any) -> Any:
        self._users[user.id] = copy.deepcopy(user)
        return user


class FakeLoginAttemptRepository:
    """Attempts per account in fixed windows: at most `per_source` from one source address and
    `per_account` from all, as the DynamoDB repository counts them."""

    def __init__(self) -> None:
        self._windows: dict[str, dict[str, int]] = {}

    def take_attempt(
        self,
        email_lower: str,
        source: str,
        now: datetime,
        window: timedelta,
        per_source: int,
        per_account: int,
    ) -> Any:
        from chalicelib.store.login_attempts import Attempt, window_of

        counter = f"{email_lower}#{window_of(now, window)[0]}"
        counts = self._windows.setdefault(counter, {"total": 0})
        source_name = f"s:{source}"
        if counts["total"] >= per_account or counts.get(source_name, 0) >= per_source:
            return None
        counts["total"] += 1
        counts[source_name] = counts.get(source_name, 0) + 1
        return Attempt(counter, source_name, counts[source_name])

    def forget_source(self, attempt: Any) -> None:
        counts = self._windows.get(attempt.counter, {"total": 0})
        counts["total"] -= counts.pop(attempt.source_name, 0)


class FakeGroupRepository:
    """The groups the rules look up, and the root group's id."""

    def __init__(self, *groups: Any) -> None:
        self._groups = {g.id: g for g in groups}

    def get(self, group_id: str) -> Any:
        return self._groups.get(group_id)

    def get_many(self, group_ids: set[str]) -> dict[str, Any]:
        return {i: self._groups[i] for i in group_ids if i in self._groups}

    def root_id(self) -> str | None:
        roots = [g.id for g in self._groups.values() if not getattr(g, "parent_id", None)]
        return roots[0] if roots else None
