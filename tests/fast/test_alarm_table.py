"""Every alarm of the stack is a row of one table (infra/alarms.py `declared`) and the causes that
page are its CAUSES (issue 60): an AWS::CloudWatch::Alarm or CompositeAlarm in the built template
that the table does not declare, or a row the template lacks or made otherwise, fails here. A
new alarm is then one row, not a resource added in whichever infra module was at hand."""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import re
from typing import Any

import pytest

from tests.support import REPO_ROOT

KINDS = ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")


def built(stage: str) -> dict[str, Any]:
    from infra import build

    # template() loads the store's models under the stage's table names: put them back after.
    with build._store_restored():
        return build.template(stage)


def declared_resources(stage: str, template: dict[str, Any]) -> dict[str, Any]:
    """What the table makes of the stage's alarms: logical id -> resource."""
    from infra import alarms, build, cloudwatch, paging

    resources = template["Resources"]
    tables = {
        logical: resource["Properties"]["TableName"]
        for logical, resource in resources.items()
        if resource.get("Type") == "AWS::DynamoDB::Table"
    }
    rows = alarms.declared(stage, build.stage_names(stage), tables)
    found = {row.logical: cloudwatch.resource(row) for row in rows}
    composites = paging.route(stage, rows, alarms.CAUSES)
    found.update({k: v for k, v in composites.items() if v["Type"] in KINDS})
    return found


def differences(stage: str, template: dict[str, Any]) -> list[str]:
    """Each alarm of `template` the table does not declare, or declares otherwise, and each
    declared alarm the template lacks."""
    made = {k: r for k, r in template["Resources"].items() if r.get("Type") in KINDS}
    declared = declared_resources(stage, template)
    found = [f"{k}: not in infra/alarms.py's table" for k in made.keys() - declared.keys()]
    found += [f"{k}: declared, not in the template" for k in declared.keys() - made.keys()]
    found += [
        f"{k}: not as declared" for k in made.keys() & declared.keys() if made[k] != declared[k]
    ]
    return sorted(found)


@pytest.fixture(scope="module")
def templates() -> dict[str, dict[str, Any]]:
    return {stage: built(stage) for stage in ("dev", "prod")}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_every_alarm_of_the_built_template_is_a_row_of_the_table_and_each_row_is_made(
    stage, templates
):
    template = templates[stage]
    assert differences(stage, template) == []
    kinds = [r.get("Type") for r in template["Resources"].values()]
    # Not an empty table matching an empty template: the stage's ~60 alarms and 7 pages.
    assert kinds.count("AWS::CloudWatch::Alarm") >= 60
    assert kinds.count("AWS::CloudWatch::CompositeAlarm") == 7


def test_an_alarm_added_outside_the_table_or_a_row_left_out_or_changed_is_found(templates):
    template = copy.deepcopy(templates["prod"])
    resources = template["Resources"]
    stray = copy.deepcopy(resources["Api5xxAlarm"])
    stray["Properties"]["AlarmName"] = "agora-prod-something-new"
    resources["SomethingNewAlarm"] = stray
    del resources["DigestsLeftOverAlarm"]
    resources["ApiDownAlarm"]["Properties"]["AlarmRule"] += ' OR ALARM("agora-prod-api-5xx")'
    resources["ApiLatencyAlarm"]["Properties"]["Threshold"] = 1000
    assert differences("prod", template) == [
        "ApiDownAlarm: not as declared",
        "ApiLatencyAlarm: not as declared",
        "DigestsLeftOverAlarm: declared, not in the template",
        "SomethingNewAlarm: not in infra/alarms.py's table",
    ]


def test_the_table_names_each_alarm_once_and_pages_only_declared_causes():
    from infra import alarms, build, paging
    from infra.cloudwatch import ITSELF, TICKET

    rows = alarms.declared("prod", build.stage_names("prod"), {})
    assert len({row.logical for row in rows}) == len({row.name for row in rows}) == len(rows)
    assert {row.pages for row in rows} - {TICKET, ITSELF} == set(alarms.CAUSES)
    # A row that pages under a cause nobody declared is refused, not dropped.
    stray = [*rows, dataclasses.replace(rows[0], pages="NoSuchCauseAlarm")]
    with pytest.raises(ValueError, match="NoSuchCauseAlarm"):
        paging.route("prod", stray, alarms.CAUSES)


SEARCH = re.compile(r'\{Agora,([^}]*)\} MetricName="(\w+)" Stage="([^"]*)"')


def read_metrics(template: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(where, name, dimensions) of each metric of ours (namespace Agora) that the template
    reads: the alarms' own, their metric math's, the dashboard's lines."""
    found = []
    for logical, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        if resource.get("Type") == "AWS::CloudWatch::Alarm":
            stats = [
                m["MetricStat"]["Metric"]
                for m in properties.get("Metrics", [])
                if "MetricStat" in m
            ]
            for read in [properties, *stats]:
                if read.get("Namespace") == "Agora":
                    dimensions = {d["Name"]: d["Value"] for d in read.get("Dimensions", [])}
                    found.append((logical, read["MetricName"], dimensions))
        elif resource.get("Type") == "AWS::CloudWatch::Dashboard":
            body = json.loads(properties["DashboardBody"]["Fn::Sub"])
            lines = [line for w in body["widgets"] for line in w["properties"].get("metrics", [])]
            found += [(logical, name, dimensions) for name, dimensions in dashboard_reads(lines)]
    return found


def dashboard_reads(lines: list[list[Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(name, dimensions) of each metric of ours a dashboard line reads: a metric line's
    name-value pairs, or a SEARCH's schema (its dimensions named, their values None, but
    Stage's)."""
    found = []
    for line in lines:
        if isinstance(line[0], dict):
            for keys, name, stage in SEARCH.findall(line[0]["expression"]):
                found.append((name, dict.fromkeys(keys.split(",")) | {"Stage": stage}))
        elif line[0] == "Agora":
            pairs = [part for part in line[2:] if isinstance(part, str)]
            found.append((line[1], dict(zip(pairs[::2], pairs[1::2], strict=True))))
    return found


def written_dimensions(template: dict[str, Any]) -> dict[str, set[frozenset[str]]]:
    """Metric name -> the sets of dimension names its writers give it: each `metrics.emit` call
    (Stage and Powertools' service, the call's own, Version when VERSIONED), the access log's
    metric filter, check-aliases' put_metric_data (tests/infra/test_alias_check.py)."""
    from chalicelib import metrics
    from tests.fast.test_metrics_registered import emitted

    base = {"Stage", "service"}
    written: dict[str, set[frozenset[str]]] = {}
    for name, keywords in emitted().items():
        versioned = {"Version"} if name in metrics.VERSIONED else set()
        written.setdefault(name, set()).add(frozenset(base | keywords | versioned))
    for resource in template["Resources"].values():
        if resource.get("Type") == "AWS::Logs::MetricFilter":
            for made in resource["Properties"]["MetricTransformations"]:
                names = frozenset(d["Key"] for d in made.get("Dimensions", []))
                written.setdefault(made["MetricName"], set()).add(names)
    written.setdefault("AliasesBehind", set()).add(frozenset(base))
    return written


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_every_metric_of_ours_an_alarm_or_the_dashboard_reads_is_written_with_those_dimensions(
    stage, templates
):
    """CloudWatch tells metrics apart by their whole set of dimensions: an alarm or a dashboard
    line that names one dimension more or fewer than the code writes reads a metric nobody
    writes, sees no data and never fires (AliasesBehind lacked `service`, the dashboard's mail
    and notification lines too)."""
    from chalicelib.settings import SERVICE

    template = templates[stage]
    written = written_dimensions(template)
    read = read_metrics(template)
    jobs = {
        call.args[0].value
        for call in ast.walk(ast.parse((REPO_ROOT / "app.py").read_text()))
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "heartbeat"
    }
    wrong = [
        f"{where}: {name} {sorted(dimensions)}"
        for where, name, dimensions in read
        if frozenset(dimensions) not in written.get(name, set())
        or dimensions["Stage"] != f"agora-{stage}"
        # A SEARCH names a dimension without its value (None): any value of it.
        or dimensions.get("service") not in (SERVICE, None)
        or dimensions.get("Job") not in (*jobs, None)
    ]
    assert wrong == []
    # Not an empty list passing: every alarm family on our metrics and the dashboard's lines.
    names = {name for _, name, _ in read}
    assert {"MailHandled", "ScheduledRunCompleted", "AliasesBehind", "ApiThrottled"} <= names
    assert {"drain-outbox", "dispatch-mail-polls", "send-digests"} <= jobs
    assert any(where == "Dashboard" for where, _, _ in read)
    assert {"MailboxPollFailed", "RejectionNoticeNotSent"} <= names  # the dashboard's searches


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_senders_left_untold_of_a_rejection_raise_an_alarm_not_only_a_dashboard_line(
    stage, templates
):
    """RejectionNoticeNotSent was read by a dashboard widget only: SES refusing the notices, no
    group to send them as, a DNS failure while proving the sender reached nobody. An alarm sums
    every reason the code counts but `suppressed` (an address that bounced or complained must
    not be told) over an hour, and tickets at a few: one is a stranger's address."""
    from chalicelib.services.mail_in.notices import NOT_SENT_REASONS

    alarms = {
        logical: resource["Properties"]
        for logical, resource in templates[stage]["Resources"].items()
        if resource.get("Type") == "AWS::CloudWatch::Alarm"
        and any(
            m.get("MetricStat", {}).get("Metric", {}).get("MetricName") == "RejectionNoticeNotSent"
            for m in resource["Properties"].get("Metrics", [])
        )
    }
    assert list(alarms) == ["SendersUntoldAlarm"]
    untold = alarms["SendersUntoldAlarm"]
    read = {
        m["Id"]: {d["Name"]: d["Value"] for d in m["MetricStat"]["Metric"]["Dimensions"]}
        for m in untold["Metrics"]
        if "MetricStat" in m
    }
    assert {d["Reason"] for d in read.values()} == set(NOT_SENT_REASONS) - {"suppressed"}
    assert {m["MetricStat"]["Period"] for m in untold["Metrics"] if "MetricStat" in m} == {3600}
    [total] = [m for m in untold["Metrics"] if m.get("ReturnData")]
    assert sorted(total["Expression"].split(" + ")) == sorted(f"FILL({i}, 0)" for i in read)
    assert 1 < untold["Threshold"] <= 5
    assert untold["AlarmActions"] == [{"Ref": "AlarmTopic"}]  # a ticket, not a page


def test_the_reasons_the_untold_alarm_sums_are_the_ones_the_code_counts():
    """The alarm above is held to NOT_SENT_REASONS, the code's counts were not: a reason spelled
    otherwise where it is counted (`no_group`) would be a metric the alarm never reads, and both
    tests passed. Every Reason the notices count, as the source spells it, is one of the tuple's,
    and each of the tuple's is counted somewhere."""
    from chalicelib.services.mail_in.notices import NOT_SENT_REASONS

    source = REPO_ROOT / "chalicelib" / "services" / "mail_in" / "notices.py"
    counted: set[object] = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr == "emit" and getattr(node.args[0], "value", None) == (
            "RejectionNoticeNotSent"
        ):
            counted |= {k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
        drain = isinstance(node.func.value, ast.Name) and node.func.value.id == "self"
        if node.func.attr == "not_sent" and drain:  # RejectionNotices.not_sent(event, reason, why)
            counted.add(getattr(node.args[1], "value", node.args[1]))
    assert counted == set(NOT_SENT_REASONS)
