"""The profile structure's rules (CONTRACT §8) on the in-memory repository: no AWS, milliseconds."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest

from chalicelib.errors import Conflict, NotFound, ValidationFailed
from chalicelib.schemas.profile import (
    FieldUpdate,
    SectionCreate,
    SectionUpdate,
    field_body_model,
)
from chalicelib.schemas.profile_fields import FieldType
from chalicelib.services.profile import ProfileService
from tests.support.fakes import FakeProfileRepository


def parse(body: dict[str, Any]):
    return field_body_model(FieldType(body["typeId"])).model_validate(body)


@pytest.fixture
def service() -> ProfileService:
    return ProfileService(FakeProfileRepository())


def sections(service: ProfileService) -> list[tuple[str, int]]:
    return [(s.name, s.position) for s in service.structure().sections]


def add_field(service: ProfileService, section_id: int, name: str, **extra: Any):
    body = {"sectionId": section_id, "name": name, "typeId": int(FieldType.TextBox), **extra}
    return service.create_field(parse(body), set(body.get("data") or {}))


def add_list(service: ProfileService, section_id: int, name: str, values: list[str]):
    data = {"options": [{"value": v} for v in values]}
    return add_field(service, section_id, name, typeId=int(FieldType.DropDownList), data=data)


def failure(raised: pytest.ExceptionInfo) -> tuple[str, str]:
    (error,) = raised.value.errors
    return error.key, error.message


def test_a_section_placed_first_moves_the_others_down(service):
    service.create_section(SectionCreate(name="A"))
    service.create_section(SectionCreate(name="B"))
    service.create_section(SectionCreate(name="C", position=1))
    assert sections(service) == [("C", 1), ("A", 2), ("B", 3)]


def test_a_section_moved_past_the_end_goes_last(service):
    a = service.create_section(SectionCreate(name="A"))
    service.create_section(SectionCreate(name="B"))
    service.update_section(a.id, SectionUpdate(position=99))
    assert sections(service) == [("B", 1), ("A", 2)]


def test_section_names_are_unique_whatever_their_case(service):
    service.create_section(SectionCreate(name="Contact"))
    with pytest.raises(ValidationFailed) as raised:
        service.create_section(SectionCreate(name="CONTACT"))
    assert failure(raised) == ("name", "another section already has this name")
    assert sections(service) == [("Contact", 1)]


def test_a_section_with_fields_cannot_be_deleted(service):
    section = service.create_section(SectionCreate(name="A"))
    add_field(service, section.id, "Phone")
    with pytest.raises(Conflict) as raised:
        service.delete_section(section.id)
    assert raised.value.errors[0].key == "fields"
    assert sections(service) == [("A", 1)]


def test_an_unknown_section_is_a_validation_error_of_the_body_and_a_404_of_the_path(service):
    with pytest.raises(ValidationFailed) as raised:
        add_field(service, 42, "Phone")
    assert failure(raised) == ("sectionId", "no profile section has this id")
    with pytest.raises(NotFound):
        service.delete_section(42)


def test_field_names_are_unique_within_their_section_only(service):
    a = service.create_section(SectionCreate(name="A"))
    b = service.create_section(SectionCreate(name="B"))
    add_field(service, a.id, "Phone")
    add_field(service, b.id, "phone")
    with pytest.raises(ValidationFailed) as raised:
        add_field(service, a.id, "PHONE")
    assert failure(raised) == ("name", "another field of this section has this name")


def test_a_parent_must_be_a_list_and_the_value_one_of_its_option_keys(service):
    section = service.create_section(SectionCreate(name="A"))
    text = add_field(service, section.id, "Phone")
    colours = add_list(service, section.id, "Colour", ["Red", "Blue"])
    red = colours.data["options"][0]["key"]
    with pytest.raises(ValidationFailed) as raised:
        add_field(service, section.id, "Shade", parentId=text.id, parentSelectedValueId=red)
    assert failure(raised)[0] == "parentId"
    with pytest.raises(ValidationFailed) as raised:
        add_field(
            service,
            section.id,
            "Shade",
            parentId=colours.id,
            parentSelectedValueId=str(uuid.uuid4()),
        )
    assert failure(raised) == (
        "parentSelectedValueId",
        "is not the key of one of the parent's options",
    )
    shade = add_field(service, section.id, "Shade", parentId=colours.id, parentSelectedValueId=red)
    assert (shade.parent_name, shade.parent_selected_value_name) == ("Colour", "Red")


def test_an_option_a_child_depends_on_cannot_be_removed(service):
    section = service.create_section(SectionCreate(name="A"))
    colours = add_list(service, section.id, "Colour", ["Red", "Blue"])
    red, blue = (o["key"] for o in colours.data["options"])
    add_field(service, section.id, "Shade", parentId=colours.id, parentSelectedValueId=red)
    sent = {"data": {"options": [{"key": blue, "value": "Blue"}]}}
    with pytest.raises(Conflict) as raised:
        service.update_field(colours.id, sent, FieldUpdate.model_validate(sent), parse)
    assert raised.value.errors[0].key == "data.options"


def test_two_options_with_the_same_value_are_refused(service):
    section = service.create_section(SectionCreate(name="A"))
    with pytest.raises(ValidationFailed) as raised:
        add_list(service, section.id, "Colour", ["Red", "red"])
    assert failure(raised) == ("data.options.1.value", "is the value of another option too")


def test_a_structure_changed_between_read_and_write_is_a_409(service):
    section = service.create_section(SectionCreate(name="A"))
    store = service.repository

    class RivalWritesAfterOurRead(FakeProfileRepository):
        def load(self):
            ours = store.load()
            store.commit(saves=[dataclasses.replace(store.load()[0], name="Rival")])
            return ours

        def commit(self, **changes):
            store.commit(**changes)

    with pytest.raises(Conflict) as raised:
        ProfileService(RivalWritesAfterOurRead()).update_section(
            section.id, SectionUpdate(name="Late")
        )
    assert raised.value.status == 409
    assert sections(service) == [("Rival", 1)]
