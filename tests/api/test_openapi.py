"""The OpenAPI document is generated from the route registry: complete and valid."""

from __future__ import annotations

import re

# The console's page and files (CONTRACT §10 `/console/`) are web pages on the API's origin, not
# API operations: the document leaves out exactly these two (its session route is in it).
CONSOLE_FILES = {("/console", "GET"), ("/console/{asset}", "GET")}
# Likewise the reference page's Swagger UI files (the page itself is in the document).
DOCS_FILES = {("/api/v1/en_US/docs/{asset}", "GET")}


def chalice_routes(app) -> set[tuple[str, str]]:
    routes = {(path, method) for path, methods in app.routes.items() for method in methods}
    assert CONSOLE_FILES <= routes and DOCS_FILES <= routes
    # Every path answers a CORS preflight (api/cors.py); preflights are not API operations.
    preflights = {(path, "OPTIONS") for path in app.routes}
    assert preflights <= routes
    return routes - CONSOLE_FILES - DOCS_FILES - preflights


def test_every_route_is_in_the_document_and_nothing_else(api):
    from app import app

    status, document = api.get("/api/v1/en_US/openapi.json")
    assert status == 200
    documented = {
        (path, method.upper())
        for path, operations in document["paths"].items()
        for method in operations
    }
    assert documented == chalice_routes(app)


def test_document_is_valid_openapi_3_1(api):
    from openapi_spec_validator import validate

    _, document = api.get("/api/v1/en_US/openapi.json")
    assert document["openapi"] == "3.1.0"
    validate(document)


def test_path_parameters_and_bodies_are_described(api):
    _, document = api.get("/api/v1/en_US/openapi.json")
    for path, operations in document["paths"].items():
        names = set(re.findall(r"{(\w+)}", path))
        for method, operation in operations.items():
            in_path = {p["name"] for p in operation["parameters"] if p["in"] == "path"}
            assert in_path == names, (path, method)
            # Poll now answers 202 (the poll happens later), every other operation 200.
            success = "202" if path.endswith("/poll") else "200"
            assert success in operation["responses"], (path, method)
    login = document["paths"]["/api/v1/en_US/security/login"]["post"]
    body = login["requestBody"]["content"]["application/json"]["schema"]
    assert body["$ref"].endswith("/LoginRequest")
    assert set(document["components"]["schemas"]["LoginRequest"]["properties"]) == {
        "email",
        "password",
    }


# --- the document says what validation accepts (issue 29) -------------------------------------


def loaded_document(api, community) -> tuple[str, dict]:
    """The demo-like community loaded: its first user (the root administrator) and the document."""
    community.load()
    _, document = api.get("/api/v1/en_US/openapi.json")
    return community.users[0]["id"], document


def body_schema(document: dict, path: str, method: str) -> dict:
    """The request body's schema with the components it names, ready for jsonschema."""
    operation = document["paths"][path][method]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    return {**schema, "components": document["components"]}


def accepted_by_document(document: dict, path: str, method: str, body: dict) -> bool:
    from jsonschema import Draft202012Validator

    # Formats asserted, as Schemathesis generates them (`email`, `uuid`, `date-time`).
    checker = Draft202012Validator.FORMAT_CHECKER
    return Draft202012Validator(
        body_schema(document, path, method), format_checker=checker
    ).is_valid(body)


EVENT = {"groupId": "076e75e0-7661-51c5-9ccc-8a2b790e771e", "title": "Fair"}
START = "2027-04-01T09:00:00Z"


def test_event_create_needs_an_end_date_unless_all_day_in_the_document_as_in_the_api(
    api, community
):
    garden = community.group("garden")
    admin, document = loaded_document(api, community)
    cases = [
        ({"startDate": START}, False),
        ({"startDate": START, "allDay": False}, False),
        ({"startDate": START, "allDay": True}, True),
        ({"startDate": START, "endDate": "2027-04-01T10:00:00Z"}, True),
    ]
    for fields, accepted in cases:
        body = {**EVENT, "groupId": garden, **fields}
        assert accepted_by_document(document, "/api/v1/en_US/event", "post", body) is accepted
        status, answer = api.post("/api/v1/en_US/event", admin, body)
        assert (status == 200) is accepted, (fields, answer)


def test_integers_are_integers_in_the_document_and_in_the_api(api, community):
    admin, document = loaded_document(api, community)
    section = "/api/v1/en_US/profile/section"
    for visibility, accepted in ((False, False), ("2", False), (2, True), (1.0, True)):
        body = {"name": f"Section {visibility!r}", "defaultVisibilityId": visibility}
        assert accepted_by_document(document, section, "post", body) is accepted
        status, answer = api.post(section, admin, body)
        assert (status == 200) is accepted, (visibility, answer)
        if accepted:
            assert answer["object"]["defaultVisibilityId"] == int(visibility)


def test_mailbox_server_name_and_port_in_the_document_as_in_the_api(api, community):
    garden = community.group("garden")
    admin, document = loaded_document(api, community)
    path = "/api/v1/en_US/connector/email-to-post/{groupId}"
    base = {
        "serverName": "93.184.216.34",  # a public address (nothing connects: isEnabled false)
        "serverPort": 995,
        "serverUsername": "agora",
        "isEnabled": False,
        "isSSL": True,
        "deleteProcessed": False,
    }
    for change, accepted in (
        ({}, True),
        ({"serverName": "   "}, False),
        ({"serverName": ""}, False),
        ({"serverPort": 995.0}, True),
        ({"serverPort": True}, False),
    ):
        body = {**base, **change}
        assert accepted_by_document(document, path, "put", body) is accepted, change
        status, answer = api.put(path.format(groupId=garden), admin, body)
        assert (status == 200) is accepted, (change, answer)


def test_the_openapi_document_is_documented_as_itself(api):
    from jsonschema import Draft202012Validator

    _, document = api.get("/api/v1/en_US/openapi.json")
    answer = document["paths"]["/api/v1/en_US/openapi.json"]["get"]["responses"]["200"]
    schema = answer["content"]["application/json"]["schema"]
    assert Draft202012Validator(schema).is_valid(document)


def test_texts_are_measured_as_sent_and_blank_ones_refused_in_the_document_as_in_the_api(
    api, community
):
    admin, document = loaded_document(api, community)
    login = "/api/v1/en_US/security/login"
    body = {"email": community.users[0]["email"], "password": "\f"}
    assert not accepted_by_document(document, login, "post", body)
    assert api.post(login, None, body)[0] == 400

    status, section = api.post("/api/v1/en_US/profile/section", admin, {"name": "Contact"})
    assert status == 200, section
    field = {
        "sectionId": section["object"]["id"],
        "name": "\u0005",
        "typeId": 1,
        "data": {},
    }
    assert not accepted_by_document(document, "/api/v1/en_US/profile/field", "post", field)
    assert api.post("/api/v1/en_US/profile/field", admin, field)[0] == 400

    player = "/rest/v1/en_US/player"
    long_name = {"id": "2f6d3a4e-0000-4000-8000-000000000001", "name": " " + "n" * 100}
    assert not accepted_by_document(document, player, "post", long_name)
    status, body = api.post(player, admin, long_name)
    assert status == 400 and body["errors"][0]["key"] == "name", body
    fits = {"id": "2f6d3a4e-0000-4000-8000-000000000002", "name": " " + "n" * 98 + " "}
    assert accepted_by_document(document, player, "post", fits)
    status, body = api.post(player, admin, fits)
    assert status == 200 and body["object"]["name"] == "n" * 98, body


def test_offset_zero_is_documented_where_the_offset_is_an_id(api, community):
    from jsonschema import Draft202012Validator

    garden = community.group("garden")
    admin, document = loaded_document(api, community)
    path = "/api/v1/en_US/post/list/{groupId}"
    offset = next(p for p in document["paths"][path]["get"]["parameters"] if p["name"] == "offset")
    for value in ("0", "", "2f6d3a4e-0000-4000-8000-000000000001"):
        assert Draft202012Validator(offset["schema"]).is_valid(value), value
    assert api.get(path.format(groupId=garden) + "?offset=0", admin)[0] == 200


def test_a_taken_name_and_an_unknown_offset_are_documented_as_the_400s_they_are(api, community):
    """CONTRACT §5 and §7 make a name or id another record has, and an `offset` that names no
    item, a 400: the document says so where a client reads it (the 400 of each operation), and
    keeps 409 for the state conflicts it really answers."""
    garden = community.group("garden")
    admin, document = loaded_document(api, community)
    errors = document["components"]["responses"]
    player_create = document["paths"]["/rest/v1/en_US/player"]["post"]["responses"]
    assert player_create["400"] == {"$ref": "#/components/responses/Error400"}
    assert "name or id that another record already has" in errors["Error400"]["description"]
    assert "`offset` that names no item" in errors["Error400"]["description"]
    assert "profile section that still has fields" in errors["Error409"]["description"]
    # …and the API answers as documented: an offset naming no post is a 400 keyed `offset`.
    status, body = api.get(
        f"/api/v1/en_US/post/list/{garden}?offset=2f6d3a4e-0000-4000-8000-000000000001", admin
    )
    assert status == 400 and [e["key"] for e in body["errors"]] == ["offset"]


def test_a_fields_data_is_documented_per_type_and_closed_as_the_api_checks_it(api, community):
    """`data` is checked against the model of `typeId`, unknown keys refused (issue 29): the
    document says the same, one branch per type, so a client builds only what the API takes."""
    admin, document = loaded_document(api, community)
    status, section = api.post("/api/v1/en_US/profile/section", admin, {"name": "Data rules"})
    assert status == 200, section
    path = "/api/v1/en_US/profile/field"
    guid = "2f6d3a4e-0000-4000-8000-00000000000a"
    cases = [
        (1, {"type": "MultiLine", "lines": 3}, True),
        (1, {"type": "MultiLine"}, False),  # a MultiLine text box needs lines
        (1, {"type": "Paragraph"}, False),  # not a text box kind
        (2, {"lines": 3}, False),  # a text box's key on a checkbox
        (2, {"defaultValue": True, "colour": "red"}, False),  # a key no type has
        (5, {"defaultValue": "https://agora.example/"}, True),
        (5, {"defaultValue": "ftp://agora.example/"}, False),
        (3, {"options": [{"key": guid, "value": "Red"}], "defaultValue": "Red"}, True),
        (3, {"options": [{"value": "Red"}], "defaultValue": True}, False),
        (3, {"options": [{"key": "red", "value": "Red"}]}, False),  # list keys are GUIDs
        (12, {"options": [{"key": "red", "value": "Red"}]}, True),  # autocomplete keys are free
        (12, {"enableRemoteDataSource": True}, False),  # needs remoteDataSourceUrl
        (12, {"enableRemoteDataSource": True, "remoteDataSourceUrl": "https://a.example/"}, True),
    ]
    for number, (type_id, data, accepted) in enumerate(cases):
        body = {"sectionId": section["object"]["id"], "name": f"F{number}", "typeId": type_id}
        body["data"] = data
        assert accepted_by_document(document, path, "post", body) is accepted, (type_id, data)
        status, answer = api.post(path, admin, body)
        assert (status == 200) is accepted, (type_id, data, answer)


def test_bounds_and_notification_ids_are_documented_as_json_schema_reads_them(api, community):
    """A bound of a strict integer reads `minimum`/`maximum` (never pydantic's `ge`/`le`, which
    JSON Schema ignores), and each kind of notification documents its own ids."""
    from jsonschema import Draft202012Validator

    admin, document = loaded_document(api, community)
    section = "/api/v1/en_US/profile/section"
    body = {"name": "Bounded", "defaultVisibilityId": 94}
    assert not accepted_by_document(document, section, "post", body)
    assert api.post(section, admin, body)[0] == 400
    text = str(document)
    assert "'ge':" not in text and "'le':" not in text
    prefix = "/api/v1/en_US/user/{userId}/notifications"
    for kind, valid, invalid in (("post", 3, 1), ("author", 8, 1), ("personal", 4, 8)):
        operation = document["paths"][f"{prefix}/{kind}/{{notificationId}}"]["post"]
        parameter = next(p for p in operation["parameters"] if p["name"] == "notificationId")
        assert Draft202012Validator(parameter["schema"]).is_valid(valid), kind
        assert not Draft202012Validator(parameter["schema"]).is_valid(invalid), kind


def test_feed_settings_and_group_email_in_the_document_as_in_the_api(api, community):
    """Addresses, emails, the feed's ttl and its day and hour names: what the document allows
    the API stores, and what it forbids the API refuses (Schemathesis found each of these)."""
    garden = community.group("garden")
    admin, document = loaded_document(api, community)
    feed = "/api/v1/en_US/feed/settings/{groupId}"
    base = {
        "imageUrl": "",
        "imageLinkUrl": "https://garden.example/",
        "imageAlt": "Garden",
        "ttl": 60,
        "editorEmail": "",
        "webmasterEmail": "web@garden.example",
        "skipDays": [{"name": "Sunday", "selected": True}],
        "skipHours": [{"name": "3:00", "selected": True}],
    }
    for change, accepted in (
        ({}, True),
        ({"ttl": 60.0}, True),
        ({"ttl": True}, False),
        ({"imageUrl": "garden.example/logo.png"}, False),
        ({"imageLinkUrl": "ftp://garden.example/"}, False),
        ({"editorEmail": "editor"}, False),
        ({"skipDays": [{"name": "Someday"}]}, False),
        ({"skipHours": [{"name": "25:00"}]}, False),
    ):
        body = {**base, **change}
        assert accepted_by_document(document, feed, "put", body) is accepted, change
        status, answer = api.put(feed.format(groupId=garden), admin, body)
        assert (status == 200) is accepted, (change, answer)
    status, answer = api.put(
        feed.format(groupId=garden), admin, {**base, "skipDays": [{"name": "x"}]}
    )
    assert answer["errors"][0]["message"] == "'x' is not one of Monday to Sunday", answer

    email = "/api/v1/en_US/group-email/{groupId}"
    base = {"email": "garden@agora.example", "name": "Garden", "newsletterName": ""}
    for change, accepted in (({}, True), ({"name": " "}, False), ({"email": "garden"}, False)):
        body = {**base, **change}
        assert accepted_by_document(document, email, "put", body) is accepted, change
        status, answer = api.put(email.format(groupId=garden), admin, body)
        assert (status == 200) is accepted, (change, answer)


def test_the_authorize_dialog_says_how_to_get_a_token(api):
    """Swagger's Authorize dialog lists the schemes with their descriptions: each says to sign in
    at POST /security/login, whose answer's object is the token."""
    _, document = api.get("/api/v1/en_US/openapi.json")
    schemes = document["components"]["securitySchemes"]
    assert set(schemes) == {"xAuth", "bearer", "apiAuthKey"}
    for name, scheme in schemes.items():
        said = scheme.get("description", "")
        assert "POST /api/v1/en_US/security/login" in said and "`object`" in said, name
    assert "X-Auth" in schemes["xAuth"]["description"]
