"""The `infra` tier: the packaged stack: the generated templates and policies, the zip, SAM's
translation, `make deploy` and `make restore` against moto's CloudFormation. Every test of this
folder is marked `infra` as it is collected, as tests/fast marks its own (`pytest -m infra` runs
the tier); its rule tests carry `pytest.mark.fast` themselves."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    # Called through the item's own hooks: only the tests below this folder get here.
    item.add_marker(pytest.mark.infra)
