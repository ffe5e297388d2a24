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
            assert "200" in operation["responses"]
    login = document["paths"]["/api/v1/en_US/security/login"]["post"]
    body = login["requestBody"]["content"]["application/json"]["schema"]
    assert body["$ref"].endswith("/LoginRequest")
    assert set(document["components"]["schemas"]["LoginRequest"]["properties"]) == {
        "email",
        "password",
    }
