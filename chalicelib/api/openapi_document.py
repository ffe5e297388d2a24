"""The OpenAPI 3.1 document, generated from the route registry and the Pydantic models.

Nothing here is written by hand per route: every `@route` declares its path, parameters, body and
response model, and this module turns those into paths and component schemas. A route missing from
the document is therefore a route missing from the registry (a test checks both ways).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from chalicelib.api.openapi_schemas import (
    FIELD_ERROR_SCHEMA,
    envelope,
    field_data_by_type,
    model_defs,
    model_refs,
    notification_ids,
    parameters_of,
    schema_of,
    standard_bounds,
)
from chalicelib.api.routing import ROUTES, RouteSpec
from chalicelib.auth import Need
from chalicelib.schemas.api_index import API_TITLE

# Routes without a required token that still check one when it is sent: sign-in, and the group
# feeds (a token or `?key=` for closed groups; a wrong key is a 401).
MAY_ANSWER_401 = {
    "/api/v1/en_US/security/login",
    "/api/v1/en_US/feed/{groupId}",
    "/api/v1/en_US/feed/{groupId}/events.ics",
}
ERROR_STATUSES = {
    "400": (
        "Validation failure (one error per field), a body that is not JSON, a name or id that"
        " another record already has (a player's `name` and `id`, a profile section's `name`), or an"
        " `offset` that names no item of the list"
    ),
    "401": "No token, or a bad or expired one",
    "403": "The caller lacks the privilege",
    "404": "Unknown id (the error names the parameter)",
    "409": (
        "State conflict: undelete or purge of a comment that is not deleted, a profile section"
        " that still has fields, or a write that raced another one"
    ),
    "413": "Body larger than 1 MiB",
    "415": "A body whose `Content-Type` is not `application/json` (a `charset` parameter allowed)",
    "429": "Too many failed sign-ins, or a second poll now of a mailbox within a minute",
    "503": "AWS throttled, failed or timed out beyond the retries: send again after Retry-After",
}

# How to get a token, said in each scheme of the Authorize dialog.
_HOW_TO_SIGN_IN = (
    "Sign in first: POST /api/v1/en_US/security/login with "
    '{"email": "…", "password": "…"} answers the token as its `object`.'
)


OPENAPI_DOCUMENT_SCHEMA = {
    "type": "object",
    "required": ["openapi", "info", "paths"],
    "properties": {
        "openapi": {"type": "string"},
        "info": {"type": "object"},
        "servers": {"type": "array"},
        "paths": {"type": "object"},
        "components": {"type": "object"},
    },
}


def _operation(spec: RouteSpec, defs: dict[str, Any]) -> dict[str, Any]:
    object_schema = schema_of(spec.response_model, "serialization", defs)
    responses: dict[str, Any] = {}
    if spec.path.endswith("/openapi.json"):
        # The document itself, not an envelope around it.
        responses["200"] = {
            "description": "This OpenAPI document",
            "content": {"application/json": {"schema": OPENAPI_DOCUMENT_SCHEMA}},
        }
    elif spec.path.endswith("/poll"):
        # "Poll now" asks for a poll and answers at once: the schedule runs it (CONTRACT §10).
        responses["202"] = {
            "description": "Accepted: the mailbox is due now (`nextPollOn`)",
            "content": {"application/json": {"schema": envelope(object_schema, True)}},
        }
    elif spec.content_type == "application/json":
        responses["200"] = {
            "description": "Success",
            "content": {"application/json": {"schema": envelope(object_schema, True)}},
        }
    else:
        responses["200"] = {
            "description": "Success",
            "content": {spec.content_type: {"schema": {"type": "string"}}},
        }
    if spec.path.endswith(".ics"):
        responses["304"] = {"description": "Not modified: `If-None-Match` names the current ETag"}
    responses.update(_error_responses(spec))
    operation: dict[str, Any] = {
        "operationId": spec.handler.__name__,
        "summary": spec.summary,
        "tags": [spec.tag],
        "parameters": parameters_of(spec, defs),
        "responses": responses,
    }
    if spec.need is not None:
        operation["security"] = [{"xAuth": []}, {"bearer": []}]
        if spec.path.startswith("/rest/"):
            operation["security"].append({"apiAuthKey": []})
        operation["description"] = (
            f"Needs: {spec.need.value}." if spec.need != Need.SIGNED_IN else ""
        )
    else:
        operation["security"] = []
    if spec.body_model is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {"schema": schema_of(spec.body_model, "validation", defs)}
            },
        }
    return operation


def _error_responses(spec: RouteSpec) -> dict[str, Any]:
    """The errors a route may answer: 401 where a token is looked at, 415 where a body is."""
    responses: dict[str, Any] = {}
    for status in ERROR_STATUSES:
        if status == "401" and spec.need is None and spec.path not in MAY_ANSWER_401:
            continue
        if status == "415" and spec.body_model is None:
            continue
        if status == "400" and spec.content_type == "text/html":
            # A page for people (the unsubscribe confirmation) says what is wrong as a page.
            responses[status] = {
                "description": ERROR_STATUSES[status],
                "content": {"text/html": {"schema": {"type": "string"}}},
            }
            continue
        responses[status] = {"$ref": f"#/components/responses/Error{status}"}
    return responses


def _links(spec: RouteSpec) -> dict[str, Any]:
    """OpenAPI links from a create to the operations on what it created: `POST …/event` answers
    the event whose `id` is the `{eventId}` of `GET`, `PUT`, `DELETE …/event/{eventId}` and the
    rest under it. A client (and Schemathesis's stateful phase) follows them to a real record."""
    if spec.method != "POST" or "{" in spec.path:
        return {}
    found: dict[str, Any] = {}
    prefix = spec.path + "/{"
    for target in ROUTES:
        names = re.findall(r"{(\w+)}", target.path)
        if not target.path.startswith(prefix) or len(names) != 1 or target is spec:
            continue
        found[f"{target.handler.__name__}"] = {
            "operationId": target.handler.__name__,
            "parameters": {names[0]: "$response.body#/object/id"},
        }
    return found


@functools.cache
def openapi_document() -> dict[str, Any]:
    model_refs()
    defs: dict[str, Any] = {"FieldError": FIELD_ERROR_SCHEMA, **model_defs}
    paths: dict[str, dict[str, Any]] = {}
    for spec in ROUTES:
        operation = _operation(spec, defs)
        links = _links(spec)
        if links:
            operation["responses"]["200"]["links"] = links
        paths.setdefault(spec.path, {})[spec.method.lower()] = operation
    field_data_by_type(defs)
    notification_ids(paths)
    standard_bounds(defs)
    standard_bounds(paths)
    error_responses = {
        f"Error{status}": {
            "description": description,
            "content": {"application/json": {"schema": envelope({}, False)}},
        }
        for status, description in ERROR_STATUSES.items()
    }
    for waited in ("Error429", "Error503"):
        error_responses[waited]["headers"] = {
            "Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}
        }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": API_TITLE,
            "version": "v1",
            "description": "Every answer is the envelope {success, message, timestamp, errors, object}.",
        },
        "servers": [{"url": "/"}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(defs.items())),
            "responses": error_responses,
            # The reference page's Authorize dialog shows each description: where a token
            # comes from is the first thing a reader trying a call needs.
            "securitySchemes": {
                "xAuth": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-Auth",
                    "description": _HOW_TO_SIGN_IN
                    + " Paste the token here as it is: every call then sends it as X-Auth.",
                },
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": _HOW_TO_SIGN_IN
                    + " The same token, sent as Authorization: Bearer TOKEN; paste it alone.",
                },
                "apiAuthKey": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "x-api-auth-key",
                    "description": _HOW_TO_SIGN_IN
                    + " The same token, taken as x-api-auth-key on the /rest/v1/en_US/ routes "
                    "(the player) only.",
                },
            },
        },
    }


__all__ = ["openapi_document"]
