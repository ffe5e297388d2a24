"""The `cli` tier: the command line in process (`python -m chalicelib.cli`: create-tables, load,
export, create-admin, deliver) and the demo it loads, under moto. Every test of this folder is
marked `cli` as it is collected, as tests/fast marks its own (`pytest -m cli` runs the tier);
its rule tests carry `pytest.mark.fast` themselves."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    # Called through the item's own hooks: only the tests below this folder get here.
    item.add_marker(pytest.mark.cli)
