"""One deploy identity (issue 57): a deploy by any path other than make deploy updates each
function's $LATEST but publishes no version (SAM names a version after SettingsDigest alone), so
alias `live`, which every trigger calls, runs the old code. The template refuses a deploy that
does not compute the digest; make deploy and make restore check every alias after the update
and fail loudly; check-aliases (infra/alias_check.py) asks every hour, and its alarm tickets."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest

from infra import yaml_text
from infra.alias_check import behind, handler
from infra.rollout import SETTINGS_DIGEST, settings_digest
from tests.support import REPO_ROOT


def _zip(text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", text)
    return buffer.getvalue()


@pytest.fixture
def lambdas(monkeypatch):
    """Two functions, each with a version 1 that alias live names, as make deploy leaves them."""
    import boto3
    from moto import mock_aws

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        role = session.client("iam").create_role(
            RoleName="fn", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17"})
        )["Role"]["Arn"]
        client = session.client("lambda")
        for name in ("agora-prod-api", "agora-prod-migrate"):
            client.create_function(
                FunctionName=name,
                Runtime="python3.12",
                Role=role,
                Handler="app.handler",
                Code={"ZipFile": _zip("v1")},
                Environment={"Variables": {"AGORA_BASE_URL": "https://a.example.org"}},
            )
            version = client.publish_version(FunctionName=name)["Version"]
            client.create_alias(FunctionName=name, Name="live", FunctionVersion=version)
        yield session


FUNCTIONS = ["agora-prod-api", "agora-prod-migrate"]


def test_aliases_that_run_latest_are_not_behind(lambdas):
    assert behind(lambdas.client("lambda"), FUNCTIONS) == []


def test_new_code_or_environment_without_a_version_is_behind(lambdas):
    client = lambdas.client("lambda")
    # What `sam deploy` with the previous SettingsDigest does: $LATEST changes, no version.
    client.update_function_code(FunctionName="agora-prod-api", ZipFile=_zip("v2"))
    client.update_function_configuration(
        FunctionName="agora-prod-migrate",
        Environment={"Variables": {"AGORA_BASE_URL": "https://b.example.org"}},
    )
    found = behind(client, FUNCTIONS)
    assert len(found) == 2
    assert found[0].startswith("agora-prod-api: alias live runs version 1 (code)")
    assert found[1].startswith("agora-prod-migrate: alias live runs version 1 (environment)")
    # A version published and named by the alias: in step again.
    for name in FUNCTIONS:
        version = client.publish_version(FunctionName=name)["Version"]
        client.update_alias(FunctionName=name, Name="live", FunctionVersion=version)
    assert behind(client, FUNCTIONS) == []


def test_a_canary_moving_the_alias_to_latest_is_not_behind(lambdas):
    client = lambdas.client("lambda")
    client.update_function_code(FunctionName="agora-prod-api", ZipFile=_zip("v2"))
    new = client.publish_version(FunctionName="agora-prod-api")["Version"]
    client.update_alias(
        FunctionName="agora-prod-api",
        Name="live",
        FunctionVersion="1",
        RoutingConfig={"AdditionalVersionWeights": {new: 0.1}},
    )
    assert behind(client, FUNCTIONS) == []


def test_the_hourly_check_puts_the_count_behind(lambdas, monkeypatch):
    client = lambdas.client("lambda")
    client.update_function_code(FunctionName="agora-prod-api", ZipFile=_zip("v2"))
    # The function's environment as the template sets it (its function list aside).
    from infra.alarms import declared
    from infra.build import stage_names
    from infra.cloudwatch import resource
    from infra.rollout import CHECK_ALIASES, alias_check_resources

    function = alias_check_resources("prod")[CHECK_ALIASES]["Properties"]
    for name, value in function["Environment"]["Variables"].items():
        monkeypatch.setenv(name, value if isinstance(value, str) else ",".join(FUNCTIONS))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert len(handler({}, None)["behind"]) == 1
    [metric] = lambdas.client("cloudwatch").list_metrics(Namespace="Agora")["Metrics"]
    assert metric["MetricName"] == "AliasesBehind"
    # What the alarm reads, exactly: CloudWatch tells metrics apart by their whole set of
    # dimensions, so one dimension more or less on either side and the alarm never sees a value.
    [alarm] = [a for a in declared("prod", stage_names("prod"), {}) if a.name.endswith("-behind")]
    watched = resource(alarm)["Properties"]
    assert (watched["Namespace"], watched["MetricName"]) == ("Agora", metric["MetricName"])
    assert metric["Dimensions"] == watched["Dimensions"]
    assert {"Name": "Stage", "Value": "agora-prod"} in metric["Dimensions"]


def test_make_deploy_fails_loudly_when_an_alias_is_behind(lambdas):
    from infra.deploy import DeployError, require_live_aliases

    role = lambdas.client("iam").get_role(RoleName="fn")["Role"]["Arn"]
    # The stack's functions under make deploy's logical ids (infra.operations.FUNCTIONS), and
    # one that is not aliased (the PreTraffic hook's kind): the check reads the first two only.
    template = {
        "Resources": {
            logical: {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "FunctionName": name,
                    "Runtime": "python3.12",
                    "Handler": "index.handler",
                    "Role": role,
                    "Code": {"ZipFile": "def handler(event, context): pass"},
                },
            }
            for logical, name in (
                ("APIHandler", "agora-dev-api"),
                ("Migrate", "agora-dev-migrate"),
                ("PreTraffic", "agora-dev-hook"),
            )
        }
    }
    lambdas.client("cloudformation").create_stack(
        StackName="agora-dev", TemplateBody=json.dumps(template)
    )
    client = lambdas.client("lambda")
    for name in ("agora-dev-api", "agora-dev-migrate"):
        version = client.publish_version(FunctionName=name)["Version"]
        client.create_alias(FunctionName=name, Name="live", FunctionVersion=version)
    require_live_aliases(lambdas, "agora-dev")
    client.update_function_configuration(
        FunctionName="agora-dev-migrate", Environment={"Variables": {"AGORA_TABLE_NAMES": "x"}}
    )
    with pytest.raises(DeployError, match="agora-dev-migrate: alias live runs version 1") as error:
        require_live_aliases(lambdas, "agora-dev")
    assert "agora-dev-api" not in str(error.value) and "make deploy" in str(error.value)


@pytest.mark.fast
@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_a_deploy_that_does_not_compute_the_digest_is_refused(stage):
    template = yaml_text.load((REPO_ROOT / "infra" / f"{stage}.yaml").read_text())
    parameter = template["Parameters"][SETTINGS_DIGEST]
    # No default: a create without it is refused ("must have values").
    assert "Default" not in parameter
    pattern = parameter["AllowedPattern"]
    for refused in ("", "0", "abc123", "f" * 63, "F" * 64, "g" * 64):
        assert not re.fullmatch(pattern, refused), refused
    assert re.fullmatch(pattern, settings_digest(template, {}))
    assert parameter["MinLength"] == parameter["MaxLength"] == 64


@pytest.mark.fast
def test_check_aliases_runs_hourly_on_every_aliased_function_and_tickets():
    from infra.operations import FUNCTIONS as ALIASED

    resources = yaml_text.load((REPO_ROOT / "infra" / "prod.yaml").read_text())["Resources"]
    function = resources["CheckAliases"]["Properties"]
    assert function["Code"]["ZipFile"] == (REPO_ROOT / "infra" / "alias_check.py").read_text()
    listed = function["Environment"]["Variables"]["AGORA_ALIASED_FUNCTIONS"]["Fn::Join"][1]
    assert listed == [{"Ref": logical} for logical in ALIASED]
    assert resources["CheckAliasesSchedule"]["Properties"]["ScheduleExpression"] == "rate(1 hour)"
    alarm = resources["AliasesBehindAlarm"]["Properties"]
    assert alarm["MetricName"] == "AliasesBehind" and alarm["Threshold"] == 1
    # Two hours running: one check inside a deploy's seconds between update and alias is none.
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == 2
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]
