"""The `runtime` tier: what every function shares at run time (settings, log lines and signals,
secrets and signing keys), under moto in process. Every test of this folder is marked `runtime`
as it is collected, as tests/fast marks its own (`pytest -m runtime` runs the tier); its rule
tests carry `pytest.mark.fast` themselves."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    # Called through the item's own hooks: only the tests below this folder get here.
    item.add_marker(pytest.mark.runtime)
