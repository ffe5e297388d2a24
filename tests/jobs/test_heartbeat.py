"""The scheduled jobs' "it ran" heartbeat (issue 38): ScheduledRunCompleted once a run returns,
never for a run that raised, with exactly the dimensions its alarm names (infra/watch.py)."""

from __future__ import annotations

import json

import pytest

from chalicelib.jobs.base import heartbeat
from chalicelib.settings import SERVICE, reload_settings


@pytest.fixture
def in_lambda(monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-prod-SendDigests")
    monkeypatch.setenv("AGORA_TABLE_PREFIX", "agora-prod-")
    # What the template gives every function (infra/operations.py).
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", SERVICE)
    reload_settings()
    yield
    monkeypatch.undo()
    reload_settings()


def metrics(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if '"_aws"' in line]


@pytest.mark.fast
def test_a_completed_run_beats_with_the_alarms_dimensions(in_lambda, capsys):
    from infra.alarms import run_alarms
    from infra.cloudwatch import resource

    @heartbeat("send-digests")
    def run(event):
        return {"sent": 3}

    assert run(None) == {"sent": 3}
    [beat] = metrics(capsys.readouterr().out)
    [directive] = beat["_aws"]["CloudWatchMetrics"]
    assert directive["Metrics"] == [{"Name": "ScheduledRunCompleted", "Unit": "Count"}]
    assert beat["ScheduledRunCompleted"] in (1.0, [1.0])
    dimensions = {name: beat[name] for name in directive["Dimensions"][0]}
    [declared] = [a for a in run_alarms("agora-prod") if a.logical == "SendDigestsHeartbeatAlarm"]
    alarm = resource(declared)["Properties"]
    assert alarm["Namespace"] == directive["Namespace"]
    assert {d["Name"]: d["Value"] for d in alarm["Dimensions"]} == dimensions


@pytest.mark.fast
def test_a_run_that_raised_does_not_beat(in_lambda, capsys):
    @heartbeat("dispatch-mail-polls")
    def run(event):
        raise RuntimeError("the mailbox table is gone")

    with pytest.raises(RuntimeError):
        run(None)
    assert metrics(capsys.readouterr().out) == []
