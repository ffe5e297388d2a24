"""Deployment: the generated infra is current, and the packaged stack matches the code's tables."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from chalicelib.embedded_aws import start_moto_server, stop_moto_server
from tests.support import REPO_ROOT

PACKAGED = REPO_ROOT / "build" / "package" / "sam.yaml"


def test_infra_and_policies_are_generated_from_the_current_models():
    from infra.build import main

    assert main(["--check"]) == 0


# Each function's policy: tests/test_privileges.py.
MOTO_LACKS = ("AWS::Serverless::", "AWS::Lambda::", "AWS::IAM::", "AWS::SES::")
STACK_PARAMETERS = {
    "BaseUrl": "https://community.example.org",
    "AlarmEmail": "ops@example.org",
    "MailSenderDomain": "",
}


def _resolve_missing(value, missing: set[str]):
    """References to resources moto cannot make become their logical ids (function names)."""
    if isinstance(value, dict):
        if set(value) == {"Ref"} and value["Ref"] in missing:
            return f"agora-dev-{value['Ref']}"
        if set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
            text = value["Fn::Sub"]
            for name in missing:
                text = text.replace("${" + name + "}", f"agora-dev-{name}")
            return {"Fn::Sub": text}
        return {k: _resolve_missing(v, missing) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_missing(v, missing) for v in value]
    return value


def moto_supported(template: dict) -> tuple[dict, dict]:
    """The packaged template split in two: what moto's CloudFormation makes (tables, key, queues,
    secret, topic, log groups), and the alarms, which it skips, for CloudWatch's own API."""
    kept, alarms, missing = {}, {}, set()
    for name, resource in template["Resources"].items():
        kind = resource.get("Type", "")
        if not kind or kind.startswith(MOTO_LACKS):
            missing.add(name)
        elif kind == "AWS::CloudWatch::Alarm":
            alarms[name] = resource
        else:
            kept[name] = resource
    stack = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Parameters": template["Parameters"],
        "Conditions": template.get("Conditions", {}),
        "Resources": _resolve_missing(kept, missing),
    }
    return stack, _resolve_missing(alarms, missing)


def put_alarms(cloudwatch, alarms: dict, physical: dict[str, str]) -> None:
    """Create each alarm as CloudFormation would, through CloudWatch's API (which checks it)."""

    def resolve(value):
        if isinstance(value, dict) and set(value) == {"Ref"}:
            return physical[value["Ref"]]
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    for resource in alarms.values():
        cloudwatch.put_metric_alarm(**resolve(resource["Properties"]))


@pytest.mark.slow
def test_packaged_stack_creates_in_moto_and_the_api_works_on_its_tables():
    import boto3
    import yaml

    if not PACKAGED.exists():
        if os.environ.get("CI"):
            pytest.fail("build/package/sam.yaml is missing: make test runs make package first")
        pytest.skip("run `make package` first (make test does)")
    packaged = yaml.safe_load(PACKAGED.read_text())
    template, alarms = moto_supported(packaged)
    assert sum(r["Type"] == "AWS::DynamoDB::Table" for r in template["Resources"].values()) >= 10
    server = start_moto_server()
    port = server.get_host_and_port()[1]
    try:
        endpoint = f"http://127.0.0.1:{port}"
        cloudformation = boto3.client(
            "cloudformation", endpoint_url=endpoint, region_name="us-east-1"
        )
        cloudformation.create_stack(
            StackName="agora-dev",
            TemplateBody=yaml.safe_dump(template),
            Parameters=[
                {"ParameterKey": k, "ParameterValue": v} for k, v in STACK_PARAMETERS.items()
            ],
        )
        stack = cloudformation.describe_stacks(StackName="agora-dev")["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
        physical = {
            r["LogicalResourceId"]: r["PhysicalResourceId"]
            for r in cloudformation.describe_stack_resources(StackName="agora-dev")[
                "StackResources"
            ]
            if "PhysicalResourceId" in r  # moto lists the resources it skipped without one
        }
        check_operations(endpoint, packaged, alarms, physical)
        tables = boto3.client(
            "dynamodb", endpoint_url=endpoint, region_name="us-east-1"
        ).list_tables()["TableNames"]
        assert "agora-dev-comments" in tables
        env = {
            **os.environ,
            "AWS_ENDPOINT_URL": endpoint,
            "AGORA_TABLE_PREFIX": "agora-dev-",
            "AGORA_KMS_KEY_ID": "alias/agora-dev",
            "AGORA_MAILBOX_QUEUE": "agora-dev-mailbox-jobs",
            "PYTHONPATH": str(REPO_ROOT),
        }
        smoke = subprocess.run(
            [sys.executable, "-m", "tests.support.smoke"],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert smoke.returncode == 0, smoke.stdout + smoke.stderr[-3000:]
    finally:
        stop_moto_server(server)


def check_operations(endpoint: str, packaged: dict, alarms: dict, physical: dict) -> None:
    """Alarms to a topic that mails ALARM_EMAIL, log retention, concurrency caps, parameters."""
    import boto3

    def aws(service: str):
        return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1")

    topics = [t["TopicArn"] for t in aws("sns").list_topics()["Topics"]]
    [topic] = [t for t in topics if t.endswith(":agora-dev-alarms")]
    assert physical["AlarmTopic"] == topic
    [subscription] = aws("sns").list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert (subscription["Protocol"], subscription["Endpoint"]) == ("email", "ops@example.org")

    cloudwatch = aws("cloudwatch")
    put_alarms(cloudwatch, alarms, physical)
    made = {a["AlarmName"]: a for a in cloudwatch.describe_alarms()["MetricAlarms"]}
    for name in ("mailbox-dead-letters", "notification-dead-letters", "api-5xx", "mail-failed"):
        assert f"agora-dev-{name}" in made
    for function in ("api", "poll-mailbox", "deliver-notifications", "send-digests"):
        assert f"agora-dev-{function}-errors" in made and f"agora-dev-{function}-throttles" in made
    assert all(a["AlarmActions"] == [topic] and a["AlarmDescription"] for a in made.values())
    dead = made["agora-dev-mailbox-dead-letters"]
    assert dead["Namespace"] == "AWS/SQS" and dead["Dimensions"] == [
        {"Name": "QueueName", "Value": "agora-dev-mailbox-jobs-dead"}
    ]
    failed = made["agora-dev-mail-failed"]
    assert (failed["Namespace"], failed["MetricName"]) == ("Agora", "MailHandled")
    assert {"Name": "Outcome", "Value": "failed"} in failed["Dimensions"]

    groups = {
        g["logGroupName"]: g.get("retentionInDays")
        for g in aws("logs").describe_log_groups()["logGroups"]
    }
    assert groups["/aws/lambda/agora-dev-APIHandler"] == 14
    assert groups["/aws/lambda/agora-dev-PollMailbox"] == 14
    functions = [
        name
        for name, r in packaged["Resources"].items()
        if r.get("Type") == "AWS::Serverless::Function"
    ]
    # Every function: its log group with a retention, an errors and a throttles alarm.
    assert len(groups) == len(functions) and set(groups.values()) == {14}
    alarmed = {a["Dimensions"][0]["Value"] for a in made.values() if a["Namespace"] == "AWS/Lambda"}
    assert alarmed == {f"agora-dev-{name}" for name in functions}

    # Moto has no Lambda event sources in CloudFormation: the caps are read from the template.
    functions = packaged["Resources"]
    for logical in ("PollMailbox", "DeliverNotifications"):
        [event] = functions[logical]["Properties"]["Events"].values()
        assert event["Properties"]["ScalingConfig"]["MaximumConcurrency"] >= 2
    for logical in ("APIHandler", "PollMailbox"):
        variables = functions[logical]["Properties"]["Environment"]["Variables"]
        assert variables["AGORA_BASE_URL"] == {"Ref": "BaseUrl"}
    assert set(packaged["Parameters"]) >= {"BaseUrl", "AlarmEmail", "MailSenderDomain"}


def test_prod_traces_with_x_ray_and_keeps_logs_longer():
    import json

    import yaml

    config = json.loads((REPO_ROOT / ".chalice" / "config.json").read_text())
    assert config["stages"]["prod"]["xray"] is True
    assert not config["stages"]["dev"].get("xray")
    retention = {s: config["stages"][s]["log_retention_in_days"] for s in ("dev", "prod")}
    assert retention["prod"] > retention["dev"]
    prod = yaml.safe_load((REPO_ROOT / "infra" / "prod.yaml").read_text().split("\n", 1)[1])
    assert prod["Resources"]["RestAPI"]["Properties"]["TracingEnabled"] is True
    assert prod["Resources"]["PollMailboxRole"]["Properties"]["ManagedPolicyArns"]
