"""`make cost` (bench/cost.py): it runs without the network, README holds exactly what it writes,
every price names its source, and a figure the bench did not measure is said to be assumed."""

from __future__ import annotations

import json

import pytest

from bench import cost

pytestmark = pytest.mark.fast


def test_the_script_runs_and_readme_holds_its_table():
    assert cost.main(["--check"]) == 0, "run `make cost` and commit README.md"
    block = cost.readme_block()
    assert block is not None
    for size in cost.SIZES:
        assert size.name in block
    assert "**total (x86)**" in block and "total (arm64)" in block


def test_every_price_is_dated_and_names_the_page_that_publishes_it():
    prices = cost.load_prices()
    assert prices["taken_on"] and prices["region"] == "us-east-1"
    assert prices["prices"]
    for name, price in prices["prices"].items():
        assert price["usd"] > 0, name
        assert price["source"].startswith("https://"), name
        assert price["unit"], name
    for found in prices["hosted_alternatives"]["found"]:
        assert found["source"].startswith("https://") and found["taken_on"]


def test_each_size_costs_more_than_the_smaller_one_and_every_line_is_priced():
    prices = cost.load_prices()
    measured, _ = cost.load_measured()
    infra = cost.infra_counts()
    totals = []
    for size in cost.SIZES:
        lines = cost.monthly_cost(size, prices, measured, infra)
        assert all(lines[key] >= 0 for key, _ in cost.LINES)
        totals.append(sum(lines[key] for key, _ in cost.LINES))
    assert totals == sorted(totals) and totals[0] > 0


def test_a_figure_the_bench_did_not_measure_is_named_as_assumed(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(
        json.dumps(
            {
                "taken_on": "2026-11-23",
                "machine": "x",
                "figures": [
                    {"name": "ddb_requests_per_mail", "value": 1.5, "reference": 3},
                    {"name": "ddb_requests_per_call_event_get", "value": None, "note": "skipped"},
                ],
            }
        )
    )
    measured, missing = cost.load_measured(results)
    assert measured["ddb_requests_per_mail"] == 1.5
    assert "ddb_requests_per_call_event_get" in missing
    assert (
        measured["ddb_requests_per_call_event_get"]
        == cost.MEASURED_DEFAULTS["ddb_requests_per_call_event_get"]
    )
    block = cost.cost_block(cost.load_prices(), measured, missing, cost.infra_counts())
    assert "`ddb_requests_per_call_event_get`" in block


def test_readme_without_the_block_is_left_alone(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n")
    assert not cost.write_readme("table", path=readme)
    assert readme.read_text() == "# Title\n"
    readme.write_text(f"a\n{cost.README_START}\nold\n{cost.README_END}\nb\n")
    assert cost.write_readme("new", path=readme)
    assert readme.read_text() == f"a\n{cost.README_START}\nnew\n{cost.README_END}\nb\n"
    assert cost.readme_block(readme) == "new"
