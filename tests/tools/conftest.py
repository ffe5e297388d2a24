"""The `tools` tier: the project's own tools: `make bench`'s bookkeeping, `make simulate`'s day,
`make docs` and `make test`'s sharing out of the suite. Every test of this folder is marked
`tools` as it is collected, as tests/fast marks its own (`pytest -m tools` runs the tier); its
rule tests carry `pytest.mark.fast` themselves."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    # Called through the item's own hooks: only the tests below this folder get here.
    item.add_marker(pytest.mark.tools)
