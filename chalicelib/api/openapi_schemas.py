"""The schemas of the OpenAPI document (chalicelib/api/openapi_document.py): the envelope around
every answer, each route's body and response model in one JSON Schema run, and the touches JSON
Schema readers need (standard bounds, each notification kind's ids, a profile field's `data` per
type).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

from chalicelib.api.routing import ROUTES, RouteSpec
from chalicelib.schemas.profile_fields import DATA_MODELS
from chalicelib.services.notifications import NOTIFICATION_NAMES

REF = "#/components/schemas/{model}"


def is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def envelope(object_schema: dict[str, Any], success: bool) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["success", "message", "timestamp", "errors", "object"],
        "properties": {
            "success": {"type": "boolean", "const": success},
            "message": {"type": "string"},
            "timestamp": {"type": "string", "format": "date-time"},
            "errors": {"type": "array", "items": {"$ref": REF.format(model="FieldError")}},
            "object": object_schema,
        },
    }


FIELD_ERROR_SCHEMA = {
    "type": "object",
    "required": ["key", "value", "message"],
    "properties": {
        "key": {"type": "string"},
        "value": {"type": "string"},
        "message": {"type": "string"},
    },
}


def schema_of(annotation: Any, mode: str, defs: dict[str, Any]) -> dict[str, Any]:
    if annotation is None:
        return {"type": "null"}
    if is_model(annotation) and (annotation, mode) in model_refs():
        return model_refs()[(annotation, mode)]
    schema = TypeAdapter(annotation).json_schema(mode=mode, ref_template=REF, by_alias=True)  # type: ignore[arg-type]
    defs.update(schema.pop("$defs", {}))
    return schema


def parameters_of(spec: RouteSpec, defs: dict[str, Any]) -> list[dict[str, Any]]:
    """A route's path and query parameters, from their models."""
    parameters = []
    for location, model in (("path", spec.path_model), ("query", spec.query_model)):
        if model is None:
            continue
        schema = model.model_json_schema(by_alias=True, ref_template=REF)
        defs.update(schema.pop("$defs", {}))
        required = set(schema.get("required", []))
        for name, prop in schema.get("properties", {}).items():
            # A parameter left out is absent, not null: a null default says nothing a client can send.
            prop = {
                k: v for k, v in prop.items() if k != "title" and not (k == "default" and v is None)
            }
            parameters.append(
                {
                    "name": name,
                    "in": location,
                    "required": location == "path" or name in required,
                    "schema": prop,
                }
            )
    return parameters


@functools.cache
def model_refs() -> dict[tuple[type[BaseModel], str], dict[str, Any]]:
    """Every body and response model in one schema run, so that names are unique across modes."""
    pairs: set[tuple[type[BaseModel], str]] = set()
    for spec in ROUTES:
        if is_model(spec.body_model):
            pairs.add((spec.body_model, "validation"))
        if is_model(spec.response_model):
            pairs.add((spec.response_model, "serialization"))
    ordered = sorted(pairs, key=lambda pair: (pair[0].__module__, pair[0].__qualname__, pair[1]))
    refs, schema = models_json_schema(ordered, ref_template=REF, by_alias=True)  # type: ignore[arg-type]
    model_defs.update(schema.get("$defs", {}))
    return dict(refs)  # type: ignore[arg-type]


model_defs: dict[str, Any] = {}

# Pydantic names the bounds of a type with a before-validator (JsonInt) by their Python names.
_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def standard_bounds(node: Any) -> None:
    """`ge`/`le` as JSON Schema's `minimum`/`maximum`, which clients and fuzzers read."""
    if isinstance(node, dict):
        if node.get("type") in ("integer", "number"):
            for python_name, keyword in _BOUNDS.items():
                if python_name in node:
                    node[keyword] = node.pop(python_name)
        for value in node.values():
            standard_bounds(value)
    elif isinstance(node, list):
        for value in node:
            standard_bounds(value)


def notification_ids(paths: dict[str, dict[str, Any]]) -> None:
    """Each kind of notification has its own ids (spec "Notifications"): the path names the kind,
    and its `notificationId` is one of that kind's."""

    for path, operations in paths.items():
        kind = re.search(r"/notifications/(\w+)/\{notificationId\}$", path)
        if kind is None or kind.group(1) not in NOTIFICATION_NAMES:
            continue
        for operation in operations.values():
            for parameter in operation["parameters"]:
                if parameter["name"] == "notificationId":
                    ids = sorted(NOTIFICATION_NAMES[kind.group(1)])
                    parameter["schema"] = {**parameter["schema"], "enum": ids}


def field_data_by_type(defs: dict[str, Any]) -> None:
    """A profile field's `data` is checked against the model of its `typeId` (closed: unknown keys
    are a 400), so the document says so: one branch per type, `typeId` and the `data` it takes.
    An update without `typeId` is checked against the stored type: its `data` fits one of them."""

    models: list[tuple[type[BaseModel], Literal["validation"]]] = [
        (model, "validation") for model in DATA_MODELS.values()
    ]
    refs, schema = models_json_schema(models, ref_template=REF, by_alias=True)
    defs.update(schema.get("$defs", {}))
    by_type = [
        {
            "required": ["typeId"],
            "properties": {"typeId": {"const": int(type_id)}, "data": refs[(model, "validation")]},
        }
        for type_id, model in DATA_MODELS.items()
    ]
    any_data = [refs[pair] for pair in models]
    if "FieldBody" in defs:
        defs["FieldBody"]["properties"]["data"] = {"type": "object"}
        defs["FieldBody"]["oneOf"] = by_type
    if "FieldUpdate" in defs:
        defs["FieldUpdate"]["properties"]["data"] = {"anyOf": [*any_data, {"type": "null"}]}
        defs["FieldUpdate"]["anyOf"] = [*by_type, {"not": {"required": ["typeId"]}}]
