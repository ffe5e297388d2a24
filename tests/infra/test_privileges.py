"""Least privilege per function (issue 24): each Lambda function's role allows what its code calls
and no more. `infra/privileges.py` declares it; here the generated policies are read back, and
each function's code is run under moto with every AWS call recorded: a call its policy does not
allow fails, and so does a table or queue it is granted but never touches."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from infra import operations, privileges
from tests.support import REPO_ROOT

STAGE = "dev"


def policy_document(function: str, stage: str = STAGE) -> dict[str, Any]:
    config = json.loads((REPO_ROOT / ".chalice" / "config.json").read_text())
    name = config["stages"][stage]["lambda_functions"][function]["iam_policy_file"]
    return json.loads((REPO_ROOT / ".chalice" / name).read_text())


def template(stage: str = STAGE) -> dict[str, Any]:
    from infra import yaml_text

    return yaml_text.load((REPO_ROOT / "infra" / f"{stage}.yaml").read_text().split("\n", 1)[1])


def sends_mail(function: str, stage: str = STAGE) -> bool:
    """The template's SES grant is attached to this function's role."""
    grant = template(stage)["Resources"]["MailSendingPolicy"]["Properties"]
    return {"Ref": operations.role_id(function)} in grant["Roles"]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def allowed(function: str, action: str, resource: str) -> bool:
    """IAM's answer for one call, from the function's policy file and the template's SES grant
    (Allow statements only: Agora's policies have no Deny)."""
    if action == "ses:SendRawEmail":
        return sends_mail(function)
    for statement in policy_document(function)["Statement"]:
        if action in _listed(statement["Action"]) and any(
            fnmatch.fnmatchcase(resource, pattern) for pattern in _listed(statement["Resource"])
        ):
            return True
    return False


# --- the declarations and the files agree -------------------------------------------------------


def app_functions() -> set[str]:
    """Every Lambda function app.py makes: the API handler and each scheduled or SQS function."""
    import app

    names = {"api_handler"}
    for source in app.app.event_sources:
        names.add(source.name)
    for function in app.app.pure_lambda_functions:  # drain-outbox, triggered by a stream
        names.add(function.name)
    return names


def test_every_function_of_the_app_has_its_own_declared_policy():
    declared = set(privileges.FUNCTIONS)
    assert app_functions() == declared
    config = json.loads((REPO_ROOT / ".chalice" / "config.json").read_text())
    for stage in ("dev", "prod"):
        settings = config["stages"][stage]
        # No stage-wide policy a new function could fall back on unnoticed.
        assert "iam_policy_file" not in settings
        files = {f: settings["lambda_functions"][f]["iam_policy_file"] for f in declared}
        assert len(set(files.values())) == len(declared)
        for name in files.values():
            assert (REPO_ROOT / ".chalice" / name).exists(), name


def test_policies_name_no_wildcard_action_and_no_bare_star_resource():
    for function in privileges.FUNCTIONS:
        for statement in policy_document(function)["Statement"]:
            assert all("*" not in a for a in _listed(statement["Action"])), statement["Sid"]
            assert all(r != "*" for r in _listed(statement["Resource"])), statement["Sid"]


def test_ses_feedback_may_not_send_mail_nor_read_the_token_secret():
    assert not allowed("ses-feedback", "ses:SendRawEmail", "arn:aws:ses:us-east-1:1:identity/x")
    secret = "arn:aws:secretsmanager:us-east-1:1:secret:agora-dev-token-secret-AbCdEf"
    assert not allowed("ses-feedback", "secretsmanager:GetSecretValue", secret)
    assert not allowed(
        "ses-feedback", "dynamodb:PutItem", "arn:aws:dynamodb:us-east-1:1:table/agora-dev-users"
    )


def test_the_api_cannot_send_to_the_ses_feedback_queue_nor_send_mail():
    feedback = "arn:aws:sqs:us-east-1:1:agora-dev-ses-feedback"
    assert not allowed("api_handler", "sqs:SendMessage", feedback)
    assert not allowed("api_handler", "sqs:ReceiveMessage", feedback)
    assert not allowed("api_handler", "ses:SendRawEmail", "arn:aws:ses:us-east-1:1:identity/x")


def test_only_a_queues_own_function_receives_from_it():
    for function, needs in privileges.FUNCTIONS.items():
        for queue in ("agora-dev-mailbox-jobs", "agora-dev-notification-jobs"):
            may = allowed(function, "sqs:ReceiveMessage", f"arn:aws:sqs:us-east-1:1:{queue}")
            assert may == (
                needs.triggered_by is not None
                and f"agora-dev-{queue.removeprefix('agora-dev-')}"
                == f"agora-dev-{_queue_stem(needs.triggered_by)}"
            ), (function, queue)


def _queue_stem(key: str) -> str:
    return {"queue": "mailbox-jobs", "notify_queue": "notification-jobs"}.get(key, "ses-feedback")


def test_the_ses_grant_names_the_stacks_one_identity_and_sender():
    resources = template()["Resources"]
    [statement] = resources["MailSendingPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    identity, configuration_set = statement["Resource"]
    assert identity["Fn::Sub"][0].endswith(":identity/${Domain}")
    domain = identity["Fn::Sub"][1]["Domain"]
    assert resources["MailSenderIdentity"]["Properties"]["EmailIdentity"] == domain
    assert "identity/*" not in json.dumps(statement)
    assert configuration_set["Fn::Sub"].endswith(":configuration-set/agora-dev")
    sender = statement["Condition"]["StringEquals"]["ses:FromAddress"]
    for function in ("PollMailbox", "SendDigests", "DeliverNotifications"):
        variables = resources[function]["Properties"]["Environment"]["Variables"]
        assert variables["AGORA_MAIL_SENDER"] == sender


# --- what the code calls, recorded --------------------------------------------------------------


@dataclass
class Recorder:
    """Every AWS call made while it listens, as (IAM action, resource ARN) in the deployed
    stage's names (tests run under the prefix agora-test- and the settings' queue names)."""

    calls: set[tuple[str, str]] = field(default_factory=set)

    def tables(self) -> set[str]:
        return {
            r.split("table/")[1].split("/")[0] for a, r in self.calls if a.startswith("dynamodb:")
        }

    def queues(self) -> set[tuple[str, str]]:
        return {(a, r.rsplit(":", 1)[1]) for a, r in self.calls if a.startswith("sqs:")}


def _table_arn(name: str, index: str | None = None) -> str:
    stage_name = "agora-dev-" + name.removeprefix("agora-test-")
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{stage_name}"
    return f"{arn}/index/{index}" if index else arn


def _queue_arn(url_or_name: str) -> str:
    from chalicelib.settings import get_settings

    settings = get_settings()
    name = url_or_name.rsplit("/", 1)[-1]
    stage = {
        settings.mailbox_queue: "agora-dev-mailbox-jobs",
        settings.notify_queue: "agora-dev-notification-jobs",
        settings.ses_feedback_queue: "agora-dev-ses-feedback",
    }.get(name, name)
    return f"arn:aws:sqs:us-east-1:123456789012:{stage}"


TRANSACT = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
SQS_BATCH = {"SendMessageBatch": "SendMessage", "DeleteMessageBatch": "DeleteMessage"}


def _dynamodb_iam(operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [(f"dynamodb:{operation}", _table_arn(t)) for t in params["RequestItems"]]
    if operation == "TransactWriteItems":
        return [
            (f"dynamodb:{TRANSACT[kind]}", _table_arn(body["TableName"]))
            for item in params["TransactItems"]
            for kind, body in item.items()
        ]
    if operation == "TransactGetItems":
        return [
            ("dynamodb:GetItem", _table_arn(i["Get"]["TableName"])) for i in params["TransactItems"]
        ]
    return [(f"dynamodb:{operation}", _table_arn(params["TableName"], params.get("IndexName")))]


def _sqs_iam(operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    queue = params.get("QueueUrl") or params.get("QueueName", "")
    return [(f"sqs:{SQS_BATCH.get(operation, operation)}", _queue_arn(queue))]


def _s3_iam(operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f"s3:{operation}", f"arn:aws:s3:::{params.get('Bucket')}/{params.get('Key', '')}")]


def _secret_iam(operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    # The stage's secret the call names (the token secret's tests name theirs otherwise).
    secret = "canary" if "canary" in str(params.get("SecretId", "")) else "token"
    return [
        (
            f"secretsmanager:{operation}",
            f"arn:aws:secretsmanager:us-east-1:123456789012:secret:agora-dev-{secret}-secret-AbCdEf",
        )
    ]


# Service -> the (IAM action, resource ARN) pairs one of its calls needs.
SERVICE_IAM: dict[str, Callable[[str, dict[str, Any]], list[tuple[str, str]]]] = {
    "dynamodb": _dynamodb_iam,
    "sqs": _sqs_iam,
    "ses": lambda operation, _params: [
        (f"ses:{operation}", "arn:aws:ses:us-east-1:123456789012:identity/sender")
    ],
    "s3": _s3_iam,
    "kms": lambda operation, _params: [
        (f"kms:{operation}", "arn:aws:kms:us-east-1:123456789012:key/k")
    ],
    "events": lambda _operation, _params: [
        ("events:PutEvents", "arn:aws:events:us-east-1:123456789012:event-bus/agora-dev-events")
    ],
    "secretsmanager": _secret_iam,
}


def _iam_of(service: str, operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    """What IAM checks for one call: (action, resource) pairs; a service the table does not
    know needs `service:operation` on any resource."""
    if service in SERVICE_IAM:
        return SERVICE_IAM[service](operation, params)
    return [(f"{service}:{operation}", "*")]


@pytest.fixture
def recorder(aws, monkeypatch) -> Iterator[Recorder]:
    """Sees every AWS call of the process while the test acts: boto3's clients, PynamoDB's, and
    the ones a transaction makes for itself (botocore's one way out, wrapped)."""
    import botocore.client

    found = Recorder()
    make_call = botocore.client.BaseClient._make_api_call

    def recorded(self: Any, operation: str, params: dict[str, Any]) -> Any:
        service = self.meta.service_model.service_name
        for action, resource in _iam_of(service, operation, params):
            found.calls.add((action, resource))
        return make_call(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recorded)
    yield found


def assert_granted(function: str, recorder: Recorder) -> None:
    refused = sorted(c for c in recorder.calls if not allowed(function, *c))
    assert not refused, f"{function} calls what its policy does not allow: {refused}"


def declared_tables(function: str) -> set[str]:
    needs = privileges.FUNCTIONS[function]
    return {f"agora-dev-{t}" for t in (*needs.reads, *needs.writes)}


def test_ses_feedback_suppresses_with_its_own_grant_only(recorder, client):
    from chalicelib.settings import get_settings
    from tests.services.test_suppressions import bounce

    event = client.events.generate_sqs_event(
        message_bodies=[json.dumps(bounce("gone@example.org"))],
        queue_name=get_settings().ses_feedback_queue,
    )
    recorder.calls.clear()
    assert client.lambda_.invoke("ses-feedback", event).payload == {"batchItemFailures": []}
    from chalicelib.store.sending import SuppressionRepository

    assert SuppressionRepository().is_suppressed("gone@example.org")
    assert_granted("ses-feedback", recorder)
    assert recorder.tables() == declared_tables("ses-feedback")


def test_purge_comments_uses_exactly_its_grant(community, recorder):
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.comment_purge import purge_old_deleted_comments

    c = community
    garden = c.group("garden")
    moderator = c.user("moderator", {garden: "moderator"})
    post = c.post(garden, moderator)
    old = (datetime.now(UTC) - timedelta(days=70)).isoformat().replace("+00:00", "Z")
    c.comment(post, moderator, deletedOn=old, deletedById=moderator)
    c.load()
    recorder.calls.clear()
    assert purge_old_deleted_comments(Deadline.unbounded()) == 1
    assert_granted("purge-comments", recorder)
    assert recorder.tables() == declared_tables("purge-comments")


# Settings of a mailbox on a private-network host (the tests allow such hosts: private_mail_hosts).
PRIVATE_MAILBOX = {
    "serverName": "10.1.2.3",
    "serverPort": 110,
    "serverUsername": "garden",
    "serverPassword": "secret",
    "isEnabled": True,
    "isSSL": False,
    "deleteProcessed": True,
}


def test_dispatch_mail_polls_reads_mailboxes_and_sends_to_its_queue_only(
    community, kms_key, api, recorder, private_mail_hosts
):
    from chalicelib.jobs.mail_poll import dispatch

    c = community
    garden = c.group("garden")
    admin = c.user("garden-admin", {garden: "administrator"})
    c.load()
    status, body = api.put(
        f"/api/v1/en_US/connector/email-to-post/{garden}", admin, PRIVATE_MAILBOX
    )
    assert status == 200, body
    recorder.calls.clear()
    dispatch()
    assert_granted("dispatch-mail-polls", recorder)
    assert recorder.tables() == declared_tables("dispatch-mail-polls")
    assert {q for _, q in recorder.queues()} == {"agora-dev-mailbox-jobs"}


def test_api_calls_stay_within_the_api_grant(community, kms_key, api, recorder, private_mail_hosts):
    c = community
    garden = c.group("garden")
    admin = c.user("garden-admin", {garden: "administrator"}, password="a-good-password")
    c.load()
    recorder.calls.clear()
    status, _ = api.post(
        "/api/v1/en_US/security/login",
        None,
        {"email": "garden-admin@example.org", "password": "a-good-password"},
    )
    assert status == 200
    status, body = api.put(
        f"/api/v1/en_US/connector/email-to-post/{garden}", admin, PRIVATE_MAILBOX
    )
    assert status == 200, body
    status, _ = api.get(f"/api/v1/en_US/connector/email-to-post/{garden}", admin)
    assert status == 200
    status, _ = api.get(f"/api/v1/en_US/user/{admin}/feed-key", admin)
    assert status == 200
    assert_granted("api_handler", recorder)
    assert "agora-dev-mailbox-leases" not in recorder.tables()


def test_deliver_notifications_mails_a_chunk_within_its_grant(community, recorder, client):
    from chalicelib.domain.announcements import PostCreated
    from chalicelib.services.notify.delivery import Recipient, chunk_body
    from chalicelib.settings import get_settings
    from tests.support.notify import recipients, sent_mail, subscribe, verify_sender_domain

    c = community
    garden = c.group("garden")
    ann = c.user("ann", {garden: "member"})
    fan = c.user("fan", {garden: "member"})
    hello = c.post(garden, ann, title="Hello", slug="hello")
    c.load()
    verify_sender_domain()
    subscribe(fan, "group", garden, 1, email=1)
    body = chunk_body(
        PostCreated(hello, garden, ann),
        [Recipient(fan, email_alert_id=1, reason="All new group posts")],
    )
    event = client.events.generate_sqs_event(
        message_bodies=[body], queue_name=get_settings().notify_queue
    )
    recorder.calls.clear()
    assert client.lambda_.invoke("deliver-notifications", event).payload == {
        "batchItemFailures": []
    }
    assert recipients(sent_mail()) == ["fan@example.org"]
    assert_granted("deliver-notifications", recorder)
    assert ("ses:SendRawEmail", "arn:aws:ses:us-east-1:123456789012:identity/sender") in (
        recorder.calls
    )
    assert recorder.tables() <= declared_tables("deliver-notifications")
