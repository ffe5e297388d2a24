"""A group as the store reads it once and the rules hold it: a frozen record, not the PynamoDB
item (store/groups.py maps one to the other)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Group:
    id: str
    name: str
    slug: str
    # None for the root group.
    parent_id: str | None
    access: str  # public | private | premium
    thumb_url: str | None = None
    # The roles each permission is granted to: {"post": ["member", ...], "comment": [...],
    # "commentWithoutApproval": [...]}.
    permissions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
