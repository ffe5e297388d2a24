"""Every test under tests/fast is a fast one: rules without AWS, servers or a browser, selected by
`pytest -m fast` (the rule tests elsewhere carry `pytest.mark.fast` themselves). A conftest's
`pytestmark` reaches no test, so the mark is added as each test of this folder is collected,
before `-m` selects and tests/conftest.py refuses a fast test that asks for moto or a server."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    # Called through the item's own hooks: only the tests below this folder get here.
    item.add_marker(pytest.mark.fast)
