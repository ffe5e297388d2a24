"""Every alarm of the stack is a row of one table (infra/alarms.py `declared`) and the causes that
page are its CAUSES (issue 60): an AWS::CloudWatch::Alarm or CompositeAlarm in the built template
that the table does not declare, or a row the template lacks or made otherwise, fails here. A
new alarm is then one row, not a resource added in whichever infra module was at hand."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

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
