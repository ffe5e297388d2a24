"""Groups, the community's tree: what the privilege checks, links and lists read of one. Frozen:
the rules never change a group in place (store/groups.py maps its items to these records)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Group:
    id: str
    # None for the root group.
    parent_id: str | None
    name: str
    slug: str
    access: str  # public | private | premium
    thumb_url: str | None = None
    # The roles each permission is granted to: {"post": ["member", ...], "comment": [...],
    # "commentWithoutApproval": [...]}.
    permissions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
