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
    """Create the tables (with their indexes) that do not exist yet; answer the names created."""
    created = []
    for model in all_models():
        if not model.exists():
            model.create_table(wait=wait, billing_mode="PAY_PER_REQUEST")
            created.append(model.Meta.table_name)
    return created
