"""The `local` tier: `make run` or its parts (agora_local: the embedded AWS, the snapshot, the SMTP
door, the mail schedule), in this process or started as `make run` is. Every test of this folder
is marked `local` as it is collected, as tests/fast marks its own (`pytest -m local` runs the
tier); its rule tests carry `pytest.mark.fast` themselves."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    # Called through the item's own hooks: only the tests below this folder get here.
    item.add_marker(pytest.mark.local)
