"""Profile structure: sections, fields and their rules (spec "Profile structure", CONTRACT §8).

The whole structure is read once per request (one Query: it is small administration data), the
rules are checked against it in memory, and the changed records are written in one transaction.
Names shown beside ids (sectionName, parentName, parentSelectedValueName) are resolved when the
structure is answered, so renaming a section or an option needs no rewrite of other records.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from chalicelib.domain import audit
from chalicelib.domain.json import JsonObject
from chalicelib.domain.ports.people import ProfileStore
from chalicelib.domain.profile import ProfileField, ProfileItem, ProfileSection, StaleStructure
from chalicelib.errors import Conflict, NotFound, ValidationFailed
from chalicelib.schemas import profile as schema
from chalicelib.schemas.profile_fields import DATA_MODELS, PARENT_TYPES, FieldData, FieldType
from chalicelib.services.profile_data import (
    MANDATORY_FIELDS,
    guid_for,
    merge,
    options_of,
    settle_data,
)

# A section among sections, or a field among its section's fields.
Placed = TypeVar("Placed", bound=ProfileItem)
Key = TypeVar("Key")
Found = TypeVar("Found")


def _order(record: ProfileItem) -> tuple[int, str]:
    return record.position, record.item_key


def _renumber(ordered: Sequence[Placed], skip: Placed | None = None) -> list[Placed]:
    """Positions 1..n in list order: the records (other than `skip`) whose position changed, as
    changed."""
    return [
        replace(record, position=number)
        for number, record in enumerate(ordered, start=1)
        if record is not skip and record.position != number
    ]


def _place(
    siblings: Sequence[Placed], record: Placed, wanted: int | None
) -> tuple[Placed, list[Placed]]:
    """`record` at position `wanted` (last when None or past the end) among `siblings`: the record
    as placed, and the siblings that moved."""
    at: int = len(siblings) if wanted is None else min(wanted - 1, len(siblings))
    ordered = [*siblings]
    ordered.insert(at, record)
    number = next(n for n, r in enumerate(ordered, start=1) if r is record)
    return replace(record, position=number), _renumber(ordered, skip=record)


class Structure:
    """The stored structure, indexed for the rules."""

    def __init__(self, records: Sequence[ProfileItem]) -> None:
        self.sections = {r.section_id: r for r in records if isinstance(r, ProfileSection)}
        self.fields = {r.field_id: r for r in records if isinstance(r, ProfileField)}

    def ordered_sections(self, without: ProfileSection | None = None) -> list[ProfileSection]:
        return sorted((s for s in self.sections.values() if s is not without), key=_order)

    def fields_in(self, section_id: int, without: ProfileField | None = None) -> list[ProfileField]:
        return sorted(
            (f for f in self.fields.values() if f.section_id == section_id and f is not without),
            key=_order,
        )

    def children_of(self, field_id: str) -> list[ProfileField]:
        return sorted((f for f in self.fields.values() if f.parent_id == field_id), key=_order)


class ProfileService:
    def __init__(self, repository: ProfileStore) -> None:
        self.repository = repository

    # --- reads ------------------------------------------------------------------------------

    def structure(self) -> schema.ProfileOut:
        structure = self._load()
        return schema.ProfileOut(
            mandatory_fields=[_mandatory(key, name) for key, name in MANDATORY_FIELDS],
            # No field is configured as the alias suffix: answered as "none".
            alias_aux=schema.AliasAux(),
            sections=[
                schema.SectionWithFields(
                    **_section_out(section).model_dump(),
                    fields=[
                        _field_out(structure, f) for f in structure.fields_in(section.section_id)
                    ],
                )
                for section in structure.ordered_sections()
            ],
        )

    # --- sections ---------------------------------------------------------------------------

    def create_section(self, body: schema.SectionCreate) -> schema.SectionOut:
        structure = self._load()
        _check_section_name(structure, body.name, None)
        section = ProfileSection(
            section_id=self.repository.next_section_id(),
            name=body.name,
            position=0,
            default_visibility_id=body.default_visibility_id,
        )
        section, moves = _place(structure.ordered_sections(), section, body.position)
        self._commit(saves=[section], moves=moves, audit=_audited("create", section, None, section))
        return _section_out(section)

    def update_section(self, section_id: int, body: schema.SectionUpdate) -> schema.SectionOut:
        structure = self._load()
        section = self._section(structure, section_id)
        changed = section
        if body.name is not None:
            _check_section_name(structure, body.name, section)
            changed = replace(changed, name=body.name)
        if body.default_visibility_id is not None:
            changed = replace(changed, default_visibility_id=body.default_visibility_id)
        moves: list[ProfileSection] = []
        if body.position is not None:
            rest = structure.ordered_sections(without=section)
            changed, moves = _place(rest, changed, body.position)
        entry = _audited("update", section, _audit_fields(section), changed)
        self._commit(saves=[changed], moves=moves, audit=entry)
        return _section_out(changed)

    def delete_section(self, section_id: int) -> schema.SectionOut:
        structure = self._load()
        section = self._section(structure, section_id)
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
        return _section_out(section)

    # --- fields -----------------------------------------------------------------------------

    def create_field(self, body: schema.FieldBody, sent_data_keys: set[str]) -> schema.FieldOut:
        structure = self._load()
        section = _body_section(structure, body.section_id)
        _check_field_name(structure, body, None)
        field_id = str(uuid.uuid4())
        data = settle_data(body.type_id, _data_of(body), sent_keys=sent_data_keys)
        _check_parent(structure, field_id, body)
        field = ProfileField(
            field_id=field_id,
            name=body.name,
            position=0,
            section_id=section.section_id,
            type_id=int(body.type_id),
            parent_id=body.parent_id,
            parent_selected_value_id=body.parent_selected_value_id,
            data=data,
        )
        field, moves = _place(structure.fields_in(body.section_id), field, body.position)
        self._commit(saves=[field], moves=moves, audit=_audited("create", field, None, field))
        structure.fields[field_id] = field
        return _field_out(structure, field)

    def update_field(
        self,
        field_id: str,
        sent: JsonObject,
        update: schema.FieldUpdate,
        parse: Callable[[JsonObject], schema.FieldBody],
    ) -> schema.FieldOut:
        """`sent` is the body as sent: laid over the stored field, the whole is checked again by
        `parse` (the API layer's, as for a new field)."""
        structure = self._load()
        field = self._field(structure, field_id)
        merged, sent_data_keys = merge(field, sent, update)
        body = parse(merged)
        _body_section(structure, body.section_id)
        _check_field_name(structure, body, field)
        data = settle_data(body.type_id, _data_of(body), sent_keys=sent_data_keys)
        _check_parent(structure, field_id, body)
        _check_children(structure, field, body.type_id, data)

        changed = replace(
            field,
            name=body.name,
            type_id=int(body.type_id),
            section_id=body.section_id,
            parent_id=body.parent_id,
            parent_selected_value_id=body.parent_selected_value_id,
            data=data,
        )
        moves: list[ProfileField] = []
        if body.section_id != field.section_id:
            moves += _renumber(structure.fields_in(field.section_id, without=field))
            changed, moved = _place(structure.fields_in(body.section_id), changed, body.position)
        else:
            siblings = structure.fields_in(field.section_id)
            wanted = body.position or siblings.index(field) + 1
            rest = structure.fields_in(field.section_id, without=field)
            changed, moved = _place(rest, changed, wanted)
        entry = _audited("update", field, _audit_fields(field), changed)
        self._commit(saves=[changed], moves=[*moves, *moved], audit=entry)
        return _field_out(structure, changed)

    def delete_field(self, field_id: str) -> schema.FieldOut:
        structure = self._load()
        field = self._field(structure, field_id)
        answer = _field_out(structure, field)
        self._delete_unless_held(
            field,
            rest=structure.fields_in(field.section_id, without=field),
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
        item: Placed,
        *,
        rest: list[Placed],
        held_by: Sequence[ProfileField],
        refusal: Callable[[str], Conflict],
    ) -> None:
        """Delete `item` and renumber the rest of its list, unless items hang on it (a section's
        fields, a field's children): deleting it would orphan them, so `refusal` names them."""
        if held_by:
            raise refusal(", ".join(i.name for i in held_by))
        entry = _audited("delete", item, _audit_fields(item), None)
        self._commit(moves=_renumber(rest), deletes=[item], audit=entry)

    # --- helpers ----------------------------------------------------------------------------

    def _load(self) -> Structure:
        return Structure(self.repository.load())

    def _commit(
        self,
        saves: Sequence[ProfileItem] = (),
        moves: Sequence[ProfileItem] = (),
        deletes: Sequence[ProfileItem] = (),
        audit: Sequence[audit.AuditEntry] = (),
    ) -> None:
        try:
            self.repository.commit(saves=saves, moves=moves, deletes=deletes, audit=audit)
        except StaleStructure:
            # A lost race is a state conflict like any other (key `state`, CONTRACT §6).
            raise Conflict(
                "state",
                "",
                "The profile structure changed while this request ran: reload it and try again.",
            ) from None

    @staticmethod
    def _section(structure: Structure, section_id: int) -> ProfileSection:
        return _found(
            structure.sections, section_id, NotFound("sectionId", section_id, "profile section")
        )

    @staticmethod
    def _field(structure: Structure, field_id: str) -> ProfileField:
        return _found(structure.fields, field_id, NotFound("fieldId", field_id, "profile field"))


# --- rules ------------------------------------------------------------------------------------


def _check_section_name(structure: Structure, name: str, section: ProfileSection | None) -> None:
    for other in structure.sections.values():
        if other is not section and other.name.casefold() == name.casefold():
            raise ValidationFailed.one("name", name, "another section already has this name")


def _check_field_name(
    structure: Structure, body: schema.FieldBody, field: ProfileField | None
) -> None:
    for other in structure.fields_in(body.section_id, without=field):
        if other.name.casefold() == body.name.casefold():
            raise ValidationFailed.one(
                "name", body.name, "another field of this section has this name"
            )


def _body_section(structure: Structure, section_id: int) -> ProfileSection:
    refusal = ValidationFailed.one("sectionId", section_id, "no profile section has this id")
    return _found(structure.sections, section_id, refusal)


def _found(records: Mapping[Key, Found], key: Key, refusal: Exception) -> Found:
    """The record of `key`, or `refusal` raised."""
    found = records.get(key)
    if found is None:
        raise refusal
    return found


def _check_parent(structure: Structure, field_id: str, body: schema.FieldBody) -> None:
    parent_id, selected = body.parent_id, body.parent_selected_value_id
    if parent_id is None:
        if selected is not None:
            raise ValidationFailed.one("parentSelectedValueId", selected, "needs a parentId")
        return
    parent = structure.fields.get(parent_id)
    if parent is None:
        raise ValidationFailed.one("parentId", parent_id, "no field has this id")
    if FieldType(parent.type_id) not in PARENT_TYPES:
        raise ValidationFailed.one(
            "parentId",
            parent_id,
            "only a DropDownList, CheckBoxList or RadioButtonList field can be a parent",
        )
    ancestor: ProfileField | None = parent
    while ancestor is not None:
        if ancestor.field_id == field_id:
            raise ValidationFailed.one("parentId", parent_id, "a field cannot be its own ancestor")
        ancestor = structure.fields.get(ancestor.parent_id) if ancestor.parent_id else None
    if selected is None:
        raise ValidationFailed.one("parentSelectedValueId", "", "is needed with a parentId")
    if selected not in options_of(parent.data):
        raise ValidationFailed.one(
            "parentSelectedValueId",
            selected,
            "is not the key of one of the parent's options",
        )


def _check_children(
    structure: Structure, field: ProfileField, field_type: FieldType, data: JsonObject
) -> None:
    children = structure.children_of(field.field_id)
    if not children:
        return
    if field_type not in PARENT_TYPES:
        raise Conflict(
            "typeId",
            int(field_type),
            "The field is a parent: it must stay a DropDownList, CheckBoxList or "
            "RadioButtonList while other fields depend on it.",
        )
    keys = options_of(data)
    missing = [c.name for c in children if c.parent_selected_value_id not in keys]
    if missing:
        raise Conflict(
            "data.options",
            "",
            f"An option that {', '.join(missing)} depend on would be removed.",
        )


# --- answers ----------------------------------------------------------------------------------


def _section_out(section: ProfileSection) -> schema.SectionOut:
    visibility = section.default_visibility_id or 0
    return schema.SectionOut(
        id=section.section_id,
        name=section.name,
        position=section.position,
        default_visibility_id=visibility,
        default_visibility_name=schema.VISIBILITY_NAMES.get(visibility, ""),
    )


def _field_out(structure: Structure, field: ProfileField) -> schema.FieldOut:
    section = structure.sections.get(field.section_id)
    parent = structure.fields.get(field.parent_id) if field.parent_id else None
    selected = field.parent_selected_value_id or ""
    return schema.FieldOut(
        id=field.field_id,
        name=field.name,
        type_id=field.type_id,
        type_name=FieldType(field.type_id).name,
        position=field.position,
        section_id=field.section_id,
        section_name=section.name if section else "",
        parent_id=field.parent_id or "",
        parent_name=parent.name if parent else "",
        parent_selected_value_id=selected,
        parent_selected_value_name=options_of(parent.data).get(selected, "") if parent else "",
        data=field.data,
    )


def _mandatory(key: str, name: str) -> schema.FieldOut:
    return schema.FieldOut(
        id=guid_for(f"mandatory:{key}"),
        name=name,
        type_id=int(FieldType.TextBox),
        type_name=FieldType.TextBox.name,
        position=0,
        section_id=0,
        section_name="",
        data={},
    )


def _data_of(body: schema.FieldBody) -> FieldData:
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


def _audit_fields(item: ProfileItem) -> dict[str, object]:
    names = {a: n for a, n in _AUDITED.items() if getattr(item, a, None) is not None}
    return audit.fields_of(item, names) or {}


def _audited(
    verb: str,
    item: ProfileItem,
    before: Mapping[str, object] | None,
    after: ProfileItem | None,
) -> list[audit.AuditEntry]:
    """The change of `item`: `before` it as read (None: new), `after` as written (None:
    deleted)."""
    kind = "profileField" if isinstance(item, ProfileField) else "profileSection"
    return audit.entry(
        f"{kind}.{verb}",
        target=(kind, item.field_id if isinstance(item, ProfileField) else item.section_id),
        group_id=None,
        before=before,
        after=_audit_fields(after) if after is not None else None,
    )
