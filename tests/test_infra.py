# ruff: noqa: F811 - `dovecot` and `mailbox`, the mail tests' fixtures, are parameters by design
"""Deployment: the generated infra is current, and the packaged stack matches the code's tables;
each job function, run with exactly the environment the template gives it, does its job."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from chalicelib.embedded_aws import start_moto_server, stop_moto_server
from tests.mail.conftest import dovecot, mailbox  # noqa: F401 - fixtures
from tests.support import REPO_ROOT

PACKAGED = REPO_ROOT / "build" / "package" / "sam.yaml"


def test_infra_and_policies_are_generated_from_the_current_models():
    from infra.build import main

    assert main(["--check"]) == 0


def test_policies_grant_no_wildcard_action():
    import json

    for stage in ("dev", "prod"):
        policy = json.loads((REPO_ROOT / ".chalice" / f"policy-{stage}.json").read_text())
        for statement in policy["Statement"]:
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            assert all("*" not in action for action in actions), statement["Sid"]
            resources = (
                statement["Resource"]
                if isinstance(statement["Resource"], list)
                else [statement["Resource"]]
            )
            assert all(resource != "*" for resource in resources), statement["Sid"]


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
def test_packaged_stack_creates_in_moto_and_the_api_and_every_job_work_on_it(mailbox):
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
        check_job_functions(endpoint, packaged, mailbox)
    finally:
        stop_moto_server(server)


def function_environment(packaged: dict, logical: str, endpoint: str) -> dict[str, str]:
    """Exactly what the template gives the function (its references resolved as the stack
    resolves them), plus what Lambda itself sets, plus moto's endpoint."""
    import os

    def resolved(value):
        if isinstance(value, dict) and set(value) == {"Ref"}:
            return STACK_PARAMETERS[value["Ref"]]
        assert isinstance(value, str), value
        return value

    variables = packaged["Resources"][logical]["Properties"]["Environment"]["Variables"]
    env = {name: resolved(value) for name, value in variables.items()}
    env.update(
        {
            "AWS_LAMBDA_FUNCTION_NAME": f"agora-dev-{logical}",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ENDPOINT_URL": endpoint,
            "PATH": os.environ["PATH"],
            "PYTHONPATH": str(REPO_ROOT),
        }
    )
    return env


def run_function(packaged: dict, logical: str, endpoint: str, *args: str) -> str:
    import json

    properties = packaged["Resources"][logical]["Properties"]
    if args and args[0] == "invoke":
        args = ("invoke", properties["Handler"], json.dumps(args[1]), str(properties["Timeout"]))
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.packaged_function", *args],
        cwd=REPO_ROOT,
        env=function_environment(packaged, logical, endpoint),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{logical}: {done.stdout}{done.stderr[-3000:]}"
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def scheduled_event(rule: str) -> dict:
    return {
        "version": "0",
        "id": "5f6f9e5e-0000-4000-8000-000000000000",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-03-02T06:00:00Z",
        "region": "us-east-1",
        "resources": [f"arn:aws:events:us-east-1:123456789012:rule/{rule}"],
        "detail": {},
    }


def sqs_event(queue: str, bodies: list[str]) -> dict:
    import uuid

    return {
        "Records": [
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": "handle",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": f"arn:aws:sqs:us-east-1:123456789012:{queue}",
                "awsRegion": "us-east-1",
            }
            for body in bodies
        ]
    }


def check_job_functions(endpoint: str, packaged: dict, mailbox) -> None:
    """Mail in with its notifications, notification delivery, digests, SES feedback and the purge,
    each function run with its template's environment only (issue 23: the token secret reached
    only the API, so no job could ever send a notification or digest)."""
    import json

    import boto3

    from tests.mail.test_ingest import mail
    from tests.support.notify import recipients, sent_mail
    from tests.support.packaged_function import USERS

    def email(name: str) -> str:
        return f"{name}@agora.example"

    for logical in ("APIHandler", "PollMailbox", "DeliverNotifications", "SendDigests"):
        variables = packaged["Resources"][logical]["Properties"]["Environment"]["Variables"]
        assert variables["AGORA_TOKEN_SECRET"] == "secretsmanager:agora-dev-token-secret"
    # moto's CloudFormation cannot make a Secrets Manager secret: made here as the stack makes it.
    import secrets

    secret = packaged["Resources"]["TokenSecret"]["Properties"]
    boto3.client("secretsmanager", endpoint_url=endpoint, region_name="us-east-1").create_secret(
        Name=secret["Name"], SecretString=secrets.token_urlsafe(48)
    )

    run_function(
        packaged, "APIHandler", endpoint, "setup", str(mailbox.server.pop3_port), mailbox.user,
        mailbox.password,
    )  # fmt: skip
    mailbox.deliver(mail("gus@agora.example", "Seedlings", "Tomato seedlings to give away."))
    before = len(sent_mail())

    # Mail in: the schedule queues the mailbox, the SQS function polls it and tells Sam at once.
    assert (
        json.loads(
            run_function(packaged, "DispatchMailPolls", endpoint, "invoke", scheduled_event("poll"))
        )
        == 1
    )
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    url = sqs.get_queue_url(QueueName="agora-dev-mailbox-jobs")["QueueUrl"]
    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    polled = run_function(
        packaged, "PollMailbox", endpoint, "invoke",
        sqs_event("agora-dev-mailbox-jobs", [message["Body"]]),
    )  # fmt: skip
    assert json.loads(polled) == {"batchItemFailures": []}
    assert mailbox.count() == 0
    assert recipients(sent_mail()[before:]) == [email("sam")]

    # Notification delivery: a fanned-out chunk for Mia.
    chunk = run_function(packaged, "APIHandler", endpoint, "chunk")
    delivered = run_function(
        packaged, "DeliverNotifications", endpoint, "invoke",
        sqs_event("agora-dev-notification-jobs", [chunk]),
    )  # fmt: skip
    assert json.loads(delivered) == {"batchItemFailures": []}
    assert recipients(sent_mail()[before:]) == [email("mia"), email("sam")]

    # The daily digest: Pat's queued item.
    digests = run_function(packaged, "SendDigests", endpoint, "invoke", scheduled_event("digest"))
    assert json.loads(digests)["sent"] == 1
    assert recipients(sent_mail()[before:]) == [email("mia"), email("pat"), email("sam")]

    # SES feedback: a permanent bounce of Rita's address, and one body that is not SES's.
    bounce = {
        "notificationType": "Bounce",
        "bounce": {
            "bounceType": "Permanent",
            "bouncedRecipients": [{"emailAddress": email("rita"), "action": "failed"}],
            "timestamp": "2026-03-01T10:00:00.000Z",
            "feedbackId": "feedback",
        },
        "mail": {"messageId": "sent", "destination": [email("rita")]},
    }
    feedback = run_function(
        packaged, "SesFeedback", endpoint, "invoke",
        sqs_event("agora-dev-ses-feedback", [json.dumps(bounce), "not json"]),
    )  # fmt: skip
    assert json.loads(feedback) == {"batchItemFailures": []}
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    suppressed = json.dumps(dynamodb.scan(TableName="agora-dev-email-suppressions")["Items"])
    assert email("rita") in suppressed and USERS["rita"]

    purged = run_function(packaged, "PurgeComments", endpoint, "invoke", scheduled_event("purge"))
    assert isinstance(json.loads(purged), int)


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
    for name in (
        "mailbox-dead-letters",
        "notification-dead-letters",
        "api-5xx",
        "mail-failed",
        "digests-failed",
        "digest-run-stopped-early",
        "scheduled-failures",
        *(f"mailbox-poll-failed-{r}" for r in ("connection", "tls", "login", "timeout", "dns")),
    ):
        assert f"agora-dev-{name}" in made
    login = made["agora-dev-mailbox-poll-failed-login"]
    assert (login["Namespace"], login["MetricName"]) == ("Agora", "MailboxPollFailed")
    assert {"Name": "Reason", "Value": "login"} in login["Dimensions"]
    assert "password" in login["AlarmDescription"]
    scheduled = made["agora-dev-scheduled-failures"]
    assert scheduled["Dimensions"] == [
        {"Name": "QueueName", "Value": "agora-dev-scheduled-failures"}
    ]
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
    # One bad message is delivered again alone, not with its batch.
    for logical in ("PollMailbox", "DeliverNotifications", "SesFeedback"):
        [event] = functions[logical]["Properties"]["Events"].values()
        assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # The scheduled functions hand a failed invocation, after their retries, to a queue.
    configs = {
        r["Properties"]["FunctionName"]["Ref"]: r["Properties"]
        for r in functions.values()
        if r.get("Type") == "AWS::Lambda::EventInvokeConfig"
    }
    assert set(configs) == {"DispatchMailPolls", "PurgeComments", "SendDigests"}
    for config in configs.values():
        assert config["DestinationConfig"]["OnFailure"]["Destination"] == {
            "Fn::GetAtt": ["ScheduledFailuresQueue", "Arn"]
        }
    assert physical["ScheduledFailuresQueue"].endswith("agora-dev-scheduled-failures")
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
