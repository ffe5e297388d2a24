"""Every table Agora uses, and `create-tables`."""

from __future__ import annotations

import importlib
import pkgutil
import time
from typing import Any

from pynamodb.models import Model

import chalicelib.store as store_package
from chalicelib.aws import client
from chalicelib.store.base import MODELS


def all_models() -> list[type[Model]]:
    """Import every store module (each registers its models) and answer the models."""
    for module in pkgutil.iter_modules(store_package.__path__):
        importlib.import_module(f"{store_package.__name__}.{module.name}")
    return list(MODELS)


def create_tables(wait: bool = True) -> list[str]:
    """Create the tables (with their indexes) that do not exist yet; answer the names created.

    One ListTables says which exist (not a DescribeTable per table). Each table is created and
    waited for in turn: its TTL is switched on right after, which DynamoDB refuses while the
    table is still being created.
    """

    models = all_models()  # first: their names come from the settings, which may refuse
    existing: set[str] = set()
    for page in client("dynamodb").get_paginator("list_tables").paginate():
        existing.update(page["TableNames"])
    missing = [model for model in models if model.Meta.table_name not in existing]
    for model in missing:
        create_table(model, wait)
    return [model.Meta.table_name for model in missing]


def create_table(model: type[Model], wait: bool) -> None:
    """What PynamoDB's `Model.create_table(wait, billing_mode="PAY_PER_REQUEST")` does for a table
    known to be missing, without its first step, a DescribeTable asking whether the table exists
    (a tenth of a first `make run` start's CPU, for a dozen tables ListTables already said are
    missing): the same CreateTable (keys, indexes, stream), the same wait for ACTIVE, the same
    TTL update (tests/store/test_tables.py compares the tables both make)."""
    schema = model._get_schema()
    meta = model.Meta
    arguments: dict[str, Any] = {
        "attribute_definitions": schema["attribute_definitions"],
        "key_schema": schema["key_schema"],
        "global_secondary_indexes": schema["global_secondary_indexes"],
        "local_secondary_indexes": schema["local_secondary_indexes"],
        "billing_mode": "PAY_PER_REQUEST",
    }
    if hasattr(meta, "stream_view_type"):
        arguments["stream_specification"] = {
            "stream_enabled": True,
            "stream_view_type": meta.stream_view_type,
        }
    if hasattr(meta, "tags"):
        arguments["tags"] = meta.tags
    connection = model._get_connection()
    connection.create_table(**arguments)
    while wait and connection.describe_table().get("TableStatus") != "ACTIVE":
        time.sleep(2)
    model.update_ttl(ignore_update_ttl_errors=False)
