"""Groups: the tree of the community, with access kind and role permissions."""

from __future__ import annotations

import time
from typing import Any

from pynamodb.attributes import JSONAttribute, UnicodeAttribute
from pynamodb.models import Model

from chalicelib.domain.groups import Group
from chalicelib.sanitize import search_key
from chalicelib.store.base import (
    cached_get,
    forget,
    frozen,
    global_index,
    nullable,
    query_page,
    read_many,
    register,
    table_meta,
)

ROOT_PARENT_KEY = "-"
# Every group's `listing`: the one hash key of the by-name index, which lists them all by name.
LISTED = "group"
# DynamoDB's sort key is at most 1,024 bytes; the name in it only orders the list.
MAX_SORT_NAME = 200
SEPARATOR = "\x1f"  # never in a stored name (control characters are removed)


def name_key_of(name: str, group_id: str) -> str:
    """The group's place in the list by name: case and accents ignored, ties by id."""

    return f"{search_key(name)[:MAX_SORT_NAME]}{SEPARATOR}{group_id}"


@register
class GroupRecord(Model):
    Meta = table_meta("groups")
    # Kept by a warm container for AGORA_CACHE_SECONDS (chalicelib.store.base).
    CACHE_KIND = "group"

    id = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute()
    slug = UnicodeAttribute()
    parent_id = nullable(UnicodeAttribute(null=True))
    # parent id, or "-" for the root group: the root is found with one Query, never a Scan.
    parent_key = UnicodeAttribute()
    access = UnicodeAttribute()  # public | private | premium
    thumb_url = nullable(UnicodeAttribute(null=True))
    # {"post": [...roles], "comment": [...], "commentWithoutApproval": [...]}
    permissions = JSONAttribute(default=dict)

    # The by-name index's keys, set by `group_record` for every group written.
    listing = nullable(UnicodeAttribute(null=True))
    name_key = nullable(UnicodeAttribute(null=True))

    children = global_index("children", "parent_key", keys_only=True)
    by_slug = global_index("slug", "slug")
    by_name = global_index("by-name", "listing", "name_key", range_type=UnicodeAttribute)

    def as_group(self) -> Group:
        """The item as the rules hold it (domain/groups.py)."""
        granted = {action: tuple(roles) for action, roles in dict(self.permissions or {}).items()}
        return frozen(self, Group, permissions=granted)


def group_record(**values: Any) -> GroupRecord:
    """A group as it is stored, with the keys of the indexes that list it (every writer of
    groups makes them here)."""
    record = GroupRecord(**values)
    record.parent_key = values.get("parent_id") or ROOT_PARENT_KEY
    record.listing = LISTED
    record.name_key = name_key_of(record.name, record.id)
    return record


class GroupRepository:
    """Groups by id, by slug, and the root (cached briefly: it never moves after loading)."""

    _root_cache: tuple[float, str] | None = None
    ROOT_CACHE_SECONDS = 60.0

    def get(self, group_id: str) -> Group | None:
        found = cached_get(GroupRecord, group_id)
        return found.as_group() if found is not None else None

    def get_many(self, group_ids: set[str]) -> dict[str, Group]:
        found = read_many({GroupRecord: {i for i in group_ids if i}})[GroupRecord]
        return {group_id: item.as_group() for group_id, item in found.items()}

    def by_slug(self, slug: str) -> Group | None:
        for group in GroupRecord.by_slug.query(slug, limit=1):
            return group.as_group()
        return None

    def root_id(self) -> str | None:
        cached = GroupRepository._root_cache
        if cached and time.monotonic() - cached[0] < self.ROOT_CACHE_SECONDS:
            return cached[1]
        found = self.stored_root_id()
        if found is not None:
            GroupRepository._root_cache = (time.monotonic(), found)
        return found

    @staticmethod
    def stored_root_id() -> str | None:
        """The root group's id as the table holds it now (one Query), never a remembered one:
        for a write that a second root would make wrong (a fixture load)."""
        for key in GroupRecord.children.query(ROOT_PARENT_KEY, limit=1):
            return str(key.id)
        return None

    def by_name(self, *, limit: int, after: Group | None) -> list[Group]:
        """One page of every group by name (one Query), right after group `after`'s place."""
        start_key = None
        if after is not None:
            start_key = {
                "id": {"S": after.id},
                "listing": {"S": LISTED},
                "name_key": {"S": name_key_of(after.name, after.id)},
            }
        page = query_page(
            GroupRecord.by_name, LISTED, limit=limit, forward=True, start_key=start_key
        )
        return [item.as_group() for item in page]

    def put(self, **values: Any) -> Group:
        record = group_record(**values)
        record.save()
        GroupRepository._root_cache = None
        forget(GroupRecord.CACHE_KIND, [record.id])
        return record.as_group()

    @staticmethod
    def add_listing_keys() -> int:
        """Give each stored group that lacks them the by-name index's keys (groups written before
        the index existed); answers how many changed. For `migrate`: it reads every group once
        (a Scan, never on a request path) and is idempotent."""
        changed = 0
        for group in GroupRecord.scan(page_size=100):
            wanted = name_key_of(group.name, group.id)
            if group.listing == LISTED and group.name_key == wanted:
                continue
            group.update(
                actions=[GroupRecord.listing.set(LISTED), GroupRecord.name_key.set(wanted)]
            )
            changed += 1
        if changed:
            GroupRepository.forget_cache()
        return changed

    @staticmethod
    def forget_cache() -> None:
        """Forget the root and every remembered group (a reload, a fresh test world)."""
        GroupRepository._root_cache = None
        forget(GroupRecord.CACHE_KIND)
