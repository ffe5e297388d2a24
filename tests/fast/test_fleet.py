"""The poller's concurrency follows from the declared fleet (Little's law), and the alarms watch
the fleet: none fires on one broken mailbox, the share-failing one at 5% of them."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from infra.fleet import FLEETS, Fleet
from infra.operations import MAX_CONCURRENCY
from tests.support import REPO_ROOT


def template(stage: str) -> dict[str, Any]:
    # libyaml's parser where PyYAML has it (infra/yaml_text.py): the pure-Python one took about
    # 0.4 s of CPU for each stage's template, read by two tests each.
    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        pass

    # CloudFormation's short forms (!Ref, !GetAtt, !Sub …) as plain values.
    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return dict(yaml.load((REPO_ROOT / "infra" / f"{stage}.yaml").read_text(), Loader=Loader))


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_each_stage_polls_its_declared_fleet_within_the_interval_at_its_cap(stage):
    fleet = FLEETS[stage]
    cap = MAX_CONCURRENCY[stage]["PollMailbox"]
    assert cap == fleet.concurrency
    assert fleet.fits(cap), f"{fleet} needs more than {cap} executions"
    resources = template(stage)["Resources"]
    events = resources["PollMailbox"]["Properties"]["Events"]
    caps = [event["Properties"]["ScalingConfig"]["MaximumConcurrency"] for event in events.values()]
    assert caps == [cap]


def test_a_fleet_larger_than_its_cap_can_poll_fails_the_check():
    declared = FLEETS["prod"]
    grown = Fleet(mailboxes=declared.mailboxes * 10, seconds_per_poll=declared.seconds_per_poll)
    assert not grown.fits(declared.concurrency)
    assert grown.fits(grown.concurrency)
    slower = Fleet(mailboxes=declared.mailboxes, seconds_per_poll=declared.seconds_per_poll * 3)
    assert not slower.fits(declared.concurrency)


def test_little_law_with_the_prod_figures():
    # 10,000 mailboxes, 10 a message: 1,000 messages in 300 s, each 2.5 s: 8.3 in flight, x2.
    assert FLEETS["prod"].concurrency == 17
    assert FLEETS["prod"].mailboxes_polled(17) == 20_400


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_no_alarm_fires_on_one_broken_mailbox_and_the_share_alarm_needs_five_percent(stage):
    resources = template(stage)["Resources"]
    alarms = {
        n: r["Properties"]
        for n, r in resources.items()
        if r.get("Type") == "AWS::CloudWatch::Alarm"
    }
    # Nothing watches a single poll's failure.
    for name, alarm in alarms.items():
        metrics = [alarm.get("MetricName")] + [
            m.get("MetricStat", {}).get("Metric", {}).get("MetricName")
            for m in alarm.get("Metrics", [])
        ]
        assert "MailboxPollFailed" not in metrics, name
    share = alarms["MailboxesFailingAlarm"]
    assert (
        share["Threshold"] == 5 and share["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    )
    by_id = {m["Id"]: m for m in share["Metrics"]}
    assert by_id["failing"]["MetricStat"]["Metric"]["MetricName"] == "MailboxesFailing"
    assert by_id["enabled"]["MetricStat"]["Metric"]["MetricName"] == "MailboxesEnabled"
    # 15 minutes: the least failing count of the period, over the period's enabled count.
    assert by_id["failing"]["MetricStat"]["Period"] == 900
    assert by_id["failing"]["MetricStat"]["Stat"] == "Minimum"
    expression = by_id["share"]["Expression"]
    assert evaluate(expression, failing=1, enabled=10) < 5  # one of ten: not the operator's
    assert evaluate(expression, failing=500, enabled=10_000) >= 5
    assert evaluate(expression, failing=499, enabled=10_000) < 5
    assert evaluate(expression, failing=2, enabled=40) >= 5


def evaluate(expression: str, **values: float) -> float:
    """The alarm's metric math, as CloudWatch reads this one IF: in Python's words."""
    import re

    text = re.sub(r"IF\((.*?), (.*?), (.*)\)$", r"((\2) if (\1) else (\3))", expression)
    text = text.replace(" AND ", " and ")
    return float(eval(text, {}, dict(values)))  # noqa: S307 - our own template's expression
