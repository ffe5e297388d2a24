"""Every table Agora uses, and `create-tables`."""

from __future__ import annotations

import importlib
import pkgutil

from pynamodb.models import Model

import chalicelib.store as store_package
from chalicelib.store.base import MODELS


def all_models() -> list[type[Model]]:
    """Import every store module (each registers its models) and answer the models."""
    for module in pkgutil.iter_modules(store_package.__path__):
        importlib.import_module(f"{store_package.__name__}.{module.name}")
    return list(MODELS)


def create_tables(wait: bool = True) -> list[str]:
    """Create the tables (with their indexes) that do not exist yet; answer the names created.

    One ListTables says which exist (not a DescribeTable per table), and every missing table is
    asked for before any is waited for: DynamoDB makes them side by side.
    """
    from chalicelib.aws import client

    models = all_models()  # first: their names come from the settings, which may refuse
    dynamodb = client("dynamodb")
    existing: set[str] = set()
    for page in dynamodb.get_paginator("list_tables").paginate():
        existing.update(page["TableNames"])
    missing = [model for model in models if model.Meta.table_name not in existing]
    for model in missing:
        model.create_table(wait=False, billing_mode="PAY_PER_REQUEST")
    if wait:
        for model in missing:
            dynamodb.get_waiter("table_exists").wait(
                TableName=model.Meta.table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 300}
            )
    return [model.Meta.table_name for model in missing]
