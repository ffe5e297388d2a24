# ruff: noqa: F811 - `dovecot` and `mailbox`, the mail tests' fixtures, are parameters by design
"""Deployment: the generated infra is current, and the packaged stack matches the code's tables;
each job function, run with exactly the environment the template gives it, does its job."""

from __future__ import annotations

import json
import os

import pytest

from agora_local.embedded_aws import start_moto_server, stop_moto_server
from infra import yaml_text
from infra.deploy import with_settings_digest
from tests.mail.conftest import dovecot, mailbox  # noqa: F401 - fixtures
from tests.support import REPO_ROOT, suite_key_pair
from tests.support.running import run_module, this_clock
from tests.support.sam_stack import (
    json_templates_read_as_json,
    moto_stack,
    stream_records,
    translated,
)

PACKAGED = REPO_ROOT / "build" / "package" / "sam.yaml"


def test_infra_and_policies_are_generated_from_the_current_models():
    from infra.build import main

    assert main(["--check"]) == 0


def test_policies_grant_no_wildcard_action():
    import json

    # Each function's own policy file; what each grants is tests/infra/test_privileges.py's.
    files = sorted((REPO_ROOT / ".chalice").glob("policy-*-*.json"))
    assert len(files) >= 16
    for path in files:
        policy = json.loads(path.read_text())
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


STACK_PARAMETERS = {
    "BaseUrl": "https://community.example.org",
    "AlarmEmail": "ops@example.org",
    "MailSenderDomain": "",
}
CODE_BUCKET, CODE_KEY = "agora-code", "deployment.zip"


def put_alarms(cloudwatch, alarms: dict, physical: dict[str, str]) -> None:
    """Create each alarm as CloudFormation would, through CloudWatch's API (which checks it)."""

    def ref(name: str) -> str:
        # A resource, or a parameter the stack was given (TableNames: none restored).
        return physical.get(name, STACK_PARAMETERS.get(name, ""))

    def sub(argument):
        if isinstance(argument, list):
            # The throttles alarm's query, with the restored tables (infra.watch).
            text, variables = argument
            for name, inner in variables.items():
                text = text.replace("${" + name + "}", resolve(inner))
            return text
        if isinstance(argument, str):
            # The version-scoped dimensions (infra.operations.version_dimensions).
            text = argument
            for logical, name in physical.items():
                text = text.replace("${" + logical + "}", name)
            return text
        return {"Fn::Sub": resolve(argument)}

    def select(argument):
        index, items = argument
        return resolve(items)[index]

    def split(argument):
        separator, text = argument
        return resolve(text).split(separator)

    def join(argument):
        separator, parts = argument
        return separator.join(resolve(part) for part in parts)

    def get_att(argument):
        function, _arn = argument
        return f"arn:aws:lambda:us-east-1:123456789012:function:{physical[function]}"

    intrinsics = {
        "Ref": ref,
        "Fn::Sub": sub,
        "Fn::Select": select,
        "Fn::Split": split,
        "Fn::Join": join,
        "Fn::GetAtt": get_att,
    }

    def resolve(value):
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1 and next(iter(value)) in intrinsics:
            [(function, argument)] = value.items()
            return intrinsics[function](argument)
        return {k: resolve(v) for k, v in value.items()}

    for resource in alarms.values():
        cloudwatch.put_metric_alarm(**resolve(resource["Properties"]))


@pytest.mark.slow
def test_translated_stack_creates_in_moto_and_the_api_and_every_job_work_on_it(
    monkeypatch, mailbox
):
    import boto3

    if not PACKAGED.exists():
        if os.environ.get("CI"):
            pytest.fail("build/package/sam.yaml is missing: make test runs make package first")
        pytest.skip("run `make package` first (make test does)")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # the translator's pseudo parameters
    json_templates_read_as_json(monkeypatch)
    packaged = yaml_text.load(PACKAGED.read_text())
    # As make deploy passes them: SettingsDigest has no default (infra.rollout).
    parameters = with_settings_digest(packaged, STACK_PARAMETERS, {})
    expanded = translated(packaged, f"s3://{CODE_BUCKET}/{CODE_KEY}", parameters)
    template, skipped, alarms = moto_stack(expanded)
    assert sum(r["Type"] == "AWS::DynamoDB::Table" for r in template["Resources"].values()) >= 10
    server = start_moto_server(suite_key_pair())
    port = server.get_host_and_port()[1]
    try:
        endpoint = f"http://127.0.0.1:{port}"

        def aws(service: str):
            return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1")

        aws("s3").create_bucket(Bucket=CODE_BUCKET)
        zip_path = PACKAGED.parent / "deployment.zip"
        aws("s3").put_object(Bucket=CODE_BUCKET, Key=CODE_KEY, Body=zip_path.read_bytes())
        cloudformation = aws("cloudformation")
        cloudformation.create_stack(
            StackName="agora-dev",
            TemplateBody=json.dumps(template),
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
            Capabilities=["CAPABILITY_IAM"],
        )
        stack = cloudformation.describe_stacks(StackName="agora-dev")["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
        physical = {
            r["LogicalResourceId"]: r["PhysicalResourceId"]
            for r in cloudformation.describe_stack_resources(StackName="agora-dev")[
                "StackResources"
            ]
            if "PhysicalResourceId" in r and "LogicalResourceId" in r
        }
        check_created(aws, expanded, skipped)
        check_operations(endpoint, packaged, alarms, physical)
        tables = aws("dynamodb").list_tables()["TableNames"]
        assert "agora-dev-comments" in tables
        env = {
            **os.environ,
            "AWS_ENDPOINT_URL": endpoint,
            "AGORA_TABLE_PREFIX": "agora-dev-",
            "AGORA_KMS_KEY_ID": "alias/agora-dev",
            "AGORA_MAILBOX_QUEUE": "agora-dev-mailbox-jobs",
            "PYTHONPATH": str(REPO_ROOT),
        }
        smoke = run_module("tests.support.smoke", env=env, timeout=300)
        assert smoke.returncode == 0, smoke.stdout + smoke.stderr[-3000:]
        check_job_functions(endpoint, packaged, mailbox)
    finally:
        stop_moto_server(server)


def check_created(aws, expanded: dict, skipped: dict[str, str]) -> None:
    """The functions, their triggers (on the queues, capped) and schedules (named rules), the
    dashboard: made by moto from the translated template, not read back from it."""
    resources = expanded["Resources"]
    functions = [n for n, r in resources.items() if r["Type"] == "AWS::Lambda::Function"]
    made = {f["FunctionName"] for f in aws("lambda").list_functions()["Functions"]}
    # The API, the 11 jobs of app.py (migrate, deliver-digests, mail-verdict, receive-mail),
    # the PreTraffic hook and check-aliases (inline: infra/alias_check.py).
    assert len(made) == len(functions) == 14
    mappings = aws("lambda").list_event_source_mappings()["EventSourceMappings"]
    queues = {
        m["EventSourceArn"].rsplit(":", 1)[1]: m for m in mappings if ":sqs:" in m["EventSourceArn"]
    }
    streams = [m["EventSourceArn"] for m in mappings if ":dynamodb:" in m["EventSourceArn"]]
    assert [arn.split("/")[1] for arn in streams] == ["agora-dev-outbox"]
    assert set(queues) == {
        "agora-dev-digest-jobs",
        "agora-dev-mailbox-jobs",
        "agora-dev-notification-jobs",
        "agora-dev-ses-feedback",
    }
    assert queues["agora-dev-mailbox-jobs"]["ScalingConfig"]["MaximumConcurrency"] == 2
    rules = {r["Name"] for r in aws("events").list_rules()["Rules"]}
    assert {
        "agora-dev-dispatch-mail-polls",
        "agora-dev-purge-comments",
        "agora-dev-send-digests",
    } <= rules
    dashboard = json.loads(
        aws("cloudwatch").get_dashboard(DashboardName="agora-dev")["DashboardBody"]
    )
    titles = {w["properties"]["title"] for w in dashboard["widgets"]}
    assert {"API latency (ms)", "Mail handled, by outcome", "SES reputation"} <= titles
    assert "AWS::Lambda::Alias" in skipped.values()  # skipped, with its reason in MOTO_LACKS
    # API Gateway calls the alias (what a canary moves), never the function's latest code.
    body = json.dumps(resources["RestAPI"]["Properties"]["Body"])
    assert "APIHandlerAliaslive" in body and "APIHandler.Arn" not in body
    [permission] = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Permission"
        and r["Properties"]["Principal"] == "apigateway.amazonaws.com"
    ]
    assert permission["Properties"]["FunctionName"] == {"Ref": "APIHandlerAliaslive"}


def function_environment(packaged: dict, logical: str, endpoint: str) -> dict[str, str]:
    """Exactly what the template gives the function (its references resolved as the stack
    resolves them), plus what Lambda itself sets, plus moto's endpoint."""
    import os

    conditions = {"HasMailSenderDomain": STACK_PARAMETERS["MailSenderDomain"] != ""}

    def resolved(value, names=None):
        """The intrinsic functions the template's variables use, evaluated as CloudFormation does."""
        if isinstance(value, str):
            return value
        [(function, argument)] = value.items()
        if function == "Ref":
            if (names or {}).get(argument):
                return names[argument]
            if argument in STACK_PARAMETERS:
                return STACK_PARAMETERS[argument]
            return str(packaged["Parameters"][argument]["Default"])  # a parameter left as is
        if function == "Fn::If":
            condition, yes, no = argument
            return resolved(yes if conditions[condition] else no, names)
        if function == "Fn::Select":
            index, items = argument
            return resolved(items, names)[index]
        if function == "Fn::Split":
            separator, text = argument
            return resolved(text, names).split(separator)
        if function == "Fn::Sub":
            text, variables = argument if isinstance(argument, list) else (argument, {})
            for name, inner in variables.items():
                text = text.replace("${" + name + "}", resolved(inner, names))
            return text
        raise AssertionError(f"an intrinsic function the test does not evaluate: {value}")

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
            **this_clock(),
        }
    )
    return env


def run_function(
    packaged: dict, logical: str, endpoint: str, *args: str, network: dict[str, str] | None = None
) -> str:
    """Run the function's handler in a process with exactly its template's environment; `network`
    stands for what the network gives a function rather than the template (its DNS resolver)."""
    import json

    properties = packaged["Resources"][logical]["Properties"]
    if args and args[0] == "invoke":
        args = ("invoke", properties["Handler"], json.dumps(args[1]), str(properties["Timeout"]))
    done = run_module(
        "tests.support.packaged_function",
        *args,
        env={**function_environment(packaged, logical, endpoint), **(network or {})},
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


def outbox_event(endpoint: str) -> dict:
    """The outbox stream's records as Lambda's event source mapping hands them to drain-outbox."""
    import boto3

    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    streams = boto3.client("dynamodbstreams", endpoint_url=endpoint, region_name="us-east-1")
    arn, read = stream_records(dynamodb, streams, "agora-dev-outbox")
    records = []
    for record in read:
        record["dynamodb"].pop("ApproximateCreationDateTime", None)
        records.append({**record, "eventSourceARN": arn})
    if not records:
        # moto's CloudFormation makes the table with its stream, but moto writes no stream
        # records for it: the records are made from the table's new items, as DynamoDB Streams
        # delivers an INSERT (NEW_IMAGE) to the function.
        stored = dynamodb.scan(TableName="agora-dev-outbox")["Items"]
        records = [
            {
                "eventID": str(number),
                "eventName": "INSERT",
                "eventSource": "aws:dynamodb",
                "dynamodb": {
                    "Keys": {"id": item["id"]},
                    "NewImage": item,
                    "SequenceNumber": f"{number:021d}",
                    "StreamViewType": "NEW_IMAGE",
                },
                "eventSourceARN": arn,
            }
            for number, item in enumerate(stored, start=1)
        ]
    assert records, "the poll recorded nothing in the outbox"
    return {"Records": records}


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

    for logical in ("APIHandler", "DrainOutbox", "DeliverNotifications", "DeliverDigests"):
        variables = packaged["Resources"][logical]["Properties"]["Environment"]["Variables"]
        assert variables["AGORA_TOKEN_SECRET"] == "secretsmanager:agora-dev-token-secret"
    # moto's CloudFormation cannot make a Secrets Manager secret: made here as the stack makes it.
    import secrets

    secret = packaged["Resources"]["TokenSecret"]["Properties"]
    boto3.client("secretsmanager", endpoint_url=endpoint, region_name="us-east-1").create_secret(
        Name=secret["Name"], SecretString=secrets.token_urlsafe(48)
    )

    # The one thing the test's network differs in: its POP3 server (Dovecot) is on loopback,
    # which the stack refuses (CONTRACT §8); a real mailbox is on a public address.
    loopback_mail = {"AGORA_MAIL_ALLOW_PRIVATE_HOSTS": "1"}
    run_function(
        packaged, "APIHandler", endpoint, "setup", str(mailbox.server.pop3_port), mailbox.user,
        mailbox.password, network=loopback_mail,
    )  # fmt: skip
    # Gus's mail is signed by his domain (the template verifies DKIM, and holds what no
    # signature vouches for: AGORA_MAIL_UNVERIFIED's default).
    from tests.support.dkim_signing import SELECTOR, dkim_record, signed

    seedlings = mail("gus@agora.example", "Seedlings", "Tomato seedlings to give away.")
    mailbox.deliver(
        signed(seedlings.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), "agora.example")
    )
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
    # The template has the poll check DKIM and DMARC itself (AGORA_MAIL_AUTH=verify): the
    # network's resolver here knows agora.example's DKIM key and that it publishes no DMARC
    # policy, so Gus's signed mail is accepted.
    from tests.support.dns_server import DnsServer

    with DnsServer({f"{SELECTOR}._domainkey.agora.example": [dkim_record()]}) as resolver:
        polled = run_function(
            packaged, "PollMailbox", endpoint, "invoke",
            sqs_event("agora-dev-mailbox-jobs", [message["Body"]]),
            network={**loopback_mail, "AGORA_DNS_SERVERS": resolver.address},
        )  # fmt: skip
    assert json.loads(polled) == {"batchItemFailures": []}
    assert mailbox.count() == 0
    assert recipients(sent_mail()[before:]) == []  # the poll records; the outbox drain tells
    drained = run_function(packaged, "DrainOutbox", endpoint, "invoke", outbox_event(endpoint))
    assert json.loads(drained) == {"batchItemFailures": []}
    assert recipients(sent_mail()[before:]) == [email("sam")]

    # Notification delivery: a fanned-out chunk for Mia.
    chunk = run_function(packaged, "APIHandler", endpoint, "chunk")
    delivered = run_function(
        packaged, "DeliverNotifications", endpoint, "invoke",
        sqs_event("agora-dev-notification-jobs", [chunk]),
    )  # fmt: skip
    assert json.loads(delivered) == {"batchItemFailures": []}
    assert recipients(sent_mail()[before:]) == [email("mia"), email("sam")]

    # The daily digest: the schedule queues Pat's batch, deliver-digests sends it.
    queued = run_function(packaged, "SendDigests", endpoint, "invoke", scheduled_event("digest"))
    assert json.loads(queued) == {"recipients": 1, "batches": 1}
    digest_queue = sqs.get_queue_url(QueueName="agora-dev-digest-jobs")["QueueUrl"]
    [batch] = sqs.receive_message(QueueUrl=digest_queue, MaxNumberOfMessages=10)["Messages"]
    digests = run_function(
        packaged, "DeliverDigests", endpoint, "invoke",
        sqs_event("agora-dev-digest-jobs", [batch["Body"]]),
    )  # fmt: skip
    assert json.loads(digests) == {"batchItemFailures": []}
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

    topic = check_alarm_topic(aws("sns"), physical)
    made = check_alarms_made(aws("cloudwatch"), alarms, physical, topic)
    check_logs_and_function_alarms(aws("logs"), packaged, physical, made)
    check_event_sources(packaged, physical)


def check_alarm_topic(sns, physical: dict) -> str:
    """The stack's alarm topic, which mails ALARM_EMAIL: its ARN."""
    topics = [t["TopicArn"] for t in sns.list_topics()["Topics"]]
    [topic] = [t for t in topics if t.endswith(":agora-dev-alarms")]
    assert physical["AlarmTopic"] == topic
    [subscription] = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert (subscription["Protocol"], subscription["Endpoint"]) == ("email", "ops@example.org")
    return topic


def check_alarms_made(cloudwatch, alarms: dict, physical: dict, topic: str) -> dict[str, dict]:
    """The template's alarms, put through CloudWatch's API: name -> the alarm CloudWatch holds."""
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
        "mailboxes-failing",
    ):
        assert f"agora-dev-{name}" in made
    assert not any("mailbox-poll-failed" in name for name in made)
    scheduled = made["agora-dev-scheduled-failures"]
    assert scheduled["Dimensions"] == [
        {"Name": "QueueName", "Value": "agora-dev-scheduled-failures"}
    ]
    for function in ("api", "poll-mailbox", "deliver-notifications", "send-digests"):
        assert f"agora-dev-{function}-errors" in made
    assert "agora-dev-lambda-throttles" in made  # one for the account's functions
    # A ticket mails the topic; a member of a cause's composite (infra.paging) mails nobody.
    assert all(a["AlarmActions"] in ([topic], []) and a["AlarmDescription"] for a in made.values())
    assert made["agora-dev-mailbox-dead-letters"]["AlarmActions"] == [topic]
    dead = made["agora-dev-mailbox-dead-letters"]
    assert dead["Namespace"] == "AWS/SQS" and dead["Dimensions"] == [
        {"Name": "QueueName", "Value": "agora-dev-mailbox-jobs-dead"}
    ]
    failed = {m["Id"]: m for m in made["agora-dev-mail-failed"]["Metrics"]}
    metric = failed["failed"]["MetricStat"]["Metric"]
    assert (metric["Namespace"], metric["MetricName"]) == ("Agora", "MailHandled")
    assert {"Name": "Outcome", "Value": "failed"} in metric["Dimensions"]
    return made


def check_logs_and_function_alarms(logs, packaged: dict, physical: dict, made: dict) -> None:
    """Every function: its log group with a retention, an errors and a duration alarm."""
    groups = {
        g["logGroupName"]: g.get("retentionInDays") for g in logs.describe_log_groups()["logGroups"]
    }
    functions = [
        name
        for name, r in packaged["Resources"].items()
        if r.get("Type") == "AWS::Serverless::Function"
    ]
    names = {physical[name] for name in functions}
    assert {g for g in groups if g.startswith("/aws/lambda/")} == {
        f"/aws/lambda/{n}" for n in (*names, "agora-dev-check-aliases")
    }
    assert groups["/aws/apigateway/agora-dev-access"] == 14 and set(groups.values()) == {14}
    hook = physical["PreTraffic"]
    for metric in ("Errors", "Duration"):
        alarmed = {
            a["Dimensions"][0]["Value"]
            for a in made.values()
            if a.get("Namespace") == "AWS/Lambda" and a.get("MetricName") == metric
        }
        # check-aliases: its errors only (an hourly read of the aliases has no duration risk).
        check = {"agora-dev-check-aliases"} if metric == "Errors" else set()
        assert alarmed == (names - {hook}) | check, metric


def check_event_sources(packaged: dict, physical: dict) -> None:
    """Moto has no Lambda event sources in CloudFormation: the caps, the batch failures and the
    failure destinations are read from the template."""
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
    # The scheduled functions hand a failed invocation, after their retries, to a queue; SES's
    # receive-mail to its own (infra/inbound.py).
    configs = {
        logical: r["Properties"]["EventInvokeConfig"]
        for logical, r in functions.items()
        if "EventInvokeConfig" in r.get("Properties", {})
    }
    assert configs.pop("ReceiveMail")["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": ["InboundMailDeadLetterQueue", "Arn"]
    }
    assert set(configs) == {"DispatchMailPolls", "PurgeComments", "SendDigests"}
    for config in configs.values():
        assert config["DestinationConfig"]["OnFailure"]["Destination"] == {
            "Fn::GetAtt": ["ScheduledFailuresQueue", "Arn"]
        }
    assert physical["ScheduledFailuresQueue"].endswith("agora-dev-scheduled-failures")
    assert set(packaged["Parameters"]) >= {"BaseUrl", "AlarmEmail", "MailSenderDomain"}


def prod_template() -> dict:
    """infra/prod.yaml as generated (its first line is a comment that says so)."""
    return yaml_text.load((REPO_ROOT / "infra" / "prod.yaml").read_text().split("\n", 1)[1])


def alarms_by_name(resources: dict) -> dict[str, dict]:
    """The template's CloudWatch alarms: name -> properties."""
    return {
        r["Properties"]["AlarmName"]: r["Properties"]
        for r in resources.values()
        if r.get("Type") == "AWS::CloudWatch::Alarm"
    }


def test_prod_is_not_traced_and_keeps_logs_longer():
    """X-Ray is off (issue 38): without a tracer it showed Lambda's segments only; the logs'
    correlationId follows a request instead. The serverless rules' tracing warnings are listed
    exceptions with that reason."""
    import json

    config = json.loads((REPO_ROOT / ".chalice" / "config.json").read_text())
    assert not any(stage.get("xray") for stage in config["stages"].values())
    retention = {s: config["stages"][s]["log_retention_in_days"] for s in ("dev", "prod")}
    assert retention["prod"] > retention["dev"]
    prod = prod_template()
    assert prod["Resources"]["RestAPI"]["Properties"]["TracingEnabled"] is False
    assert "AWSXRayDaemonWriteAccess" not in json.dumps(prod)
    exceptions = json.loads((REPO_ROOT / "infra" / "lint-exceptions.json").read_text())
    assert "X-Ray" in exceptions["WS1000"]["reason"]


@pytest.mark.fast
def test_prod_template_watches_every_failure_class_and_deploys_by_canary():
    """Issue 26: the alarms and dashboard, aliases with a canary and its rollback alarms, access
    logs with the correlation id, and stage throttling, in the generated prod template."""
    prod = prod_template()
    resources = prod["Resources"]
    alarms = alarms_by_name(resources)
    for name in (
        "agora-prod-ses-feedback-dead-letters",
        "agora-prod-mailbox-jobs-age",
        "agora-prod-notification-jobs-age",
        "agora-prod-ses-feedback-age",
        "agora-prod-ses-feedback-dead-age",
        "agora-prod-api-duration-p99",
        "agora-prod-poll-mailbox-duration-p99",
        "agora-prod-api-latency-p99",
        "agora-prod-dynamodb-throttles",
        "agora-prod-ses-bounce-rate",
        "agora-prod-ses-complaint-rate",
        "agora-prod-send-digests-schedule-failed",
        "agora-prod-put-events-failed",
    ):
        assert name in alarms, name
    # Each says what it means; a member of a paged cause mails nobody itself (infra.paging).
    assert all(a["AlarmDescription"] for a in alarms.values())
    assert alarms["agora-prod-ses-bounce-rate"]["Threshold"] < 0.05
    assert alarms["agora-prod-ses-complaint-rate"]["Threshold"] <= 0.001
    tables = [r for r in resources.values() if r.get("Type") == "AWS::DynamoDB::Table"]
    # Throttles of every table and index: one query, naming each table of the stage.
    [expression] = [m["Expression"] for m in alarms["agora-prod-dynamodb-throttles"]["Metrics"]]
    query, restored = expression["Fn::Sub"]
    assert "ThrottledRequests" in query and "Operation, TableName" in query
    # The tables make restore switched the stack onto (tests/infra/test_restore.py).
    assert "TableName = '${Restored}'" in query and "TableNames" in json.dumps(restored)
    assert all(f"'{t['Properties']['TableName']}'" in query for t in tables)
    dashboard = resources["Dashboard"]["Properties"]
    assert dashboard["DashboardName"] == "agora-prod"
    body = json.loads(dashboard["DashboardBody"]["Fn::Sub"])
    assert len(body["widgets"]) >= 6

    functions = [n for n, r in resources.items() if n in alarm_function_ids(resources)]
    assert all(resources[f]["Properties"]["AutoPublishAlias"] == "live" for f in functions)
    preference = resources["APIHandler"]["Properties"]["DeploymentPreference"]
    # A canary, unless make deploy ALL_AT_ONCE=1 (the emergency switch), which drops the alarms too.
    all_at_once, at_once, canary = preference["Type"]["Fn::If"]
    assert (all_at_once, at_once) == ("DeploysAllAtOnce", "AllAtOnce")
    assert canary.startswith(("Canary", "Linear"))
    condition, rollback_alarms, none = preference["Alarms"]["Fn::If"]
    assert condition == "RollbackOnAlarms" and none == [{"Ref": "AWS::NoValue"}]
    assert {"Condition": "DeploysAllAtOnce"} in prod["Conditions"]["RollbackOnAlarms"]["Fn::And"][
        1
    ]["Fn::Not"]
    rollback = [ref["Ref"] for ref in rollback_alarms]
    # The version's 5xx answers too: the routing layer answers an exception with a 500, which
    # Lambda's Errors never counts (issue 48).
    assert set(rollback) == {
        "APIHandlerErrorsAlarm",
        "APIHandlerDurationAlarm",
        "APIHandlerServerErrorsAlarm",
    }
    for name in rollback:
        # The new version's own metric, by the minute: never the whole API's, never the old
        # version's (an alarm firing on it must not roll a fix back).
        alarm = resources[name]["Properties"]
        assert alarm["Period"] == 60
        dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
        if alarm["Namespace"] == "AWS/Lambda":
            assert dimensions["Resource"] == {"Fn::Sub": "${APIHandler}:live"}
            assert "APIHandler.Version" in json.dumps(dimensions["ExecutedVersion"])
        else:
            assert (alarm["Namespace"], alarm["MetricName"]) == ("Agora", "ServerErrors")
            assert "APIHandler.Version" in json.dumps(dimensions["Version"])
    # The hook, but for the emergency switch (issue 57: an emergency deploy skips it).
    assert preference["Hooks"] == {
        "PreTraffic": {
            "Fn::If": ["DeploysAllAtOnce", {"Ref": "AWS::NoValue"}, {"Ref": "PreTraffic"}]
        }
    }
    # No job is deployed by CodeDeploy: none can roll the stack (and an API fix) back; their
    # failures are alarmed (errors alarms on the alias's current version).
    jobs = [f for f in functions if f != "APIHandler"]
    assert len(jobs) == 11
    for logical in jobs:
        assert "DeploymentPreference" not in resources[logical]["Properties"], logical
        assert f"{logical}ErrorsAlarm" in resources

    api = resources["RestAPI"]["Properties"]
    access = api["AccessLogSetting"]
    log_format = json.loads(access["Format"])
    assert log_format["correlationId"] == "$context.requestId" and "status" in log_format
    assert access["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    [limits] = api["MethodSettings"]
    assert limits["ThrottlingRateLimit"] > 0 and limits["ThrottlingBurstLimit"] > 0


def alarm_function_ids(resources: dict) -> set[str]:
    """The functions' logical ids, as their errors alarms name them (check-aliases', inline and
    unaliased, by its fixed name: infra.rollout)."""
    return {
        r["Properties"]["Dimensions"][0]["Value"]["Ref"]
        for r in resources.values()
        if r.get("Type") == "AWS::CloudWatch::Alarm"
        and r["Properties"].get("MetricName") == "Errors"
        and isinstance(r["Properties"]["Dimensions"][0]["Value"], dict)
    }


@pytest.mark.fast
def test_prod_template_sees_silent_failures_and_keeps_its_data():
    """Issue 38: IteratorAge, a heartbeat per frequent schedule (missing data breaching), the
    account's limits, the budget; the token secret retained; the hook and its grants; log
    permissions on the stack's own log groups, not a stack name."""
    prod = prod_template()
    resources = prod["Resources"]
    alarms = alarms_by_name(resources)
    check_silences(alarms)
    check_limits_alarmed(alarms)
    check_paging(prod, alarms)
    [budget] = [r for r in resources.values() if r.get("Type") == "AWS::Budgets::Budget"]
    [subscriber] = budget["Properties"]["NotificationsWithSubscribers"][0]["Subscribers"]
    assert subscriber["Address"] == {"Ref": "AlarmEmail"}
    check_kept_data(prod)
    check_pre_traffic_hook(resources)
    check_restored_tables_switch(resources)
    check_own_log_groups(resources)


def check_silences(alarms: dict) -> None:
    """The outbox stream's age, and silence as an alarm (issue 48): a heartbeat per frequent
    schedule, the monthly purge by a daily check of the days since its last run, the outbox
    drain when the outbox is written and the drain reports no run."""
    from infra.alarms import HEARTBEATS, PURGE_AGE_DAYS

    age = alarms["agora-prod-outbox-stream-iterator-age"]
    assert (age["MetricName"], age["Dimensions"]) == (
        "IteratorAge",
        [{"Name": "FunctionName", "Value": {"Ref": "DrainOutbox"}}],
    )
    assert set(HEARTBEATS) | {"purge-comments"} == {
        "dispatch-mail-polls", "purge-comments", "send-digests"
    }  # fmt: skip
    purge = alarms["agora-prod-purge-comments-heartbeat"]
    assert (purge["MetricName"], purge["Threshold"]) == ("PurgeRunAgeDays", PURGE_AGE_DAYS)
    assert purge["TreatMissingData"] == "breaching" and purge["Period"] == 86400
    assert purge["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    silent = alarms["agora-prod-drain-outbox-silent"]
    metrics = {m["Id"]: m for m in silent["Metrics"]}
    drained = metrics["drained"]["MetricStat"]["Metric"]
    assert {"Name": "Job", "Value": "drain-outbox"} in drained["Dimensions"]
    written = metrics["written"]["MetricStat"]["Metric"]
    assert written["Dimensions"] == [{"Name": "TableName", "Value": "agora-prod-outbox"}]
    assert "FILL(drained, 0) == 0" in metrics["silent"]["Expression"]
    for job, (period, periods) in HEARTBEATS.items():
        beat = alarms[f"agora-prod-{job}-heartbeat"]
        assert beat["TreatMissingData"] == "breaching"
        assert beat["ComparisonOperator"] == "LessThanThreshold"
        assert {"Name": "Job", "Value": job} in beat["Dimensions"]
        # Powertools adds the pinned service name to every metric: the alarm names it too.
        assert {"Name": "service", "Value": "agora"} in beat["Dimensions"]
        assert (beat["Period"], beat["EvaluationPeriods"]) == (period, periods)
        assert period * periods <= (86400 if period < 3600 else 7 * 86400)


def check_limits_alarmed(alarms: dict) -> None:
    """The account's limits and the failures no error counts; every alarm on our own metrics
    names the service."""
    for name in ("account-concurrency", "lambda-throttles", "ses-quota", "api-4xx-share",
                 "api-429", "ses-feedback-delivery-failed", "dynamodb-throttles"):  # fmt: skip
        assert f"agora-prod-{name}" in alarms, name
    assert "drain-outbox" in alarms["agora-prod-put-events-failed"]["AlarmDescription"]
    # No alarm on one of our metrics lacks the service dimension.
    for alarm in alarms.values():
        if alarm.get("Namespace") == "Agora" and alarm["MetricName"] != "ApiThrottled":
            assert {"Name": "service", "Value": "agora"} in alarm["Dimensions"], alarm


def check_kept_data(prod: dict) -> None:
    """The token secret is retained; a failed first create leaves no key nor role behind; no
    account-wide setting unless asked."""
    resources = prod["Resources"]
    secret = resources["TokenSecret"]
    assert secret["DeletionPolicy"] in ("Retain", "RetainExceptOnCreate")
    assert secret["UpdateReplacePolicy"] == "Retain"
    assert resources["SecretsKey"]["DeletionPolicy"] == "RetainExceptOnCreate"
    assert resources["ApiGatewayAccount"]["Condition"] == "ManagesApiGatewayAccount"
    assert resources["ApiGatewayLoggingRole"]["DeletionPolicy"] == "RetainExceptOnCreate"
    assert prod["Parameters"]["ManageApiGatewayAccount"]["Default"] == "false"


def check_pre_traffic_hook(resources: dict) -> None:
    hook = resources["PreTraffic"]["Properties"]
    assert hook["FunctionName"]["Fn::Sub"].startswith("CodeDeployHook_")
    assert hook["Environment"]["Variables"]["AGORA_PRE_TRAFFIC_VERSION"] == {
        "Ref": "APIHandler.Version"
    }
    [grant] = resources["PreTrafficInvokePolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert grant["Resource"] == {"Fn::Sub": "${APIHandler.Arn}:*"}


def check_restored_tables_switch(resources: dict) -> None:
    """make restore's switch: every function reads the TableNames parameter, and may use the
    restored tables (agora-prod-<table>.<time>)."""
    from infra.operations import FUNCTIONS

    for logical in FUNCTIONS:
        variables = resources[logical]["Properties"]["Environment"]["Variables"]
        assert variables["AGORA_TABLE_NAMES"] == {"Ref": "TableNames"}
        assert variables["POWERTOOLS_SERVICE_NAME"] == "agora"
    api = json.loads((REPO_ROOT / ".chalice" / "policy-prod-api.json").read_text())
    tables = [a for s in api["Statement"] if s["Sid"] == "WriteTables" for a in s["Resource"]]
    assert "arn:aws:dynamodb:*:*:table/agora-prod-posts.*" in tables


def check_own_log_groups(resources: dict) -> None:
    """Logs (and the metrics written in them): each function's own log group, by reference."""
    assert "/aws/lambda/agora-" not in "".join(
        path.read_text() for path in (REPO_ROOT / ".chalice").glob("policy-*.json")
    )
    policies = {n: r for n, r in resources.items() if n.endswith("LogsPolicy")}
    assert len(policies) == 13
    for name, policy in policies.items():
        [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
        role = name.removesuffix("LogsPolicy")
        assert statement["Resource"] == {"Fn::GetAtt": [f"{role}LogGroup", "Arn"]}
        assert policy["Properties"]["Roles"] == [{"Ref": f"{role}Role"}]


def check_paging(prod: dict, alarms: dict) -> None:
    """Issues 48, 57: a page topic with one composite per cause, a ticket topic for every alarm,
    members included (a member that stays red keeps its composite red: a second cause under it
    still tickets); pages on rates and silences, never a single error; mail in, notifications
    and digests stopped for everyone and SES near its pause page; data loss split by cause;
    mail-failed a share of the mail handled; the API's 5xx seen for a quiet API too."""
    resources = prod["Resources"]
    topics = {n: r for n, r in resources.items() if r.get("Type") == "AWS::SNS::Topic"}
    assert {"PageTopic", "AlarmTopic"} <= set(topics)
    page = topics["PageTopic"]["Properties"]["Subscription"][0]["Endpoint"]
    assert page == {"Fn::If": ["HasPageEmail", {"Ref": "PageEmail"}, {"Ref": "AlarmEmail"}]}
    members = check_page_composites(resources)
    assert {"agora-prod-api-error-rate", "agora-prod-api-5xx-quiet",
            "agora-prod-api-function-error-rate", "agora-prod-drain-outbox-silent",
            "agora-prod-outbox-dead-letters", "agora-prod-dispatch-mail-polls-heartbeat",
            "agora-prod-mailboxes-all-failing", "agora-prod-notifications-all-failing",
            "agora-prod-send-digests-heartbeat", "agora-prod-digest-jobs-age",
            "agora-prod-ses-quota-reached", "agora-prod-ses-bounce-pause-near",
            "agora-prod-ses-complaint-pause-near"} <= members  # fmt: skip
    for name, alarm in alarms.items():
        if name == "agora-prod-region-outage":  # a cause alone: paged, and its recovery
            assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": "PageTopic"}]
            continue
        assert "OKActions" not in alarm, name  # a ticket mails once; a page's recovery pages
        assert alarm.get("AlarmActions") == [{"Ref": "AlarmTopic"}], name
    # Single errors and early warnings ticket, never page: one 500 or failed invocation (the
    # rollback alarms, whose state still rolls a deploy back), 5 5xx, 80% of the SES quota.
    assert not {"agora-prod-api-errors", "agora-prod-api-version-5xx", "agora-prod-api-5xx",
                "agora-prod-ses-quota", "agora-prod-ses-bounce-rate"} & members  # fmt: skip
    check_paged_measures(alarms)


def check_page_composites(resources: dict) -> set[str]:
    """One composite per cause, to the page topic, its description the cause's, its rule naming
    every alarm the table (infra.alarms) pages it with: the names of those members."""
    from infra.alarms import CAUSES, declared
    from infra.build import stage_names

    paged = declared("prod", stage_names("prod"), {})
    composites = {n: r["Properties"] for n, r in resources.items()
                  if r.get("Type") == "AWS::CloudWatch::CompositeAlarm"}  # fmt: skip
    assert set(composites) == {
        "ApiDownAlarm", "MailInStoppedAlarm", "NotificationsStoppedAlarm", "DigestsStoppedAlarm",
        "SesSendingAtRiskAlarm", "OutboxLossAlarm", "DeadLettersExpiringAlarm",
    }  # fmt: skip
    members = set()
    for logical, composite in composites.items():
        assert composite["AlarmActions"] == [{"Ref": "PageTopic"}]
        assert composite["AlarmDescription"] == CAUSES[logical]
        for member in [alarm.logical for alarm in paged if alarm.pages == logical]:
            name = resources[member]["Properties"]["AlarmName"]
            assert f'ALARM("{name}")' in composite["AlarmRule"]
            members.add(name)
    return members


def check_paged_measures(alarms: dict) -> None:
    """Pages on rates, silences and shares: what each paged alarm computes."""
    rate = {m["Id"]: m for m in alarms["agora-prod-api-error-rate"]["Metrics"]}
    assert (
        "errors / calls" in rate["share"]["Expression"]
        and "calls >=" in rate["share"]["Expression"]
    )
    stopped = {m["Id"]: m for m in alarms["agora-prod-notifications-all-failing"]["Metrics"]}
    assert "FILL(sent, 0) == 0" in stopped["share"]["Expression"]
    assert 0.05 < alarms["agora-prod-ses-bounce-pause-near"]["Threshold"] < 0.10
    assert 0.001 < alarms["agora-prod-ses-complaint-pause-near"]["Threshold"] < 0.005
    quota = {m["Id"]: m for m in alarms["agora-prod-ses-quota-reached"]["Metrics"]}
    assert alarms["agora-prod-ses-quota-reached"]["Threshold"] > 0.8 and "sent" in quota
    share = {m["Id"]: m for m in alarms["agora-prod-mail-failed"]["Metrics"]}
    assert "failed" in share and "posted" in share and "/ (" in share["share"]["Expression"]
    quiet = alarms["agora-prod-api-5xx-quiet"]
    periods = {m["MetricStat"]["Period"] for m in quiet["Metrics"] if "MetricStat" in m}
    assert periods == {3600} and "errors / calls" in quiet["Metrics"][2]["Expression"]


@pytest.mark.fast
def test_prod_copies_every_table_out_of_the_region_daily_and_pages_a_region_outage():
    """Issue 57: no region-outage story. With BackupRegion, AWS Backup takes every table daily
    and copies it to the second region's vault (RPO 24 hours); Route 53's checkers, outside the
    region, ask the API every 30 s, and the region-outage alarm pages (us-east-1, where Route
    53's metrics are)."""
    from infra.disaster import COPY_KEPT_DAYS

    prod = prod_template()
    resources = prod["Resources"]
    assert "Default" in prod["Parameters"]["BackupRegion"]  # optional: no copy unless asked
    plan = resources["BackupPlan"]
    assert plan["Condition"] == "HasBackupRegion"
    [rule] = plan["Properties"]["BackupPlan"]["BackupPlanRule"]
    assert (
        rule["ScheduleExpression"].startswith("cron(") and " * * ? *)" in rule["ScheduleExpression"]
    )
    [copy] = rule["CopyActions"]
    assert "${BackupRegion}" in copy["DestinationBackupVaultArn"]["Fn::Sub"]
    assert copy["DestinationBackupVaultArn"]["Fn::Sub"].endswith("backup-vault:agora-prod-copy")
    assert copy["Lifecycle"]["DeleteAfterDays"] == COPY_KEPT_DAYS
    selected = json.dumps(
        resources["BackupSelection"]["Properties"]["BackupSelection"]["Resources"]
    )
    tables = [r["Properties"]["TableName"] for r in resources.values()
              if r.get("Type") == "AWS::DynamoDB::Table"]  # fmt: skip
    assert tables and all(f"table/{name}" in selected for name in tables)
    check = resources["ApiHealthCheck"]["Properties"]["HealthCheckConfig"]
    assert check["ResourcePath"].endswith("/v1/en_US/openapi.json") and check["Type"] == "HTTPS"
    outage = resources["RegionOutageAlarm"]
    assert outage["Condition"] == "InUsEast1"
    assert outage["Properties"]["AlarmActions"] == [{"Ref": "PageTopic"}]
    assert outage["Properties"]["Dimensions"] == [
        {"Name": "HealthCheckId", "Value": {"Ref": "ApiHealthCheck"}}
    ]
    # dev keeps none of it.
    dev = yaml_text.load((REPO_ROOT / "infra" / "dev.yaml").read_text())
    assert "BackupPlan" not in dev["Resources"] and "BackupRegion" not in dev["Parameters"]


@pytest.mark.fast
def test_every_ses_event_of_the_stage_is_kept_in_a_log_group():
    """Issue 57: SES delivery events were not kept, so "why did member X not get the
    notification of post Y" had no answer past the send. Every event of the stage's mail goes
    to the default bus and from there to its log group, kept as long as the functions' logs."""
    from infra.mail_events import EVENT_TYPES

    resources = prod_template()["Resources"]
    destination = resources["SesEventsDestination"]["Properties"]
    assert destination["ConfigurationSetName"] == {"Ref": "SesConfigurationSet"}
    events = destination["EventDestination"]
    assert {"send", "delivery", "bounce", "complaint", "reject"} <= set(EVENT_TYPES)
    assert events["MatchingEventTypes"] == EVENT_TYPES
    assert "event-bus/default" in events["EventBridgeDestination"]["EventBusArn"]["Fn::Sub"]
    rule = resources["SesEventsRule"]["Properties"]
    assert rule["EventPattern"]["source"] == ["aws.ses"]
    # The stage's own mail only (its configuration set's name), not the account's other mail.
    configuration_set = resources["SesConfigurationSet"]["Properties"]["Name"]
    tags = rule["EventPattern"]["detail"]["mail"]["tags"]
    assert tags == {"ses:configuration-set": [configuration_set]}
    [target] = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["SesEventsLogGroup", "Arn"]}
    group = resources["SesEventsLogGroup"]["Properties"]
    assert group["LogGroupName"] == "/aws/events/agora-prod-ses-events"
    assert group["RetentionInDays"] == 90
    policy = json.loads(
        resources["SesEventsLogPolicy"]["Properties"]["PolicyDocument"]["Fn::Sub"][0]
    )
    assert "events.amazonaws.com" in policy["Statement"][0]["Principal"]["Service"]
