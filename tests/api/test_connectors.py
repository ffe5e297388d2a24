"""Local connectors: the catalogue from the fixture, per-group configuration, inheritance, status."""

from __future__ import annotations

import pytest

from tests.fixtures import group_summary, new_id, two_groups

PREFIX = "/api/v1/en_US/connector/local"


def one(connector_id: str, group_id: str) -> str:
    return f"{PREFIX}/{connector_id}/group/{group_id}"


def listing(group_id: str) -> str:
    return f"{PREFIX}/list/group/{group_id}"


def status_path(connector_id: str) -> str:
    return f"{PREFIX}/{connector_id}/status"


@pytest.fixture
def people(community, kms_key):
    """home ─ garden ─ tomatoes ─ cherry (three levels under the root), and other: the cast of
    `two_groups` and an administrator of cherry."""
    c = two_groups(community)
    c.tomatoes = c.group("tomatoes", parent=c.garden)
    c.cherry = c.group("cherry", parent=c.tomatoes)
    c.cherry_admin = c.user("cherry-admin", {c.cherry: "administrator"})
    c.chat = new_id()
    c.crm = new_id()
    c.connectors += [
        {"id": c.chat, "kind": "chat", "name": "Chat", "description": "Real-time chat"},
        {"id": c.crm, "kind": "crm", "name": "CRM", "description": "Sync", "isEnabled": False},
    ]
    return c.load()


def stored_configuration(group_id: str, connector_id: str) -> dict:
    from chalicelib.aws import client
    from chalicelib.store.connectors import ConnectorGroupRecord

    return client("dynamodb").get_item(
        TableName=ConnectorGroupRecord.Meta.table_name,
        Key={"group_id": {"S": group_id}, "connector_id": {"S": connector_id}},
    )["Item"]


def group_ids(connector: dict) -> list[str]:
    return [g["id"] for g in connector["groups"]]


def test_get_answers_the_spec_shape_field_by_field(api, people):
    status, body = api.get(one(people.chat, people.root), people.root_admin)
    assert status == 200 and body["success"] is True
    connector = body["object"]
    assert set(connector) == {
        "id",
        "type",
        "name",
        "description",
        "isEnabled",
        "createdOn",
        "author",
        "modifiedOn",
        "editor",
        "groups",
        "settings",
        "accessWarnings",
    }
    assert connector["id"] == people.chat
    assert connector["type"] == {
        "id": 1,
        "name": "Chat",
        "thumbUrl": "https://community.example/images/connectors/chat.png",
    }
    assert connector["name"] == "Chat" and connector["description"] == "Real-time chat"
    # isEnabled in the fixture switches the connector on in the root group.
    assert connector["isEnabled"] is True
    assert (
        connector["createdOn"].endswith("Z") and connector["modifiedOn"] == connector["createdOn"]
    )
    # No author in the fixture: the root group's first administrator.
    assert connector["author"]["id"] == people.root_admin
    assert connector["author"]["alias"] == "Root Admin"
    assert connector["author"]["url"] == "https://community.example/people/root-admin"
    assert connector["editor"] == connector["author"]
    assert connector["groups"] == [group_summary(people.root, "home")]
    assert connector["settings"] == {
        "inheritSettings": False,
        "applicationId": "",
        "applicationSecret": "",
        "allowGuest": False,
        "inheritedFrom": None,
    }
    assert connector["accessWarnings"] == []


def test_crm_settings_are_an_empty_object(api, people):
    status, body = api.get(one(people.crm, people.garden), people.garden_admin)
    assert status == 200
    assert body["object"]["type"]["id"] == 2 and body["object"]["type"]["name"] == "CRM"
    assert body["object"]["settings"] == {}
    assert body["object"]["isEnabled"] is False and body["object"]["groups"] == []


def test_list_answers_every_connector_for_the_group(api, people):
    status, body = api.get(listing(people.garden), people.garden_admin)
    assert status == 200 and body["success"] is True
    connectors = body["object"]["connectors"]
    assert [c["id"] for c in connectors] == [people.chat, people.crm]
    _, single = api.get(one(people.chat, people.garden), people.garden_admin)
    assert connectors[0] == single["object"]


def test_put_chat_settings_round_trip_with_the_secret_encrypted(api, people):
    sent = {
        "inheritSettings": False,
        "isEnabled": True,
        "settings": {
            "applicationId": " app-1 ",
            "applicationSecret": "top secret",
            "allowGuest": True,
        },
    }
    status, body = api.put(one(people.chat, people.garden), people.garden_admin, sent)
    assert status == 200 and body["success"] is True
    connector = body["object"]
    assert connector["isEnabled"] is True
    assert connector["settings"] == {
        "inheritSettings": False,
        "applicationId": "app-1",
        "applicationSecret": "top secret",
        "allowGuest": True,
        "inheritedFrom": None,
    }
    assert connector["editor"]["id"] == people.garden_admin
    assert connector["modifiedOn"] >= connector["createdOn"]
    assert group_ids(connector) == [people.garden, people.root]  # Garden, Home by name

    item = stored_configuration(people.garden, people.chat)
    assert b"top secret" not in item["secret"]["B"]
    assert all("top secret" not in str(value) for value in item.values())

    _, again = api.get(one(people.chat, people.garden), people.garden_admin)
    assert again["object"] == connector


def test_omitted_secret_keeps_the_stored_one(api, people):
    settings = {"applicationId": "app", "applicationSecret": "s1", "allowGuest": False}
    api.put(
        one(people.chat, people.garden),
        people.garden_admin,
        {"inheritSettings": False, "isEnabled": True, "settings": settings},
    )
    _, body = api.put(
        one(people.chat, people.garden),
        people.garden_admin,
        {"inheritSettings": False, "isEnabled": True, "settings": {"applicationId": "app-2"}},
    )
    assert body["object"]["settings"]["applicationSecret"] == "s1"
    assert body["object"]["settings"]["applicationId"] == "app-2"


def test_inheritance_walks_up_two_levels_of_parents(api, people):
    # garden has its own settings; tomatoes and cherry inherit (cherry → tomatoes → garden).
    api.put(
        one(people.chat, people.garden),
        people.garden_admin,
        {
            "inheritSettings": False,
            "isEnabled": True,
            "settings": {
                "applicationId": "garden-app",
                "applicationSecret": "g",
                "allowGuest": True,
            },
        },
    )
    api.put(one(people.chat, people.tomatoes), people.root_admin, {"inheritSettings": True})
    status, body = api.put(
        one(people.chat, people.cherry),
        people.root_admin,
        {"inheritSettings": True, "isEnabled": True, "settings": {"applicationId": "own"}},
    )
    assert status == 200
    settings = body["object"]["settings"]
    assert settings["inheritSettings"] is True
    assert settings["applicationId"] == "garden-app" and settings["allowGuest"] is True
    assert settings["applicationSecret"] == "g"  # the caller administers garden too (root)
    assert settings["inheritedFrom"]["id"] == people.garden

    # Stopping inheritance brings the group's own settings back.
    _, own = api.put(one(people.chat, people.cherry), people.root_admin, {"inheritSettings": False})
    assert own["object"]["settings"]["applicationId"] == "own"
    assert own["object"]["settings"]["inheritedFrom"] is None


def test_unconfigured_subgroup_inherits_by_default(api, people):
    api.put(
        one(people.chat, people.root),
        people.root_admin,
        {"isEnabled": True, "settings": {"applicationId": "home-app", "applicationSecret": "h"}},
    )
    _, body = api.get(one(people.chat, people.cherry), people.root_admin)
    settings = body["object"]["settings"]
    assert settings["inheritSettings"] is True
    assert settings["applicationId"] == "home-app"
    assert settings["inheritedFrom"]["id"] == people.root


def test_inherited_secret_is_hidden_from_an_administrator_of_the_child_only(api, people):
    api.put(
        one(people.chat, people.garden),
        people.garden_admin,
        {"isEnabled": True, "inheritSettings": False, "settings": {"applicationSecret": "g"}},
    )
    status, body = api.get(one(people.chat, people.cherry), people.cherry_admin)
    assert status == 200
    assert body["object"]["settings"]["applicationSecret"] == ""
    assert body["object"]["accessWarnings"] == [
        {
            "key": "settings.applicationSecret",
            "code": "ACCESS_DENIED",
            "message": body["object"]["accessWarnings"][0]["message"],
        }
    ]


def test_root_group_cannot_inherit(api, people):
    status, body = api.put(
        one(people.chat, people.root), people.root_admin, {"inheritSettings": True}
    )
    assert status == 400 and [e["key"] for e in body["errors"]] == ["inheritSettings"]


def test_crm_with_settings_is_400(api, people):
    sent = {"isEnabled": True, "settings": {"applicationId": "x"}}
    status, body = api.put(one(people.crm, people.garden), people.garden_admin, sent)
    assert status == 400 and body["success"] is False
    assert [e["key"] for e in body["errors"]] == ["settings"]
    assert body["object"] == sent


def test_crm_is_only_enabled_or_disabled(api, people):
    status, body = api.put(
        one(people.crm, people.garden), people.garden_admin, {"isEnabled": True, "settings": {}}
    )
    assert status == 200
    assert body["object"]["isEnabled"] is True and body["object"]["settings"] == {}
    assert group_ids(body["object"]) == [people.garden]


@pytest.mark.parametrize(
    ("body_in", "key"),
    [
        ({"isEnabled": "often"}, "isEnabled"),
        ({"settings": "x"}, "settings"),
        ({"settings": {"allowGuest": "maybe"}}, "settings.allowGuest"),
        ({"settings": {"applicationSecret": 12}}, "settings.applicationSecret"),
    ],
)
def test_invalid_chat_body_is_400_with_the_key(api, people, body_in, key):
    status, body = api.put(one(people.chat, people.garden), people.garden_admin, body_in)
    assert status == 400
    assert [e["key"] for e in body["errors"]] == [key]


def test_patch_status_is_reflected_in_get_and_in_groups(api, people):
    status, body = api.patch(
        status_path(people.crm), people.garden_admin, {"group": people.garden, "isEnabled": True}
    )
    assert status == 200 and body["success"] is True
    assert body["object"]["isEnabled"] is True
    assert body["object"]["editor"]["id"] == people.garden_admin
    assert group_ids(body["object"]) == [people.garden]
    api.patch(
        status_path(people.crm), people.other_admin, {"group": people.other, "isEnabled": True}
    )

    _, garden = api.get(one(people.crm, people.garden), people.garden_admin)
    assert garden["object"]["isEnabled"] is True
    assert group_ids(garden["object"]) == [people.garden, people.other]

    api.patch(
        status_path(people.crm), people.garden_admin, {"group": people.garden, "isEnabled": False}
    )
    _, listed = api.get(listing(people.garden), people.garden_admin)
    crm = next(c for c in listed["object"]["connectors"] if c["id"] == people.crm)
    assert crm["isEnabled"] is False and group_ids(crm) == [people.other]


def test_patch_status_keeps_the_chat_settings(api, people):
    api.put(
        one(people.chat, people.garden),
        people.garden_admin,
        {"isEnabled": True, "inheritSettings": False, "settings": {"applicationId": "keep"}},
    )
    _, body = api.patch(
        status_path(people.chat), people.garden_admin, {"group": people.garden, "isEnabled": False}
    )
    assert body["object"]["isEnabled"] is False
    assert body["object"]["settings"]["applicationId"] == "keep"
    assert body["object"]["settings"]["inheritSettings"] is False


def test_patch_status_needs_administrator_of_the_body_group(api, people):
    status, _ = api.patch(
        status_path(people.crm), people.other_admin, {"group": people.garden, "isEnabled": True}
    )
    assert status == 403
    status, body = api.patch(
        status_path(people.crm), people.root_admin, {"group": new_id(), "isEnabled": True}
    )
    assert status == 404 and body["errors"][0]["key"] == "group"
    status, body = api.patch(status_path(people.crm), people.root_admin, {"isEnabled": True})
    assert status == 400 and body["errors"][0]["key"] == "group"
    status, _ = api.patch(
        status_path(people.crm), None, {"group": people.garden, "isEnabled": True}
    )
    assert status == 401
    status, body = api.patch(
        status_path(new_id()), people.root_admin, {"group": people.garden, "isEnabled": True}
    )
    assert status == 404 and body["errors"][0]["key"] == "connectorId"


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("root_admin", 200),
        ("garden_admin", 200),
        ("other_admin", 403),
        ("cherry_admin", 403),
        ("member", 403),
        (None, 401),
    ],
)
def test_local_connectors_need_group_administrator(api, people, who, expected):
    user = getattr(people, who) if who else None
    status, body = api.get(one(people.chat, people.garden), user)
    assert status == expected and body["success"] is (expected == 200)
    status, _ = api.get(listing(people.garden), user)
    assert status == expected
    status, _ = api.put(one(people.crm, people.garden), user, {"isEnabled": True})
    assert status == expected


def test_unknown_ids_are_404_with_their_key(api, people):
    status, body = api.get(one(new_id(), people.garden), people.root_admin)
    assert status == 404 and body["errors"][0]["key"] == "connectorId"
    status, body = api.get(one(people.chat, new_id()), people.root_admin)
    assert status == 404 and body["errors"][0]["key"] == "groupId"
    status, body = api.get(listing(new_id()), people.root_admin)
    assert status == 404 and body["errors"][0]["key"] == "groupId"
    status, body = api.put(one(new_id(), people.garden), people.root_admin, {"isEnabled": True})
    assert status == 404 and body["errors"][0]["key"] == "connectorId"


def test_malformed_connector_id_is_400(api, people):
    status, body = api.get(one("42", people.garden), people.root_admin)
    assert status == 400 and body["errors"][0]["key"] == "connectorId"


def test_reloading_the_fixture_keeps_created_on_and_group_settings(api, people):
    _, before = api.get(one(people.chat, people.garden), people.garden_admin)
    api.put(
        one(people.chat, people.garden),
        people.garden_admin,
        {"isEnabled": True, "inheritSettings": False, "settings": {"applicationId": "kept"}},
    )
    people.load()
    _, after = api.get(one(people.chat, people.garden), people.garden_admin)
    assert after["object"]["createdOn"] == before["object"]["createdOn"]
    assert after["object"]["settings"]["applicationId"] == "kept"


def test_list_of_twenty_connectors_costs_a_few_requests_and_no_scan(
    api, community, kms_key, dynamo_counter
):
    c = community
    garden = c.group("garden")
    tomatoes = c.group("tomatoes", parent=garden)
    admin = c.users[0]["id"]
    ids = [new_id() for _ in range(20)]
    c.connectors += [
        {"id": cid, "kind": "chat" if i % 2 else "crm", "name": f"Connector {i:02}"}
        for i, cid in enumerate(ids)
    ]
    c.load()
    for cid in ids[:6]:
        api.patch(status_path(cid), admin, {"group": garden, "isEnabled": True})
        api.patch(status_path(cid), admin, {"group": tomatoes, "isEnabled": True})

    dynamo_counter.reset()
    status, body = api.get(listing(tomatoes), admin)
    assert status == 200 and len(body["object"]["connectors"]) == 20
    assert "Scan" not in dynamo_counter.requests
    assert dynamo_counter.total <= 10, dynamo_counter.requests
    first = body["object"]["connectors"][0]
    assert sorted(group_ids(first)) == sorted([c.root, garden, tomatoes])

    for path, call in (
        ("get", lambda: api.get(one(ids[1], tomatoes), admin)),
        ("put", lambda: api.put(one(ids[0], tomatoes), admin, {"isEnabled": True})),
        (
            "patch",
            lambda: api.patch(status_path(ids[1]), admin, {"group": tomatoes, "isEnabled": False}),
        ),
    ):
        dynamo_counter.reset()
        status, _ = call()
        assert status == 200, path
        assert "Scan" not in dynamo_counter.requests, path
        assert dynamo_counter.total <= 10, (path, dynamo_counter.requests)


def test_an_inheriting_groups_update_reads_its_parents_settings_once_for_its_audit(
    api, people, dynamo_counter
):
    # The entry's before and after both show the parent's settings (cherry inherits before and
    # after): one BatchGetItem reads them for both, and one more answers the PUT (its `get`).
    garden = {"inheritSettings": False, "settings": {"applicationId": "garden-app"}}
    api.put(one(people.chat, people.garden), people.garden_admin, garden)
    inherit = {"inheritSettings": True, "isEnabled": True}
    status, _ = api.put(one(people.chat, people.cherry), people.root_admin, inherit)
    assert status == 200
    dynamo_counter.reset()
    status, body = api.put(one(people.chat, people.cherry), people.root_admin, inherit)
    assert status == 200
    assert body["object"]["settings"]["applicationId"] == "garden-app"
    assert dynamo_counter.requests.get("BatchGetItem") == 2, dynamo_counter.requests
