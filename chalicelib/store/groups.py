"""Groups: the tree of the community, with access kind and role permissions."""

from __future__ import annotations

import time
from typing import Any

from pynamodb.attributes import JSONAttribute, UnicodeAttribute
from pynamodb.models import Model

from chalicelib.store import cache
from chalicelib.store.base import global_index, nullable, register, table_meta

ROOT_PARENT_KEY = "-"


@register
class GroupRecord(Model):
    Meta = table_meta("groups")
    # Kept by a warm container for AGORA_CACHE_SECONDS (chalicelib.store.cache).
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

    children = global_index("children", "parent_key", keys_only=True)
    by_slug = global_index("slug", "slug")


class GroupRepository:
    """Groups by id, by slug, and the root (cached briefly: it never moves after loading)."""

    _root_cache: tuple[float, str] | None = None
    ROOT_CACHE_SECONDS = 60.0

    def get(self, group_id: str) -> GroupRecord | None:
        return cache.read_through(GroupRecord.CACHE_KIND, group_id, lambda: self._read(group_id))

    @staticmethod
    def _read(group_id: str) -> GroupRecord | None:
        try:
            return GroupRecord.get(group_id)
        except GroupRecord.DoesNotExist:
            return None

    def get_many(self, group_ids: set[str]) -> dict[str, GroupRecord]:
        from chalicelib.store.batch import read_many

        return read_many({GroupRecord: {i for i in group_ids if i}})[GroupRecord]

    def by_slug(self, slug: str) -> GroupRecord | None:
        for group in GroupRecord.by_slug.query(slug, limit=1):
            return group
        return None

    def root_id(self) -> str | None:
        cached = GroupRepository._root_cache
        if cached and time.monotonic() - cached[0] < self.ROOT_CACHE_SECONDS:
            return cached[1]
        for key in GroupRecord.children.query(ROOT_PARENT_KEY, limit=1):
            GroupRepository._root_cache = (time.monotonic(), key.id)
            return key.id
        return None

    def children_of(self, group_id: str) -> list[str]:
        return [g.id for g in GroupRecord.children.query(group_id)]

    def put(self, **values: Any) -> GroupRecord:
        record = GroupRecord(**values)
        record.parent_key = values.get("parent_id") or ROOT_PARENT_KEY
        record.save()
        GroupRepository._root_cache = None
        cache.forget(GroupRecord.CACHE_KIND, [record.id])
        return record

    @staticmethod
    def forget_cache() -> None:
        """Forget the root and every remembered group (a reload, a fresh test world)."""
        GroupRepository._root_cache = None
        cache.forget(GroupRecord.CACHE_KIND)
