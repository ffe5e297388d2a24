"""Profile structure: sections, fields of every type, their rules, positions and privileges."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

PROFILE = "/api/v1/en_US/profile"
SECTION = f"{PROFILE}/section"
FIELD = f"{PROFILE}/field"


@pytest.fixture
def people(community):
    c = community
    c.garden = c.group("garden")
    c.admin = c.users[0]["id"]
    c.garden_admin = c.user("garden-admin", {c.garden: "administrator"})
    c.root_member = c.user("root-member", {c.root: "member"})
    return c.load()


@pytest.fixture
def admin(people) -> str:
    return people.admin


def make_section(api, admin: str, name: str = "About me", **extra: Any) -> dict:
    status, body = api.post(SECTION, admin, {"name": name, **extra})
    assert status == 200, body
    return body["object"]


def make_field(api, admin: str, section_id: int, type_id: int, name: str, **extra: Any) -> dict:
    status, body = api.post(
        FIELD, admin, {"sectionId": section_id, "name": name, "typeId": type_id, **extra}
    )
    assert status == 200, body
    return body["object"]


def about_field(api, admin: str, type_id: int, name: str, **extra: Any) -> dict:
    """A field made in a new section About."""
    return make_field(api, admin, make_section(api, admin, "About")["id"], type_id, name, **extra)


def structure(api, admin: str) -> dict:
    status, body = api.get(PROFILE, admin)
    assert status == 200, body
    return body["object"]


def field_in_structure(api, admin: str, field_id: str) -> dict:
    for section in structure(api, admin)["sections"]:
        for field in section["fields"]:
            if field["id"] == field_id:
                return field
    raise AssertionError(f"field {field_id} is not in the profile structure")


def error_keys(body: dict) -> list[str]:
    return [e["key"] for e in body["errors"]]


def names(items: list[dict]) -> list[tuple[str, int]]:
    return [(item["name"], item["position"]) for item in items]


# --- the structure --------------------------------------------------------------------------------


def test_new_profile_has_mandatory_fields_no_alias_suffix_and_no_sections(api, admin):
    profile = structure(api, admin)
    assert [f["name"] for f in profile["mandatoryFields"]] == ["Alias", "Email"]
    for field in profile["mandatoryFields"]:
        uuid.UUID(field["id"])
        assert field["typeId"] == 1 and field["typeName"] == "TextBox"
        assert field["data"] == {}
        assert field["position"] == 0 and field["sectionId"] == 0
        assert field["sectionName"] == "" and field["parentId"] == "" and field["parentName"] == ""
        assert field["parentSelectedValueId"] == "" and field["parentSelectedValueName"] == ""
        assert field["accessWarnings"] == []
    assert profile["aliasAux"] == {
        "sectionId": 0,
        "sectionName": "",
        "fieldId": "",
        "fieldName": "",
    }
    assert profile["sections"] == []
    assert profile["accessWarnings"] == []


def test_structure_lists_sections_and_their_fields_by_position(api, admin):
    work = make_section(api, admin, "Work")
    about = make_section(api, admin, "About", position=1)
    make_field(api, admin, work["id"], 1, "Employer")
    make_field(api, admin, about["id"], 1, "Nickname")
    make_field(api, admin, about["id"], 2, "Vegetarian", position=1)

    sections = structure(api, admin)["sections"]
    assert names(sections) == [("About", 1), ("Work", 2)]
    assert names(sections[0]["fields"]) == [("Vegetarian", 1), ("Nickname", 2)]
    assert names(sections[1]["fields"]) == [("Employer", 1)]
    assert sections[0]["fields"][0]["sectionName"] == "About"


def test_structure_is_read_with_one_query_and_no_scan(api, admin, dynamo_counter):
    for number in range(4):
        section = make_section(api, admin, f"Section {number}")
        for kind in (1, 2, 8):
            make_field(api, admin, section["id"], kind, f"Field {kind}")
    dynamo_counter.reset()

    profile = structure(api, admin)

    assert len(profile["sections"]) == 4
    assert "Scan" not in dynamo_counter.requests
    assert dynamo_counter.requests.get("Query", 0) == 1
    # The caller's own record (sign-in) and the root group are the only other reads.
    assert dynamo_counter.total <= 4


# --- sections -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("visibility", "label"),
    [(0, "Nobody"), (1, "My Connections"), (2, "Community"), (3, "Everyone")],
)
def test_section_create_answers_its_default_visibility_name(api, admin, visibility, label):
    status, body = api.post(
        SECTION, admin, {"name": "  Contact  ", "position": 1, "defaultVisibilityId": visibility}
    )
    assert status == 200 and body["success"] is True
    section = body["object"]
    assert isinstance(section["id"], int) and section["id"] > 0
    assert section["name"] == "Contact"
    assert section["position"] == 1
    assert section["defaultVisibilityId"] == visibility
    assert section["defaultVisibilityName"] == label
    assert section["accessWarnings"] == []
    assert "fields" not in section


def test_section_ids_are_distinct_integers_and_visibility_defaults_to_community(api, admin):
    first = make_section(api, admin, "One")
    second = make_section(api, admin, "Two")
    assert second["id"] > first["id"]
    assert (first["defaultVisibilityId"], first["defaultVisibilityName"]) == (2, "Community")


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ({"name": "Contact", "defaultVisibilityId": 4}, "defaultVisibilityId"),
        ({"name": "Contact", "defaultVisibilityId": -1}, "defaultVisibilityId"),
        ({"name": "   "}, "name"),
        ({}, "name"),
        ({"name": "x" * 256}, "name"),
        ({"name": "Contact", "position": 0}, "position"),
        ({"name": "Contact", "position": "first"}, "position"),
    ],
)
def test_section_create_rejects_invalid_values_with_their_key(api, admin, body, key):
    status, answer = api.post(SECTION, admin, body)
    assert status == 400 and answer["success"] is False
    assert error_keys(answer) == [key]
    assert answer["object"] == body
    assert structure(api, admin)["sections"] == []


def test_section_name_taken_is_400_with_key_name(api, admin):
    make_section(api, admin, "Contact")
    status, body = api.post(SECTION, admin, {"name": "contact"})
    assert status == 400 and error_keys(body) == ["name"]


def test_section_inserted_at_a_position_moves_the_others_down(api, admin):
    for name in ("A", "B", "C"):
        make_section(api, admin, name)
    inserted = make_section(api, admin, "D", position=2)
    last = make_section(api, admin, "E", position=99)

    assert inserted["position"] == 2
    assert last["position"] == 5
    assert names(structure(api, admin)["sections"]) == [
        ("A", 1),
        ("D", 2),
        ("B", 3),
        ("C", 4),
        ("E", 5),
    ]


def test_section_update_renames_moves_and_changes_visibility(api, admin):
    a = make_section(api, admin, "A")
    make_section(api, admin, "B")
    c = make_section(api, admin, "C")
    make_field(api, admin, a["id"], 1, "Nickname")

    status, body = api.put(
        f"{SECTION}/{a['id']}", admin, {"name": "Alpha", "position": 3, "defaultVisibilityId": 0}
    )
    assert status == 200, body
    assert body["object"] == {
        "accessWarnings": [],
        "id": a["id"],
        "name": "Alpha",
        "position": 3,
        "defaultVisibilityId": 0,
        "defaultVisibilityName": "Nobody",
    }
    status, body = api.put(f"{SECTION}/{c['id']}", admin, {"position": 1})
    assert status == 200 and body["object"]["name"] == "C"

    sections = structure(api, admin)["sections"]
    assert names(sections) == [("C", 1), ("B", 2), ("Alpha", 3)]
    assert sections[2]["fields"][0]["sectionName"] == "Alpha"


def test_section_update_rejects_a_name_taken_by_another_section(api, admin):
    make_section(api, admin, "A")
    b = make_section(api, admin, "B")
    status, body = api.put(f"{SECTION}/{b['id']}", admin, {"name": "a"})
    assert status == 400 and error_keys(body) == ["name"]
    status, body = api.put(f"{SECTION}/{b['id']}", admin, {"name": "b"})
    assert status == 200 and body["object"]["name"] == "b"


def test_section_with_fields_cannot_be_deleted(api, admin):
    section = make_section(api, admin, "About")
    field = make_field(api, admin, section["id"], 1, "Nickname")

    status, body = api.delete(f"{SECTION}/{section['id']}", admin)

    assert status == 409 and body["success"] is False
    assert body["errors"][0]["key"] == "fields"
    assert "Nickname" in body["errors"][0]["message"]
    assert len(structure(api, admin)["sections"]) == 1

    assert api.delete(f"{FIELD}/{field['id']}", admin)[0] == 200
    status, body = api.delete(f"{SECTION}/{section['id']}", admin)
    assert status == 200
    assert body["object"]["id"] == section["id"] and body["object"]["name"] == "About"
    assert structure(api, admin)["sections"] == []


def test_section_delete_closes_the_gap_in_positions(api, admin):
    make_section(api, admin, "A")
    b = make_section(api, admin, "B")
    make_section(api, admin, "C")
    assert api.delete(f"{SECTION}/{b['id']}", admin)[0] == 200
    assert names(structure(api, admin)["sections"]) == [("A", 1), ("C", 2)]
    assert make_section(api, admin, "D")["position"] == 3


# --- fields of every type: create, then read back -------------------------------------------------

RED = "11111111-1111-4111-8111-111111111111"
BLUE = "22222222-2222-4222-8222-222222222222"


def option(key: str, value: str, position: int) -> dict[str, Any]:
    """An option as a list field answers it."""
    return {"key": key, "value": value, "position": position}


# What a field answers for what it was not sent: not required, no message.
OPTIONAL = {"required": False, "requiredMessage": ""}
TEXT_BOX = {
    "taggable": True,
    "description": " Shown below ",
    "type": "singleline",
    "maxLength": 40,
    "required": True,
    "requiredMessage": "Needed",
    "defaultValue": "n/a",
    "validateRegEx": "^[a-z/]+$",
    "validateMessage": "Letters only",
}
RADIO_BUTTONS = {
    "direction": "Vertical",
    "columns": 2,
    "options": [{"key": RED, "value": "Red"}, {"key": BLUE, "value": "Blue"}],
    "defaultValue": option(RED, "Red", 1),
}
AUTO_COMPLETE = {
    "taggable": True,
    "defaultValue": "Paris",
    "maxLength": 60,
    "allowFreeInput": True,
    "displayAsDropDown": True,
    "enableRemoteDataSource": True,
    "remoteDataSourceUrl": "https://example.org/cities",
    "options": [{"key": "paris", "value": "Paris"}, {"key": "rome", "value": "Rome"}],
}

# (typeId, typeName, data sent, data answered)
TYPE_CASES = [
    (
        1,
        "TextBox",
        TEXT_BOX,
        {**TEXT_BOX, "description": "Shown below", "type": "SingleLine", "lines": 0},
    ),
    (
        2,
        "Checkbox",
        {"description": "Tick it", "defaultValue": True, "required": True},
        {
            "taggable": False,
            "description": "Tick it",
            "defaultValue": True,
            "required": True,
            "requiredMessage": "",
        },
    ),
    (
        3,
        "DropDownList",
        {
            "taggable": True,
            "required": True,
            "requiredMessage": "Pick one",
            "options": [{"key": RED, "value": "Red"}, {"key": BLUE, "value": "Blue"}],
            "defaultValue": BLUE,
        },
        {
            "taggable": True,
            "description": "",
            "defaultValue": option(BLUE, "Blue", 2),
            "required": True,
            "requiredMessage": "Pick one",
            "options": [option(RED, "Red", 1), option(BLUE, "Blue", 2)],
        },
    ),
    (
        4,
        "CheckBoxList",
        {
            "direction": "horizontal",
            "columns": 3,
            "options": [option(RED, "Red", 2), option(BLUE, "Blue", 1)],
        },
        {
            "taggable": False,
            "direction": "Horizontal",
            "columns": 3,
            **OPTIONAL,
            "options": [option(BLUE, "Blue", 1), option(RED, "Red", 2)],
        },
    ),
    (
        5,
        "URLBox",
        {"type": "url", "maxLength": 200, "defaultValue": "https://example.org/me"},
        {
            "taggable": False,
            "description": "",
            "type": "url",
            "maxLength": 200,
            **OPTIONAL,
            "defaultValue": "https://example.org/me",
        },
    ),
    (6, "DescriptionBox", {"description": "Tell us"}, {"description": "Tell us"}),
    (
        7,
        "RadioButtonList",
        RADIO_BUTTONS,
        {
            **RADIO_BUTTONS,
            "taggable": False,
            **OPTIONAL,
            "options": [option(RED, "Red", 1), option(BLUE, "Blue", 2)],
        },
    ),
    # CountryDropDownList: see test_country_list_is_prefilled_with_iso_3166_countries.
    (
        9,
        "HTMLBox",
        {"defaultValue": "<p>Hi<script>x()</script></p>", "required": True},
        {"description": "", "defaultValue": "<p>Hi</p>", "required": True, "requiredMessage": ""},
    ),
    (10, "WorkHistory", {"taggable": True}, {"taggable": True}),
    (
        11,
        "Education",
        {"options": [{"key": RED, "value": "School"}], "defaultValue": "school"},
        {
            "taggable": False,
            "defaultValue": option(RED, "School", 1),
            "description": "",
            "options": [option(RED, "School", 1)],
        },
    ),
    (
        12,
        "AutoCompleteTextBox",
        AUTO_COMPLETE,
        {
            **AUTO_COMPLETE,
            "description": "",
            **OPTIONAL,
            "validateRegEx": "",
            "validateMessage": "",
            "options": [option("paris", "Paris", 1), option("rome", "Rome", 2)],
        },
    ),
    (
        13,
        "URLList",
        {"description": "Your sites", "maxLength": 300, "required": True},
        {"description": "Your sites", "maxLength": 300, "required": True, "requiredMessage": ""},
    ),
]


@pytest.mark.parametrize(
    ("type_id", "type_name", "sent", "answered"),
    TYPE_CASES,
    ids=[case[1] for case in TYPE_CASES],
)
def test_field_of_each_type_is_created_and_read_back(
    api, admin, type_id, type_name, sent, answered
):
    section = make_section(api, admin, "About")
    status, body = api.post(
        FIELD,
        admin,
        {"sectionId": section["id"], "name": f" My {type_name} ", "typeId": type_id, "data": sent},
    )
    assert status == 200 and body["success"] is True, body
    created = body["object"]
    uuid.UUID(created["id"])
    assert created == {
        "accessWarnings": [],
        "id": created["id"],
        "name": f"My {type_name}",
        "typeId": type_id,
        "typeName": type_name,
        "position": 1,
        "sectionId": section["id"],
        "sectionName": "About",
        "parentId": "",
        "parentName": "",
        "parentSelectedValueId": "",
        "parentSelectedValueName": "",
        "data": answered,
    }
    assert field_in_structure(api, admin, created["id"]) == created


def test_country_list_is_prefilled_with_iso_3166_countries(api, admin):
    import pycountry

    created = about_field(api, admin, 8, "Country", data={"required": True})

    assert created["typeName"] == "CountryDropDownList"
    data = created["data"]
    assert data["required"] is True and data["defaultValue"] is None
    options = data["options"]
    assert len(options) == len(pycountry.countries)
    assert [o["position"] for o in options] == list(range(1, len(options) + 1))
    values = [o["value"] for o in options]
    assert values == sorted(values, key=str.casefold)
    assert {"France", "Japan", "Brazil"} <= set(values)
    assert all(str(uuid.UUID(o["key"])) == o["key"] for o in options)
    assert field_in_structure(api, admin, created["id"])["data"] == data

    # A country has the same key in every country list, so values compare across fields.
    other = make_field(api, admin, created["sectionId"], 8, "Country of birth")
    assert other["data"]["options"] == options


def test_country_default_may_be_named_by_country_name(api, admin):
    created = about_field(api, admin, 8, "Country", data={"defaultValue": "france"})
    assert created["data"]["defaultValue"]["value"] == "France"


def test_options_without_keys_get_guid_keys_and_positions_in_list_order(api, admin):
    created = about_field(
        api,
        admin,
        3,
        "Size",
        data={"options": [{"value": "S"}, {"value": "M"}, {"value": "L"}]},
    )
    options = created["data"]["options"]
    assert [(o["value"], o["position"]) for o in options] == [("S", 1), ("M", 2), ("L", 3)]
    assert len({o["key"] for o in options}) == 3
    assert all(str(uuid.UUID(o["key"])) == o["key"] for o in options)


def test_multiline_text_box_keeps_its_lines(api, admin):
    created = about_field(api, admin, 1, "Bio", data={"type": "MultiLine", "lines": 5})
    assert created["data"]["type"] == "MultiLine" and created["data"]["lines"] == 5


# --- field validation -----------------------------------------------------------------------------

LONG = "d" * 256


@pytest.mark.parametrize(
    ("type_id", "data", "key"),
    [
        (1, {"bogus": True}, "data.bogus"),
        (1, {"description": LONG}, "data.description"),
        (1, {"type": "MultiLine"}, "data.lines"),
        (1, {"type": "MultiLine", "lines": 0}, "data.lines"),
        (1, {"type": "hologram"}, "data.type"),
        (1, {"maxLength": 0}, "data.maxLength"),
        (1, {"maxLength": 3, "defaultValue": "toolong"}, "data.defaultValue"),
        (2, {"options": [{"value": "x"}]}, "data.options"),
        (2, {"description": LONG}, "data.description"),
        (3, {"description": LONG}, "data.description"),
        (3, {"options": [{"value": "A"}, {"value": "a"}]}, "data.options.1.value"),
        (3, {"options": [{"value": "A", "key": "not-a-guid"}]}, "data.options.0.key"),
        (
            3,
            {"options": [{"value": "A", "key": RED}, {"value": "B", "key": RED}]},
            "data.options.1.key",
        ),
        (3, {"options": [{"value": ""}]}, "data.options.0.value"),
        (3, {"options": [{"value": "A", "colour": "red"}]}, "data.options.0.colour"),
        (3, {"options": [{"value": "A"}], "defaultValue": "B"}, "data.defaultValue"),
        (3, {"options": [{"value": "A"}], "defaultValue": True}, "data.defaultValue"),
        (3, {"direction": "Vertical"}, "data.direction"),
        (4, {"direction": "Diagonal"}, "data.direction"),
        (4, {"columns": 0}, "data.columns"),
        (4, {"description": "CheckBoxList has none"}, "data.description"),
        (5, {"type": "text"}, "data.type"),
        (5, {"defaultValue": "javascript:alert(1)"}, "data.defaultValue"),
        (5, {"description": LONG}, "data.description"),
        (6, {"description": LONG}, "data.description"),
        (6, {"taggable": True}, "data.taggable"),
        (7, {"defaultValue": "nothing"}, "data.defaultValue"),
        (8, {"description": LONG}, "data.description"),
        (9, {"description": LONG}, "data.description"),
        (10, {"description": "WorkHistory has none"}, "data.description"),
        (11, {"description": LONG}, "data.description"),
        (12, {"enableRemoteDataSource": True}, "data.remoteDataSourceUrl"),
        (12, {"remoteDataSourceUrl": "ftp://example.org"}, "data.remoteDataSourceUrl"),
        (12, {"description": LONG}, "data.description"),
        (13, {"description": LONG}, "data.description"),
        (13, {"maxLength": -1}, "data.maxLength"),
        (1, "text", "data"),
    ],
)
def test_field_data_is_validated_for_its_type(api, admin, type_id, data, key):
    section = make_section(api, admin, "About")
    sent = {"sectionId": section["id"], "name": "Field", "typeId": type_id, "data": data}

    status, body = api.post(FIELD, admin, sent)

    assert status == 400 and body["success"] is False
    assert key in error_keys(body), body["errors"]
    assert body["object"] == sent
    assert structure(api, admin)["sections"][0]["fields"] == []


def test_description_of_exactly_255_characters_is_accepted(api, admin):
    created = about_field(api, admin, 6, "Intro", data={"description": "d" * 255})
    assert created["data"]["description"] == "d" * 255


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"typeId": 14}, "typeId"),
        ({"typeId": 0}, "typeId"),
        ({"typeId": None}, "typeId"),
        ({"name": ""}, "name"),
        ({"sectionId": "abc"}, "sectionId"),
        ({"sectionId": 987654}, "sectionId"),
        ({"position": -2}, "position"),
        ({"parentId": "nope"}, "parentId"),
    ],
)
def test_field_body_is_validated_with_its_keys(api, admin, change, key):
    section = make_section(api, admin, "About")
    sent = {"sectionId": section["id"], "name": "Field", "typeId": 1, **change}
    status, body = api.post(FIELD, admin, sent)
    assert status == 400
    assert error_keys(body) == [key]


def test_field_name_is_unique_within_its_section(api, admin):
    about = make_section(api, admin, "About")
    work = make_section(api, admin, "Work")
    make_field(api, admin, about["id"], 1, "Website")
    status, body = api.post(
        FIELD, admin, {"sectionId": about["id"], "name": "website", "typeId": 5}
    )
    assert status == 400 and error_keys(body) == ["name"]
    make_field(api, admin, work["id"], 5, "Website")


# --- parents --------------------------------------------------------------------------------------


@pytest.fixture
def with_parent(api, admin):
    section = make_section(api, admin, "About")
    parent = make_field(
        api,
        admin,
        section["id"],
        7,
        "Employed",
        data={"options": [{"key": RED, "value": "Yes"}, {"key": BLUE, "value": "No"}]},
    )
    return section, parent


@pytest.mark.parametrize("parent_type", [3, 4, 7])
def test_list_field_can_be_a_parent(api, admin, parent_type):
    parent = about_field(api, admin, parent_type, "Parent", data={"options": [{"value": "Yes"}]})
    key = parent["data"]["options"][0]["key"]

    child = make_field(
        api,
        admin,
        parent["sectionId"],
        1,
        "Employer",
        parentId=parent["id"].upper(),
        parentSelectedValueId=key,
    )

    assert child["parentId"] == parent["id"] and child["parentName"] == "Parent"
    assert child["parentSelectedValueId"] == key and child["parentSelectedValueName"] == "Yes"
    assert field_in_structure(api, admin, child["id"]) == child


@pytest.mark.parametrize("parent_type", [1, 2, 5, 8, 11, 12])
def test_only_enumerable_lists_can_be_parents(api, admin, parent_type):
    section = make_section(api, admin, "About")
    data = {"options": [{"value": "Yes"}]} if parent_type in (11, 12) else {}
    parent = make_field(api, admin, section["id"], parent_type, "Parent", data=data)
    options = parent["data"].get("options") or [{"key": RED}]

    status, body = api.post(
        FIELD,
        admin,
        {
            "sectionId": section["id"],
            "name": "Child",
            "typeId": 1,
            "parentId": parent["id"],
            "parentSelectedValueId": options[0]["key"] if parent_type != 12 else str(uuid.uuid4()),
        },
    )
    assert status == 400 and error_keys(body) == ["parentId"]


@pytest.mark.parametrize(
    ("link", "key"),
    [
        ({"parentId": str(uuid.uuid4()), "parentSelectedValueId": RED}, "parentId"),
        ({"parentSelectedValueId": str(uuid.uuid4())}, "parentSelectedValueId"),
        ({"parentSelectedValueId": None}, "parentSelectedValueId"),
        ({"parentId": None, "parentSelectedValueId": RED}, "parentSelectedValueId"),
        ({"parentSelectedValueId": "yes"}, "parentSelectedValueId"),
    ],
)
def test_parent_link_is_validated(api, admin, with_parent, link, key):
    section, parent = with_parent
    sent = {
        "sectionId": section["id"],
        "name": "Employer",
        "typeId": 1,
        "parentId": parent["id"],
        **link,
    }
    status, body = api.post(FIELD, admin, sent)
    assert status == 400 and error_keys(body) == [key]


def test_no_parent_may_be_sent_as_empty_values(api, admin):
    child = about_field(
        api,
        admin,
        1,
        "Nickname",
        parentId="00000000-0000-0000-0000-000000000000",
        parentSelectedValueId="",
    )
    assert child["parentId"] == "" and child["parentSelectedValueId"] == ""


def test_parent_with_children_cannot_be_deleted(api, admin, with_parent):
    section, parent = with_parent
    child = make_field(
        api, admin, section["id"], 1, "Employer", parentId=parent["id"], parentSelectedValueId=RED
    )

    status, body = api.delete(f"{FIELD}/{parent['id']}", admin)

    assert status == 409 and body["success"] is False
    assert error_keys(body) == ["fieldId"] and "Employer" in body["errors"][0]["message"]
    assert field_in_structure(api, admin, parent["id"])["name"] == "Employed"

    assert api.delete(f"{FIELD}/{child['id']}", admin)[0] == 200
    status, body = api.delete(f"{FIELD}/{parent['id']}", admin)
    assert status == 200 and body["object"]["id"] == parent["id"]
    assert structure(api, admin)["sections"][0]["fields"] == []


def test_parent_cannot_lose_an_option_or_its_list_type_while_a_child_needs_it(
    api, admin, with_parent
):
    section, parent = with_parent
    make_field(
        api, admin, section["id"], 1, "Employer", parentId=parent["id"], parentSelectedValueId=RED
    )
    path = f"{FIELD}/{parent['id']}"

    status, body = api.put(path, admin, {"data": {"options": [{"key": BLUE, "value": "No"}]}})
    assert status == 409 and error_keys(body) == ["data.options"]

    status, body = api.put(path, admin, {"typeId": 1, "data": {}})
    assert status == 409 and error_keys(body) == ["typeId"]

    # Renaming the option the child waits for is fine, and shows in the child.
    status, body = api.put(
        path,
        admin,
        {
            "data": {
                "options": [{"key": RED, "value": "Yes, employed"}, {"key": BLUE, "value": "No"}]
            }
        },
    )
    assert status == 200, body
    child = structure(api, admin)["sections"][0]["fields"][1]
    assert child["parentSelectedValueName"] == "Yes, employed"


def test_a_field_cannot_become_its_own_ancestor(api, admin, with_parent):
    section, parent = with_parent
    child = make_field(
        api,
        admin,
        section["id"],
        3,
        "Sector",
        data={"options": [{"key": RED, "value": "Public"}]},
        parentId=parent["id"],
        parentSelectedValueId=RED,
    )
    status, body = api.put(
        f"{FIELD}/{parent['id']}",
        admin,
        {"parentId": child["id"], "parentSelectedValueId": RED},
    )
    assert status == 400 and error_keys(body) == ["parentId"]


# --- field update and delete ----------------------------------------------------------------------


def test_field_update_changes_type_specific_data_and_keeps_the_rest(api, admin):
    created = about_field(
        api,
        admin,
        1,
        "Nickname",
        data={"description": "What friends call you", "maxLength": 100, "required": True},
    )

    status, body = api.put(
        f"{FIELD}/{created['id']}",
        admin,
        {"name": "Pet name", "data": {"maxLength": 20, "type": "MultiLine", "lines": 2}},
    )

    assert status == 200, body
    updated = body["object"]
    assert updated["name"] == "Pet name" and updated["id"] == created["id"]
    assert updated["data"] == {
        **created["data"],
        "maxLength": 20,
        "type": "MultiLine",
        "lines": 2,
    }
    assert field_in_structure(api, admin, created["id"]) == updated


def test_field_update_validates_the_merged_data(api, admin):
    created = about_field(api, admin, 1, "Nickname")
    path = f"{FIELD}/{created['id']}"

    for data, key in [
        ({"type": "MultiLine"}, "data.lines"),
        ({"colour": "red"}, "data.colour"),
        ({"description": LONG}, "data.description"),
    ]:
        status, body = api.put(path, admin, {"data": data})
        assert status == 400 and error_keys(body) == [key]
        assert body["object"] == {"data": data}
    assert field_in_structure(api, admin, created["id"])["data"] == created["data"]


def test_list_update_keeps_option_keys_and_drops_a_default_whose_option_is_gone(api, admin):
    created = about_field(
        api,
        admin,
        3,
        "Size",
        data={"options": [{"value": "S"}, {"value": "M"}], "defaultValue": "M"},
    )
    small, medium = created["data"]["options"]

    status, body = api.put(
        f"{FIELD}/{created['id']}",
        admin,
        {"data": {"options": [{"key": small["key"], "value": "Small"}, {"value": "L"}]}},
    )

    assert status == 200, body
    options = body["object"]["data"]["options"]
    assert options[0] == {"key": small["key"], "value": "Small", "position": 1}
    assert options[1]["value"] == "L" and options[1]["key"] != medium["key"]
    assert body["object"]["data"]["defaultValue"] is None

    # Setting the default explicitly to an option that is gone is an error, not a silent drop.
    status, body = api.put(f"{FIELD}/{created['id']}", admin, {"data": {"defaultValue": "M"}})
    assert status == 400 and error_keys(body) == ["data.defaultValue"]


def test_field_update_to_another_type_starts_from_that_types_defaults(api, admin):
    created = about_field(api, admin, 1, "Homepage", data={"maxLength": 30})

    status, body = api.put(f"{FIELD}/{created['id']}", admin, {"typeId": 5, "data": {}})

    assert status == 200, body
    assert body["object"]["typeName"] == "URLBox"
    assert body["object"]["data"]["maxLength"] == 2048 and body["object"]["data"]["type"] == "url"


def test_field_update_can_remove_the_parent(api, admin, with_parent):
    section, parent = with_parent
    child = make_field(
        api, admin, section["id"], 1, "Employer", parentId=parent["id"], parentSelectedValueId=RED
    )
    status, body = api.put(f"{FIELD}/{child['id']}", admin, {"parentId": None})
    assert status == 200, body
    assert body["object"]["parentId"] == "" and body["object"]["parentSelectedValueId"] == ""
    assert api.delete(f"{FIELD}/{parent['id']}", admin)[0] == 200


def test_field_positions_stay_in_order_after_inserts_moves_and_deletes(api, admin):
    about = make_section(api, admin, "About")
    work = make_section(api, admin, "Work")
    a = make_field(api, admin, about["id"], 1, "A")
    make_field(api, admin, about["id"], 1, "B")
    make_field(api, admin, about["id"], 1, "C")
    first = make_field(api, admin, about["id"], 1, "D", position=1)
    assert first["position"] == 1

    def about_fields() -> list[tuple[str, int]]:
        return names(structure(api, admin)["sections"][0]["fields"])

    assert about_fields() == [("D", 1), ("A", 2), ("B", 3), ("C", 4)]

    status, body = api.put(f"{FIELD}/{first['id']}", admin, {"position": 3})
    assert status == 200 and body["object"]["position"] == 3
    assert about_fields() == [("A", 1), ("B", 2), ("D", 3), ("C", 4)]

    status, body = api.put(f"{FIELD}/{a['id']}", admin, {"sectionId": work["id"]})
    assert status == 200 and body["object"]["sectionName"] == "Work"
    assert body["object"]["position"] == 1
    assert about_fields() == [("B", 1), ("D", 2), ("C", 3)]

    assert api.delete(f"{FIELD}/{first['id']}", admin)[0] == 200
    assert about_fields() == [("B", 1), ("C", 2)]


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
@pytest.mark.parametrize(
    ("path", "unknown", "malformed", "key"),
    [
        (SECTION, "424242", "first", "sectionId"),  # a section's id is an integer
        (FIELD, "33333333-3333-4333-8333-333333333333", "42", "fieldId"),  # a field's a UUID
    ],
    ids=["section", "field"],
)
def test_an_unknown_id_is_404_and_a_malformed_one_400(
    api, admin, method, path, unknown, malformed, key
):
    status, body = api.call(method, f"{path}/{unknown}", admin, {"name": "x"})
    assert status == 404 and error_keys(body) == [key]
    status, body = api.call(method, f"{path}/{malformed}", admin, {"name": "x"})
    assert status == 400 and error_keys(body) == [key]


def test_concurrent_change_makes_the_later_write_a_409(api, admin):
    """Two administrators read the structure, both move a section: the second write is refused."""
    from chalicelib.errors import Conflict
    from chalicelib.schemas.profile import SectionUpdate
    from chalicelib.services.profile import ProfileService
    from chalicelib.store.profile import ProfileRepository

    a = make_section(api, admin, "A")
    make_section(api, admin, "B")

    class RacedRepository(ProfileRepository):
        def load(self):
            records = super().load()
            # Another administrator renames section A between this read and this write.
            assert api.put(f"{SECTION}/{a['id']}", admin, {"name": "Alpha"})[0] == 200
            return records

    with pytest.raises(Conflict) as raised:
        ProfileService(RacedRepository()).update_section(a["id"], SectionUpdate(position=2))
    assert raised.value.status == 409
    assert names(structure(api, admin)["sections"]) == [("Alpha", 1), ("B", 2)]


# --- privileges -----------------------------------------------------------------------------------

ROUTES = [
    ("GET", PROFILE, None),
    ("POST", SECTION, {"name": "Contact"}),
    ("PUT", f"{SECTION}/1", {"name": "Contact"}),
    ("DELETE", f"{SECTION}/1", None),
    ("POST", FIELD, {"sectionId": 1, "name": "Phone", "typeId": 1}),
    ("PUT", f"{FIELD}/{RED}", {"name": "Phone"}),
    ("DELETE", f"{FIELD}/{RED}", None),
]


@pytest.mark.parametrize(
    ("who", "expected"), [("garden_admin", 403), ("root_member", 403), (None, 401)]
)
def test_profile_structure_needs_the_root_group_administrator(api, people, who, expected):
    user = getattr(people, who) if who else None
    for method, path, body in ROUTES:
        status, answer = api.call(method, path, user, body)
        assert (method, path, status) == (method, path, expected)
        assert answer["success"] is False
    assert structure(api, people.admin)["sections"] == []
