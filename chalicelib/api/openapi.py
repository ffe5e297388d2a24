"""The API's own description: `GET /api/v1/en_US/openapi.json` (public, like any API reference)."""

from __future__ import annotations

from typing import Any

from chalice import Blueprint, Response

from chalicelib.api.routing import Call, route

openapi_api = Blueprint(__name__)


@route(openapi_api, "GET", "/api/v1/en_US/openapi.json", need=None, response=dict[str, Any])
def get_openapi_document(call: Call) -> Any:
    """The OpenAPI 3.1 document of this API (the document itself, not an envelope)."""
    import json

    from chalicelib.openapi import openapi_document

    return Response(
        body=json.dumps(openapi_document()),
        status_code=200,
        headers={"Content-Type": "application/json"},
    )
