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

    One ListTables says which exist (not a DescribeTable per table). Each table is created and
    waited for in turn: PynamoDB switches a table's TTL on right after creating it, which
    DynamoDB refuses while the table is still being created.
    """
    from chalicelib.aws import client

    models = all_models()  # first: their names come from the settings, which may refuse
    existing: set[str] = set()
    for page in client("dynamodb").get_paginator("list_tables").paginate():
        existing.update(page["TableNames"])
    missing = [model for model in models if model.Meta.table_name not in existing]
    for model in missing:
        model.create_table(wait=wait, billing_mode="PAY_PER_REQUEST")
    return [model.Meta.table_name for model in missing]
