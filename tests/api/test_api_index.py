"""`GET /api/v1/en_US/` (CONTRACT §10): an index of the API, as the envelope, with no sign-in,
whose links lead to the reference page, the OpenAPI document and the console."""

from __future__ import annotations

import json

import pytest

INDEX = "/api/v1/en_US/"


@pytest.mark.parametrize("path", [INDEX, INDEX.rstrip("/")])
def test_the_index_links_to_the_docs_the_document_and_the_console(client, path):
    response = client.http.get(path)

    body = json.loads(response.body)
    assert response.status_code == 200 and body["success"] is True and body["errors"] == []
    index = body["object"]
    assert index["type"] == "apiIndex" and index["version"] == "v1"
    assert index["links"] == {
        "docs": "/api/v1/en_US/docs",
        "openapi": "/api/v1/en_US/openapi.json",
        "console": "/console/",
    }
    # No dead ends: every link answers.
    answers = {name: client.http.get(link) for name, link in index["links"].items()}
    assert {name: answer.status_code for name, answer in answers.items()} == {
        "docs": 200,
        "openapi": 200,
        "console": 200,
    }
    assert "swagger-ui" in answers["docs"].body.decode()
    assert json.loads(answers["openapi"].body)["openapi"] == "3.1.0"


def test_under_a_stage_the_links_keep_its_prefix(client):
    """API Gateway serves the API under its stage (`/api/...`): the links say so."""
    from chalicelib.api.openapi import get_api_index
    from chalicelib.api.routing import Call

    class StageRequest:
        path = "/api/v1/en_US"
        context = {"path": "/api/api/v1/en_US", "resourcePath": "/api/v1/en_US"}

    index = get_api_index(Call(request=StageRequest(), caller=None))

    assert index.links.docs == "/api/api/v1/en_US/docs"
    assert index.links.console == "/api/console/"


def test_the_index_is_in_the_openapi_document_without_sign_in(api):
    document = api.get("/api/v1/en_US/openapi.json")[1]

    operation = document["paths"]["/api/v1/en_US"]["get"]
    assert operation["security"] == []
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert "ApiIndex" in json.dumps(schema)
