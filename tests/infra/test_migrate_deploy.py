"""`make deploy` runs the migrations after the stack update: the stack's `migrate` function,
invoked (its alias) until it answers done, each invocation stopping well inside its time."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from tests.infra.test_privileges import assert_granted, declared_tables, recorder  # noqa: F401
from tests.store.test_migrations import old_entries


class ShortLambda:
    """A Lambda context whose time runs out after the first page of each invocation."""

    def __init__(self) -> None:
        self.times = iter([900_000, 900_000])

    def get_remaining_time_in_millis(self) -> int:
        return next(self.times, 0)


class InvokesMigrate:
    """The Lambda client make deploy calls, running app.py's function in this process (moto's
    Lambda needs Docker)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[dict[str, Any]] = []

    def invoke(self, **call: Any) -> dict[str, Any]:
        import app

        self.calls.append(call)
        answer = app.migrate_items(json.loads(call["Payload"]), ShortLambda())
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(answer).encode())}


@pytest.fixture
def stack(aws) -> Any:
    """A stack with a resource of logical id Migrate, as the deployed one has."""
    from chalicelib.aws import client

    cloudformation = client("cloudformation")
    template = {"Resources": {"Migrate": {"Type": "AWS::SQS::Queue"}}}
    cloudformation.create_stack(StackName="agora-dev", TemplateBody=json.dumps(template))
    return cloudformation


def test_deploy_invokes_migrate_until_done_and_prints_each_line(stack, client, capsys):
    from chalicelib.store.migrations import migrations
    from infra.deploy import run_migrations

    old_entries("post#g1", 3)
    invoker = InvokesMigrate(client)
    run_migrations(stack, invoker, "agora-dev")

    # One page per invocation here: one invocation per migration.
    assert len(invoker.calls) == len(migrations())
    assert {c["Qualifier"] for c in invoker.calls} == {"live"}
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "agora-dev: migrate: mail-log-status-index: done: 3 item(s) read, 3 changed "
        "(mail log entries listed by ?status=)"
    )
    assert any(line.startswith("agora-dev: migrate: people-search-index: waits") for line in out)
    assert out[-1].startswith("agora-dev: migrate: group-name-index: done")


def test_a_failed_migrate_stops_deploy_with_one_line(stack):
    from infra.deploy import DeployError, run_migrations

    class Failing:
        def invoke(self, **_: Any) -> dict[str, Any]:
            body = {"errorMessage": "Task timed out after 900.00 seconds"}
            payload = io.BytesIO(json.dumps(body).encode())
            return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": payload}

    with pytest.raises(DeployError, match="migrate failed \\(Task timed out") as failed:
        run_migrations(stack, Failing(), "agora-dev")
    assert "goes on with the migrations from where they stopped" in str(failed.value)


def test_migrate_uses_exactly_its_grant(community, recorder, client, monkeypatch):  # noqa: F811
    from chalicelib.aws import client as aws_client
    from chalicelib.services import canary
    from infra import privileges

    root = community.users[0]["id"]
    community.comment(community.post(community.root, root), root, isApproved=True)
    community.load()
    old_entries("post#g1", 2)
    # The stack's canary secret: migrate makes the canary's account with it too.
    aws_client("secretsmanager").create_secret(
        Name="agora-dev-canary-secret", SecretString="a-canary-password-of-the-stack"
    )
    monkeypatch.setenv(canary.SECRET_VARIABLE, "agora-dev-canary-secret")
    recorder.calls.clear()
    answer = client.lambda_.invoke("migrate", {}).payload
    assert answer["done"] is True and "canary account" in answer["lines"][-1]
    assert_granted("migrate", recorder)
    scanned = {f"agora-dev-{t}" for t in privileges.FUNCTIONS["migrate"].scans}
    assert recorder.tables() == declared_tables("migrate") | scanned
    assert {a for a, _ in recorder.calls if a == "dynamodb:Scan"}
