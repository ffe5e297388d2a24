"""`make test`'s sharing out (tests/conftest.py `shared_setup_group`): tests that share a
module-wide fixture (a module's `make run`, the console's Chromium) run on one xdist worker, so
it is started once. The grouping once failed silently (pytest 9.2 and xdist 3.8: every worker
started its own `make run` and Chromium); this runs a probe module under the same options."""

from __future__ import annotations

import os

import pytest

from tests.support import REPO_ROOT
from tests.support.running import run_module


@pytest.mark.slow
def test_tests_sharing_a_module_fixture_run_on_one_worker(tmp_path):
    env = {**os.environ, "GROUPING_PROBE_DIR": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    run = run_module(
        "pytest",
        "-n",
        "2",
        "--dist",
        "loadgroup",
        "-p",
        "no:cacheprovider",
        "-q",
        "tests/support/grouping_probe.py",
        env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    ran = sorted(p.name for p in tmp_path.iterdir())
    assert len(ran) == 6, ran
    workers = {name.split("-", 1)[1] for name in ran}
    assert len(workers) == 1 and workers != {"main"}, ran
    # The fixture was made on the worker that ran each test.
    assert {(tmp_path / name).read_text() for name in ran} == workers
