"""check-aliases as AWS runs it (its inline code, its role, its hourly schedule): every alias
`live` runs its function's $LATEST, and the metric AliasesBehind says so; a function whose alias
runs older code (a deploy that bypassed make deploy) is named and counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.rehearsal import triggers


def behind_metric(stage) -> tuple[float, float, float]:
    """(samples, lowest, highest) of AliasesBehind put in the hour around now (the test's clock,
    which moto shares)."""
    # Read as the stack's alarm reads it: CloudWatch tells metrics apart by their whole set of
    # dimensions, so the function must write exactly those.
    watched = stage.template["Resources"]["AliasesBehindAlarm"]["Properties"]
    cloudwatch = stage.aws("cloudwatch")
    written = cloudwatch.list_metrics(Namespace="Agora", MetricName="AliasesBehind")["Metrics"]
    assert written and all(m["Dimensions"] == watched["Dimensions"] for m in written), written
    assert {"Name": "Stage", "Value": "agora-dev"} in watched["Dimensions"]
    points = cloudwatch.get_metric_statistics(
        Namespace=watched["Namespace"],
        MetricName=watched["MetricName"],
        Dimensions=watched["Dimensions"],
        StartTime=datetime.now(UTC) - timedelta(minutes=30),
        EndTime=datetime.now(UTC) + timedelta(minutes=30),
        Period=60,
        Statistics=["SampleCount", "Minimum", "Maximum"],
    )["Datapoints"]
    return (
        sum(p["SampleCount"] for p in points),
        min(p["Minimum"] for p in points),
        max(p["Maximum"] for p in points),
    )


def test_every_alias_runs_latest_and_a_function_left_behind_is_named(stage):
    checked = stage.invoke("CheckAliases", triggers.schedule(stage, "CheckAliases"))
    assert checked.error is None, checked.log[-3000:]
    assert checked.result == {"behind": []}, checked.log[-3000:]

    stage.stand_in.behind = {"agora-dev-PollMailbox"}
    try:
        late = stage.invoke("CheckAliases", triggers.schedule(stage, "CheckAliases"))
    finally:
        stage.stand_in.behind = set()
    assert late.error is None, late.log[-3000:]
    assert late.result == {
        "behind": ["agora-dev-PollMailbox: alias live runs version 1 (code), not $LATEST's"]
    }
    assert behind_metric(stage) == (2.0, 0.0, 1.0)
