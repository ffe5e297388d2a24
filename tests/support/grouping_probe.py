"""Tests that share a module-wide fixture, run by tests/tools/test_suite_groups.py under `make test`'s
xdist options: each writes the worker it ran on to the folder named by GROUPING_PROBE_DIR."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def shared() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@pytest.mark.parametrize("number", range(6))
def test_records_its_worker(shared: str, number: int) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (Path(os.environ["GROUPING_PROBE_DIR"]) / f"{number}-{worker}").write_text(shared)
