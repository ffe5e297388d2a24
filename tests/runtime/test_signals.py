# ruff: noqa: F811 - `world`, the notification tests' fixture, is a parameter by design
"""Signals an operator acts on: JSON log lines with the Lambda context and cold start, one
correlation id from the work that caused a notification through SQS to its delivery, the level
from AGORA_LOG_LEVEL, and CloudWatch embedded-metric-format (EMF) lines in Lambda."""

from __future__ import annotations

import json

import pytest

from chalicelib import deps
from chalicelib.domain.announcements import PostCreated
from chalicelib.logs import invocation
from chalicelib.services.notify.delivery import Recipient, chunk_body
from chalicelib.settings import get_settings
from tests.services.test_notify import INSTANT, email_of, world  # noqa: F401 - fixture
from tests.support.emf import emf, json_lines, value
from tests.support.notify import recipients, sent_mail, subscribe


@pytest.fixture
def in_lambda(monkeypatch):
    """The variables the Lambda runtime sets (EMF is written only there)."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-DeliverNotifications")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")


def test_correlation_id_goes_from_the_event_through_sqs_to_the_delivery(world, capsys):
    from chalicelib.jobs.notify import drain_queue

    c = world
    for fan in (c.group_fan, c.author_fan, c.outsider):
        subscribe(fan, "group", c.garden, 1, email=INSTANT)
    with invocation(correlation="mail-poll-42"):
        report = deps.notify_service(inline_limit=1, chunk_size=1).handle(
            PostCreated(c.hello, c.garden, c.ann)
        )
    assert report.fanned_out == 3
    capsys.readouterr()
    assert drain_queue() == 3  # another process, in AWS: only the queue message links them
    delivered = [
        line
        for line in json_lines(capsys.readouterr().err)
        if line["message"] == "notifications delivered"
    ]
    assert len(delivered) == 3
    assert {line["correlationId"] for line in delivered} == {"mail-poll-42"}


def test_sqs_function_lines_carry_lambda_context_and_emit_notifications_sent(
    world, client, capsys, in_lambda
):
    body = chunk_body(
        PostCreated(world.hello, world.garden, world.ann),
        [Recipient(world.group_fan, email_alert_id=INSTANT, reason="All new group posts")],
    )
    event = client.events.generate_sqs_event(
        message_bodies=[body], queue_name=get_settings().notify_queue
    )
    capsys.readouterr()
    client.lambda_.invoke("deliver-notifications", event)
    client.lambda_.invoke("deliver-notifications", event)
    out, err = capsys.readouterr()
    # The second delivery of the same chunk tells nobody twice.
    assert recipients(sent_mail()) == [email_of(world, world.group_fan)]
    delivered = [line for line in json_lines(err) if line["message"] == "notifications delivered"]
    assert len(delivered) == 2
    for line in delivered:
        assert line["function"] == "agora-test-DeliverNotifications"
        assert line["xray_trace_id"] == "1-5759e988-bd862e3fe1be46a994272793"  # Powertools' key
        assert line["requestId"] and isinstance(line["coldStart"], bool)
        assert line["correlationId"] == json.loads(body)["correlationId"]
    assert delivered[1]["coldStart"] is False
    [first, second] = emf(json_lines(out), "NotificationsSent")
    assert (value(first, "NotificationsSent"), value(second, "NotificationsSent")) == (1, 0)
    [directive] = first["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Agora" and directive["Dimensions"] == [["Stage"]]
    assert first["Stage"] == "agora-test"


def test_purge_emits_comments_purged_and_mail_outcomes_carry_their_dimension(
    aws, capsys, in_lambda
):
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.comment_purge import purge_old_deleted_comments
    from chalicelib.jobs.mail_poll import emit_outcomes
    from chalicelib.services.mail_in.ingest import PollResult

    capsys.readouterr()
    purge_old_deleted_comments(Deadline.unbounded())
    emit_outcomes(PollResult(mailbox="post#x", posted=2, failed=1))
    lines = json_lines(capsys.readouterr().out)
    [purged] = emf(lines, "CommentsPurged")
    assert value(purged, "CommentsPurged") == 0  # a zero too: the metric never goes missing
    mail = emf(lines, "MailHandled")
    assert {(m["Outcome"], value(m, "MailHandled")) for m in mail} == {("posted", 2), ("failed", 1)}
    assert all(
        m["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Stage", "Outcome"]] for m in mail
    )


def test_no_metric_lines_outside_lambda(aws, capsys):
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.comment_purge import purge_old_deleted_comments

    purge_old_deleted_comments(Deadline.unbounded())
    out, err = capsys.readouterr()
    assert "_aws" not in out and "_aws" not in err


def test_api_answers_and_logs_the_callers_correlation_id(api, community, capsys):
    community.load()
    admin = community.users[0]["id"]
    capsys.readouterr()
    response = api.client.http.get(
        "/api/v1/en_US/system-page/home-page",
        headers={"X-Auth": _token(admin), "X-Correlation-Id": "browser-7"},
    )
    assert response.status_code == 200
    assert response.headers["X-Correlation-Id"] == "browser-7"
    [line] = [line for line in json_lines(capsys.readouterr().err) if line["message"] == "request"]
    assert line["correlationId"] == "browser-7" and line["status"] == 200
    # A hostile id (too long, or with characters a log query would trip on) is replaced.
    response = api.client.http.get(
        "/api/v1/en_US/system-page/home-page",
        headers={"X-Auth": _token(admin), "X-Correlation-Id": 'x" OR 1=1 ' * 20},
    )
    assert response.headers["X-Correlation-Id"] != 'x" OR 1=1 ' * 20


def test_without_a_callers_id_the_api_gateway_request_id_is_the_correlation_id(
    api, community, capsys
):
    """So the access log's `correlationId` ($context.requestId) finds the function's lines."""
    import app as agora

    community.load()
    path = "/api/v1/en_US/system-page/home-page"
    event = {
        "resource": path,
        "path": path,
        "httpMethod": "GET",
        "headers": {"X-Auth": _token(community.users[0]["id"])},
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {"requestId": "gw-7c1f", "resourcePath": path, "httpMethod": "GET"},
        "body": None,
        "isBase64Encoded": False,
    }

    class Context:
        aws_request_id = "lambda-1"
        function_name = "agora-test-APIHandler"

        def get_remaining_time_in_millis(self) -> int:
            return 20_000

    capsys.readouterr()
    answer = agora.app(event, Context())
    assert answer["statusCode"] == 200
    headers = {**answer.get("headers", {}), **answer.get("multiValueHeaders", {})}
    assert headers["X-Correlation-Id"] in ("gw-7c1f", ["gw-7c1f"]), answer.keys()
    [line] = [line for line in json_lines(capsys.readouterr().err) if line["message"] == "request"]
    assert (line["correlationId"], line["apiRequestId"]) == ("gw-7c1f", "gw-7c1f")


@pytest.mark.parametrize(("level", "logged"), [("WARNING", False), ("DEBUG", True)])
def test_log_level_comes_from_agora_log_level(api, community, capsys, monkeypatch, level, logged):
    from chalicelib.settings import reload_settings

    community.load()
    monkeypatch.setenv("AGORA_LOG_LEVEL", level)
    reload_settings()
    try:
        capsys.readouterr()
        api.get("/api/v1/en_US/openapi.json")
        lines = json_lines(capsys.readouterr().err)
        assert any(line["message"] == "request" for line in lines) is logged
    finally:
        monkeypatch.undo()
        reload_settings()


def _token(user_id: str) -> str:
    from chalicelib.auth import issue_token

    return issue_token(user_id)


def test_a_5xx_answer_emits_server_errors(api, community, capsys, in_lambda):
    from chalicelib.aws import client

    community.load()
    client("dynamodb").delete_table(TableName="agora-test-login-attempts")
    capsys.readouterr()
    status, body = api.post(
        "/api/v1/en_US/security/login", body={"email": "a@example.org", "password": "x"}
    )
    assert status >= 500 and body["success"] is False
    [metric] = emf(json_lines(capsys.readouterr().out), "ServerErrors")
    assert value(metric, "ServerErrors") == 1 and metric["correlationId"]
    # The version that answered (Lambda's AWS_LAMBDA_FUNCTION_VERSION): what a deploy's canary
    # rolls back on (infra.alarms APIHandlerServerErrorsAlarm).
    [dimensions] = metric["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
    assert "Version" in dimensions and metric["Version"] == "$LATEST"


def test_every_outbox_drain_emits_its_heartbeat(world, capsys, in_lambda):
    """drain-outbox's "it ran" signal, empty batch or not: its silence while the outbox is written
    is alarmed (infra/alarms.py DrainOutboxSilentAlarm)."""
    from app import drain_outbox

    capsys.readouterr()
    assert drain_outbox({"Records": []}, None) == {"batchItemFailures": []}
    [metric] = emf(json_lines(capsys.readouterr().out), "ScheduledRunCompleted")
    assert value(metric, "ScheduledRunCompleted") == 1 and metric["Job"] == "drain-outbox"
