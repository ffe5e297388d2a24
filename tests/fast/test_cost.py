"""`make cost` (bench/cost.py): it runs without the network, docs/benchmarks.md holds exactly what it writes,
every price names its source, and a figure the bench did not measure is said to be assumed."""

from __future__ import annotations

import json

import pytest

from bench import cost


def test_the_script_runs_and_the_page_holds_its_table():
    assert cost.main(["--check"]) == 0, "run `make cost` and commit docs/benchmarks.md"
    block = cost.page_block()
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


def test_a_page_without_the_block_is_left_alone(tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text("# Title\n")
    assert not cost.write_page("table", path=page)
    assert page.read_text() == "# Title\n"
    page.write_text(f"a\n{cost.BLOCK_START}\nold\n{cost.BLOCK_END}\nb\n")
    assert cost.write_page("new", path=page)
    assert page.read_text() == f"a\n{cost.BLOCK_START}\nnew\n{cost.BLOCK_END}\nb\n"
    assert cost.page_block(page) == "new"


def simulated_results(tmp_path, **figures: float | None):
    """bench/results.json as `make bench` left it, with a simulated day's figures added."""
    document = json.loads(cost.RESULTS_PATH.read_text())
    names = set(figures)
    document["figures"] = [f for f in document["figures"] if f["name"] not in names] + [
        {"name": name, "value": value, "reference": None, "ratio": None, "unit": "x"}
        for name, value in figures.items()
    ]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document))
    return cost.load_measured(path)


def test_polls_kms_calls_and_digest_workers_come_from_the_simulated_day(tmp_path):
    prices, infra = cost.load_prices(), cost.infra_counts()
    large = cost.SIZES[-1]
    code = {**cost.code_figures(), "mailboxes_per_message": 1.0}
    fixed, missing = simulated_results(tmp_path, mail_day_polls=None)  # type: ignore[arg-type]
    assert "mail_day_polls" in missing  # not measured: assumed, and said so
    measured, missing = simulated_results(
        tmp_path, mail_day_polls=960_000, mail_day_kms_calls=300, digest_100k_s=7_700
    )
    assert not {"mail_day_polls", "mail_day_kms_calls", "digest_100k_s"} & set(missing)
    fixed = {**fixed, "mail_day_kms_calls": cost.MEASURED_DEFAULTS["mail_day_kms_calls"]}
    before = cost.monthly_cost(large, prices, fixed, infra, code)
    after = cost.monthly_cost(large, prices, measured, infra, code)
    # 10,000 mailboxes: the simulated day's polls, thirty days of them.
    assert before["_polls"] == 2_880_000 * 30 and after["_polls"] == 960_000 * 30
    assert after["_kms_requests"] == 300 * 30
    assert after["kms"] < before["kms"] and after["lambda_compute"] < before["lambda_compute"]
    # A tenth of the mailboxes, a tenth of the polls.
    middle = cost.monthly_cost(cost.SIZES[1], prices, measured, infra, code)
    assert middle["_polls"] == pytest.approx(960_000 * 30 / 100)


def test_many_mailboxes_an_invocation_are_fewer_invocations_and_less_compute(tmp_path):
    prices, infra = cost.load_prices(), cost.infra_counts()
    measured, _ = simulated_results(tmp_path, mail_day_polls=960_000, mail_day_kms_calls=300)
    large = cost.SIZES[-1]
    one = cost.monthly_cost(
        large, prices, measured, infra, {**cost.code_figures(), "mailboxes_per_message": 1.0}
    )
    ten = cost.monthly_cost(
        large, prices, measured, infra, {**cost.code_figures(), "mailboxes_per_message": 10.0}
    )
    assert ten["_poll_invocations"] == pytest.approx(one["_poll_invocations"] / 10)
    assert ten["lambda_compute"] < one["lambda_compute"] and ten["sqs"] < one["sqs"]


def test_the_large_community_within_400_dollars_once_polls_follow_the_mail(tmp_path):
    """The issue's target, from a simulated day like the one the poller's design gives (polls
    every 15 minutes at most, one Decrypt per container, ten mailboxes an invocation): the
    lead's `make simulate && make cost` puts the measured figures in docs/benchmarks.md."""
    prices, infra = cost.load_prices(), cost.infra_counts()
    measured, _ = simulated_results(
        tmp_path, mail_day_polls=960_000, mail_day_kms_calls=300, digest_100k_s=7_700
    )
    code = {**cost.code_figures(), "mailboxes_per_message": 10.0}
    lines = cost.monthly_cost(cost.SIZES[-1], prices, measured, infra, code)
    assert sum(lines[key] for key, _ in cost.LINES) <= 400


def test_a_community_where_every_member_takes_the_daily_digest_is_priced():
    prices, infra = cost.load_prices(), cost.infra_counts()
    measured, _ = cost.load_measured()
    large = cost.monthly_cost(cost.SIZES[-1], prices, measured, infra)
    every = cost.monthly_cost(cost.EVERY_MEMBER_DIGEST, prices, measured, infra)
    # 30 digests a member a month, and the same instant mail as the large community's.
    assert every["_mails_out"] - large["_mails_out"] == pytest.approx(100_000 * (30 - 8 * 0.5))
    assert every["_mails_out"] >= 3_000_000
    per_thousand = prices["prices"]["ses_thousand_mails"]["usd"]
    assert every["ses"] == pytest.approx(every["_mails_out"] / 1000 * per_thousand)
    assert every["lambda_compute"] > large["lambda_compute"]
    assert every["dynamodb_requests"] > large["dynamodb_requests"]
    assert cost.EVERY_MEMBER_DIGEST.name in cost.current_block()


def test_the_cost_prices_every_alarm_metric_composite_backup_audit_key_and_access_log():
    """Issue 57: make cost left out composite and multi-metric alarms, the real custom-metric
    count (about 28, not 8), point-in-time recovery, the audit table, DynamoDB's KMS requests
    and the API's access logs (an operator's total about $375-380 against its $361)."""
    from infra import yaml_text
    from tests.support import REPO_ROOT

    prices, measured = cost.load_prices(), cost.load_measured()[0]
    infra = cost.infra_counts()
    resources = yaml_text.load((REPO_ROOT / "infra" / "prod.yaml").read_text())["Resources"]
    kinds = [r.get("Type") for r in resources.values()]
    assert infra["composite_alarms"] == kinds.count("AWS::CloudWatch::CompositeAlarm") >= 7
    # A metric-math alarm pays for each metric it reads.
    assert infra["alarm_metrics"] > infra["alarms"] == kinds.count("AWS::CloudWatch::Alarm")
    assert infra["metrics"] >= 28 and infra["tables"] == kinds.count("AWS::DynamoDB::Table")
    p = {name: price["usd"] for name, price in prices["prices"].items()}
    large = cost.monthly_cost(cost.SIZES[-1], prices, measured, infra)
    assert large["cloudwatch_metrics_alarms"] == pytest.approx(
        infra["metrics"] * p["cloudwatch_metric_month"]
        + infra["alarm_metrics"] * p["cloudwatch_alarm_month"]
        + infra["composite_alarms"] * p["cloudwatch_composite_alarm_month"]
    )
    # Continuous backups are billed by the tables' size, the audit log's included.
    assert large["dynamodb_pitr"] == pytest.approx(
        large["dynamodb_storage"] / p["dynamodb_storage_gb_month"] * p["dynamodb_pitr_gb_month"]
    )
    assert large["_table_kms_requests"] == infra["tables"] * 8_640
    assert "dynamodb_pitr" in dict(cost.LINES)
    # Counted as before (8 metrics, one per alarm, no composite), CloudWatch cost less.
    bare = {**infra, "metrics": 8, "alarm_metrics": infra["alarms"], "composite_alarms": 0}
    assert (
        cost.monthly_cost(cost.SIZES[-1], prices, measured, bare)["cloudwatch_metrics_alarms"]
        < (large["cloudwatch_metrics_alarms"])
    )


def test_the_push_days_month_is_priced_as_make_cost_prices_it_today():
    """`make simulate` prices its push days with `make cost`'s model, and nothing prices them
    again when the model changes (an alarm, a metric, a line): the all-POP3 day's month, priced
    again from bench/results.json, is the one the results and docs/benchmarks.md's push-day
    table hold (they said $380.58 once the model gave $382.17). Run `make simulate` when not."""
    from bench.report import PAGE, read_section, significant
    from bench.simulate import PUSH_DAY_BLOCK

    measured, _ = cost.load_measured()
    lines = cost.monthly_cost(
        cost.SIZES[2],
        cost.load_prices(),
        measured,
        cost.infra_counts(),
        cost.code_figures(),
        push_share=0.0,
    )
    today = cost.month_total(lines)
    results = json.loads(cost.RESULTS_PATH.read_text(encoding="utf-8"))["figures"]
    [stored] = [f["value"] for f in results if f["name"] == "mail_push_day_0_cost_usd"]
    assert stored == significant(today), "run `make simulate`"
    table = read_section(PAGE, *PUSH_DAY_BLOCK)
    assert table is not None
    [row] = [line for line in table.splitlines() if line.startswith("| 0% |")]
    # The page's day is the simulation's own (its polls unrounded): within a few cents.
    assert abs(float(row.rsplit("$", 1)[1].strip(" |").replace(",", "")) - today) < 0.05, row
