"""Profile structure: sections, fields and their rules (spec "Profile structure", CONTRACT §8).

The whole structure is read once per request (one Query: it is small administration data), the
rules are checked against it in memory, and the changed records are written in one transaction.
Names shown beside ids (sectionName, parentName, parentSelectedValueName) are resolved when the
structure is answered, so renaming a section or an option needs no rewrite of other records.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from chalicelib.domain import audit
from chalicelib.domain.ports.people import ProfileItem, ProfileStore
from chalicelib.errors import Conflict, NotFound, ValidationFailed
from chalicelib.schemas.profile import (
    VISIBILITY_NAMES,
    AliasAux,
    FieldBody,
    FieldOut,
    FieldUpdate,
    ProfileOut,
    SectionCreate,
    SectionOut,
    SectionUpdate,
    SectionWithFields,
)
from chalicelib.schemas.profile_fields import DATA_MODELS, PARENT_TYPES, FieldData, FieldType
from chalicelib.services.profile_data import MANDATORY_FIELDS, guid_for, merge, settle_data


def _order(record: ProfileItem) -> tuple[int, str]:
    return int(record.position), record.item_key


def _renumber(ordered: list[ProfileItem], skip: ProfileItem | None = None) -> list[ProfileItem]:
    """Positions 1..n in list order; answers the records (other than `skip`) that moved."""
    moved = []
    for number, record in enumerate(ordered, start=1):
        if record.position is None or int(record.position) != number:
            record.position = number
            if record is not skip:
                moved.append(record)
    return moved


def _place(
    siblings: list[ProfileItem], record: ProfileItem, wanted: int | None
) -> list[ProfileItem]:
    """Put `record` at position `wanted` (last when None or past the end) among `siblings`."""
    at = len(siblings) if wanted is None else min(wanted - 1, len(siblings))
    return _renumber([*siblings[:at], record, *siblings[at:]], skip=record)


class Structure:
    """The stored structure, indexed for the rules."""

    def __init__(self, records: Sequence[ProfileItem]) -> None:
        self.sections = {int(r.section_id): r for r in records if r.kind == "section"}
        self.fields = {r.field_id or "": r for r in records if r.kind == "field"}

    def ordered_sections(self, without: ProfileItem | None = None) -> list[ProfileItem]:
        return sorted((s for s in self.sections.values() if s is not without), key=_order)

    def fields_in(self, section_id: int, without: ProfileItem | None = None) -> list[ProfileItem]:
        return sorted(
            (
                f
                for f in self.fields.values()
                if int(f.section_id) == section_id and f is not without
            ),
            key=_order,
        )

    def children_of(self, field_id: str) -> list[ProfileItem]:
        return sorted((f for f in self.fields.values() if f.parent_id == field_id), key=_order)


def _option_keys(record: ProfileItem) -> dict[str, str]:
    return {o["key"]: o["value"] for o in (record.data or {}).get("options", [])}


class ProfileService:
    def __init__(self, repository: ProfileStore) -> None:
        self.repository = repository

    # --- reads ------------------------------------------------------------------------------

    def structure(self) -> ProfileOut:
        structure = self._load()
        return ProfileOut(
            mandatory_fields=[self._mandatory(key, name) for key, name in MANDATORY_FIELDS],
            # No field is configured as the alias suffix: answered as "none".
            alias_aux=AliasAux(),
            sections=[
                SectionWithFields(
                    **self._section_out(section).model_dump(),
                    fields=[
                        self._field_out(structure, f)
                        for f in structure.fields_in(int(section.section_id))
                    ],
                )
                for section in structure.ordered_sections()
            ],
        )

    # --- sections ---------------------------------------------------------------------------

    def create_section(self, body: SectionCreate) -> SectionOut:
        structure = self._load()
        self._check_section_name(structure, body.name, None)
        section = self.repository.new_section(
            self.repository.next_section_id(),
            name=body.name,
            default_visibility_id=body.default_visibility_id,
            position=0,
        )
        moves = _place(structure.ordered_sections(), section, body.position)
        self._commit(saves=[section], moves=moves, audit=_audited("create", None, section))
        return self._section_out(section)

    def update_section(self, section_id: int, body: SectionUpdate) -> SectionOut:
        structure = self._load()
        section = self._section(structure, section_id)
        before = _audit_fields(section)
        if body.name is not None:
            self._check_section_name(structure, body.name, section)
            section.name = body.name
        if body.default_visibility_id is not None:
            section.default_visibility_id = body.default_visibility_id
        moves: list[ProfileItem] = []
        if body.position is not None:
            moves = _place(structure.ordered_sections(without=section), section, body.position)
        self._commit(saves=[section], moves=moves, audit=_audited("update", before, section))
        return self._section_out(section)

    def delete_section(self, section_id: int) -> SectionOut:
        structure = self._load()
        section = self._section(structure, section_id)
        answer = self._section_out(section)
        fields = structure.fields_in(section_id)
        self._delete_unless_held(
            section,
            rest=structure.ordered_sections(without=section),
            held_by=fields,
            refusal=lambda names: Conflict(
                "fields",
                len(fields),
                f"The section still has fields ({names}): delete or move them first.",
            ),
        )
        return answer

    # --- fields -----------------------------------------------------------------------------

    def create_field(self, body: FieldBody, sent_data_keys: set[str]) -> FieldOut:
        structure = self._load()
        section = self._body_section(structure, body.section_id)
        self._check_field_name(structure, body, None)
        field_id = str(uuid.uuid4())
        data = settle_data(body.type_id, _data_of(body), sent_keys=sent_data_keys)
        self._check_parent(structure, field_id, body)
        field = self.repository.new_field(
            field_id,
            name=body.name,
            type_id=int(body.type_id),
            section_id=int(section.section_id),
            parent_id=body.parent_id,
            parent_selected_value_id=body.parent_selected_value_id,
            data=data,
            position=0,
        )
        moves = _place(structure.fields_in(body.section_id), field, body.position)
        self._commit(saves=[field], moves=moves, audit=_audited("create", None, field))
        structure.fields[field_id] = field
        return self._field_out(structure, field)

    def update_field(
        self,
        field_id: str,
        sent: dict[str, Any],
        update: FieldUpdate,
        parse: Callable[[dict[str, Any]], FieldBody],
    ) -> FieldOut:
        """`sent` is the body as sent: laid over the stored field, the whole is checked again by
        `parse` (the API layer's, as for a new field)."""
        structure = self._load()
        field = self._field(structure, field_id)
        merged, sent_data_keys = merge(field, sent, update)
        body = parse(merged)
        self._body_section(structure, body.section_id)
        self._check_field_name(structure, body, field)
        data = settle_data(body.type_id, _data_of(body), sent_keys=sent_data_keys)
        self._check_parent(structure, field_id, body)
        self._check_children(structure, field, body.type_id, data)

        old_section, before = int(field.section_id), _audit_fields(field)
        moves: list[ProfileItem] = []
        if body.section_id != old_section:
            moves += _renumber(structure.fields_in(old_section, without=field))
            moves += _place(structure.fields_in(body.section_id), field, body.position)
        else:
            siblings = structure.fields_in(old_section)
            wanted = body.position or siblings.index(field) + 1
            moves += _place(structure.fields_in(old_section, without=field), field, wanted)
        field.name = body.name
        field.type_id = int(body.type_id)
        field.section_id = body.section_id
        field.parent_id = body.parent_id
        field.parent_selected_value_id = body.parent_selected_value_id
        field.data = data
        self._commit(saves=[field], moves=moves, audit=_audited("update", before, field))
        return self._field_out(structure, field)

    def delete_field(self, field_id: str) -> FieldOut:
        structure = self._load()
        field = self._field(structure, field_id)
        answer = self._field_out(structure, field)
        self._delete_unless_held(
            field,
            rest=structure.fields_in(int(field.section_id), without=field),
            held_by=structure.children_of(field_id),
            refusal=lambda names: Conflict(
                "fieldId",
                field_id,
                f"The field is the parent of {names}: delete them or give them another parent first.",
            ),
        )
        return answer

    def _delete_unless_held(
        self,
        item: ProfileItem,
        *,
        rest: list[ProfileItem],
        held_by: Sequence[ProfileItem],
        refusal: Callable[[str], Conflict],
    ) -> None:
        """Delete `item` and renumber the rest of its list, unless items hang on it (a section's
        fields, a field's children): deleting it would orphan them, so `refusal` names them."""
        if held_by:
            raise refusal(", ".join(i.name for i in held_by))
        entry = _audited("delete", _audit_fields(item), None, item)
        self._commit(moves=_renumber(rest), deletes=[item], audit=entry)

    # --- rules ------------------------------------------------------------------------------

    def _check_section_name(
        self, structure: Structure, name: str, section: ProfileItem | None
    ) -> None:
        for other in structure.sections.values():
            if other is not section and other.name.casefold() == name.casefold():
                raise ValidationFailed.one("name", name, "another section already has this name")

    def _check_field_name(
        self, structure: Structure, body: FieldBody, field: ProfileItem | None
    ) -> None:
        for other in structure.fields_in(body.section_id, without=field):
            if other.name.casefold() == body.name.casefold():
                raise ValidationFailed.one(
                    "name", body.name, "another field of this section has this name"
                )

    def _body_section(self, structure: Structure, section_id: int) -> ProfileItem:
        section = structure.sections.get(section_id)
        if section is None:
            raise ValidationFailed.one("sectionId", section_id, "no profile section has this id")
        return section

    def _check_parent(self, structure: Structure, field_id: str, body: FieldBody) -> None:
        parent_id, selected = body.parent_id, body.parent_selected_value_id
        if parent_id is None:
            if selected is not None:
                raise ValidationFailed.one("parentSelectedValueId", selected, "needs a parentId")
            return
        parent = structure.fields.get(parent_id)
        if parent is None:
            raise ValidationFailed.one("parentId", parent_id, "no field has this id")
        if FieldType(int(parent.type_id or 0)) not in PARENT_TYPES:
            raise ValidationFailed.one(
                "parentId",
                parent_id,
                "only a DropDownList, CheckBoxList or RadioButtonList field can be a parent",
            )
        ancestor: ProfileItem | None = parent
        while ancestor is not None:
            if ancestor.field_id == field_id:
                raise ValidationFailed.one(
                    "parentId", parent_id, "a field cannot be its own ancestor"
                )
            ancestor = structure.fields.get(ancestor.parent_id) if ancestor.parent_id else None
        if selected is None:
            raise ValidationFailed.one("parentSelectedValueId", "", "is needed with a parentId")
        if selected not in _option_keys(parent):
            raise ValidationFailed.one(
                "parentSelectedValueId",
                selected,
                "is not the key of one of the parent's options",
            )

    def _check_children(
        self,
        structure: Structure,
        field: ProfileItem,
        field_type: FieldType,
        data: dict[str, Any],
    ) -> None:
        children = structure.children_of(field.field_id or "")
        if not children:
            return
        if field_type not in PARENT_TYPES:
            raise Conflict(
                "typeId",
                int(field_type),
                "The field is a parent: it must stay a DropDownList, CheckBoxList or "
                "RadioButtonList while other fields depend on it.",
            )
        keys = {o["key"] for o in data.get("options", [])}
        missing = [c.name for c in children if c.parent_selected_value_id not in keys]
        if missing:
            raise Conflict(
                "data.options",
                "",
                f"An option that {', '.join(missing)} depend on would be removed.",
            )

    # --- helpers ----------------------------------------------------------------------------

    def _load(self) -> Structure:
        return Structure(self.repository.load())

    def _commit(
        self,
        saves: Sequence[ProfileItem] = (),
        moves: Sequence[ProfileItem] = (),
        deletes: Sequence[ProfileItem] = (),
        audit: Sequence[Any] = (),
    ) -> None:
        from chalicelib.store.profile import StaleStructure

        try:
            self.repository.commit(saves=saves, moves=moves, deletes=deletes, audit=audit)
        except StaleStructure:
            # A lost race is a state conflict like any other (key `state`, CONTRACT §6).
            raise Conflict(
                "state",
                "",
                "The profile structure changed while this request ran: reload it and try again.",
            ) from None

    def _section(self, structure: Structure, section_id: int) -> ProfileItem:
        section = structure.sections.get(section_id)
        if section is None:
            raise NotFound("sectionId", section_id, "profile section")
        return section

    def _field(self, structure: Structure, field_id: str) -> ProfileItem:
        field = structure.fields.get(field_id)
        if field is None:
            raise NotFound("fieldId", field_id, "profile field")
        return field

    def _section_out(self, section: ProfileItem) -> SectionOut:
        visibility = int(section.default_visibility_id or 0)
        return SectionOut(
            id=int(section.section_id),
            name=section.name,
            position=int(section.position),
            default_visibility_id=visibility,
            default_visibility_name=VISIBILITY_NAMES.get(visibility, ""),
        )

    def _field_out(self, structure: Structure, field: ProfileItem) -> FieldOut:
        section = structure.sections.get(int(field.section_id))
        parent = structure.fields.get(field.parent_id) if field.parent_id else None
        selected = field.parent_selected_value_id or ""
        return FieldOut(
            id=field.field_id or "",
            name=field.name,
            type_id=int(field.type_id or 0),
            type_name=FieldType(int(field.type_id or 0)).name,
            position=int(field.position),
            section_id=int(field.section_id),
            section_name=section.name if section else "",
            parent_id=field.parent_id or "",
            parent_name=parent.name if parent else "",
            parent_selected_value_id=selected,
            parent_selected_value_name=_option_keys(parent).get(selected, "") if parent else "",
            data=field.data or {},
        )

    def _mandatory(self, key: str, name: str) -> FieldOut:
        return FieldOut(
            id=guid_for(f"mandatory:{key}"),
            name=name,
            type_id=int(FieldType.TextBox),
            type_name=FieldType.TextBox.name,
            position=0,
            section_id=0,
            section_name="",
            data={},
        )


def _data_of(body: FieldBody) -> FieldData:
    """The body's `data` as its type's model: a body parsed by `field_body_model` holds it so."""
    data: object = body.data
    if isinstance(data, FieldData):
        return data
    return DATA_MODELS[body.type_id].model_validate(data)


# What a change of the profile structure records (CONTRACT §12): attribute → the API's name.
_AUDITED = {
    "name": "name",
    "default_visibility_id": "defaultVisibilityId",
    "type_id": "typeId",
    "section_id": "sectionId",
    "parent_id": "parentId",
    "parent_selected_value_id": "parentSelectedValueId",
    "data": "data",
    "position": "position",
}


def _audit_fields(item: ProfileItem) -> dict[str, Any]:
    names = {a: n for a, n in _AUDITED.items() if getattr(item, a, None) is not None}
    return audit.fields_of(item, names) or {}


def _audited(
    verb: str, before: dict[str, Any] | None, after: ProfileItem | None, item: Any = None
) -> list[audit.AuditEntry]:
    """`before` the item as read (None: new), `after` as written (None: deleted)."""
    item = item or after
    field = item.kind == "field"
    return audit.entry(
        f"{'profileField' if field else 'profileSection'}.{verb}",
        target=(
            "profileField" if field else "profileSection",
            item.field_id if field else item.section_id,
        ),
        group_id=None,
        before=before,
        after=_audit_fields(after) if after is not None else None,
    )
