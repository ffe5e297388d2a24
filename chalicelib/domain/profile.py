"""The profile structure's sections and fields as the store reads them once and the rules hold
them: frozen records, not the PynamoDB items (store/profile.py maps one to the other).

A change is a changed copy (`dataclasses.replace`) handed to the store's commit. `version` is the
version the record was read at (None: a record not stored yet): the commit writes each record
only if the stored one is still at that version (or, for a new one, absent), all or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from chalicelib.domain.json import JsonObject


class StaleStructure(Exception):
    """The structure changed between our read and our write."""


@dataclass(frozen=True, kw_only=True)
class _Placed:
    """What sections and fields share: a name, a place in their list, the version read."""

    name: str
    position: int
    version: int | None = None


@dataclass(frozen=True, kw_only=True)
class ProfileSection(_Placed):
    kind: ClassVar[str] = "section"

    section_id: int
    default_visibility_id: int | None

    @property
    def item_key(self) -> str:
        return f"section#{self.section_id:010d}"


@dataclass(frozen=True, kw_only=True)
class ProfileField(_Placed):
    kind: ClassVar[str] = "field"

    field_id: str
    # The section it is in.
    section_id: int
    type_id: int
    parent_id: str | None = None
    # The parent's option whose choice shows this field.
    parent_selected_value_id: str | None = None
    # The field's settings: the field type's keys (schemas/profile_fields.py), as answered.
    data: JsonObject

    @property
    def item_key(self) -> str:
        return f"field#{self.field_id}"


ProfileItem = ProfileSection | ProfileField
