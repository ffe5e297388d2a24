"""The mail job as deployed: settings saved through the API, the schedule's dispatch to SQS, the
SQS-triggered function through app.py's wiring, the CLI, and the mail log endpoints."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from chalicelib.cli import main
from tests.mail.test_ingest import BASE, mail
from tests.support.emf import value


@pytest.fixture
def configured(community, mailbox, dovecot, kms_key, api):
    c = community
    c.garden = c.group("garden")
    c.admin = c.user("garden-admin", {c.garden: "administrator"})
    c.ann = c.user("ann", {c.garden: "member"}, email="ann@example.org")
    c.hello = c.post(c.garden, c.ann, title="Hello", slug="hello")
    c.load()
    settings = {
        "serverName": "127.0.0.1",
        "serverPort": dovecot.pop3_port,
        "serverUsername": mailbox.user,
        "serverPassword": mailbox.password,
        "isEnabled": True,
        "isSSL": False,
        "deleteProcessed": True,
    }
    status, body = api.put(f"/api/v1/en_US/connector/email-to-post/{c.garden}", c.admin, settings)
    assert status == 200, body
    c.mailbox = mailbox
    return c


def test_cli_poll_mail_imports_and_the_log_endpoint_shows_it(configured, api, capsys):
    configured.mailbox.deliver(mail("ann@example.org", "From the CLI", "hello"))
    configured.mailbox.deliver(mail("nobody@example.org", "Stranger", "hello"))
    assert main(["poll-mail"]) == 0
    out = capsys.readouterr().out
    assert "Garden (garden): seen 2, posted 1" in out
    status, body = api.get(
        f"/api/v1/en_US/connector/email-to-post/{configured.garden}/log?pageSize=1",
        configured.admin,
    )
    assert status == 200
    [newest] = body["object"]["entries"]
    status, body2 = api.get(
        f"/api/v1/en_US/connector/email-to-post/{configured.garden}/log?pageSize=5&offset={newest['id']}",
        configured.admin,
    )
    entries = [newest, *body2["object"]["entries"]]
    assert {e["status"] for e in entries} == {"posted", "rejected"}
    posted = next(e for e in entries if e["status"] == "posted")
    assert posted["type"] == "mailLogEntry" and posted["from"] == "ann@example.org"
    assert posted["post"]["title"] == "From the CLI" and posted["commentId"] is None
    assert posted["receivedOn"].endswith("Z")
    status, settings = api.get(
        f"/api/v1/en_US/connector/email-to-post/{configured.garden}", configured.admin
    )
    assert settings["object"]["lastProcessed"] is not None


def ends_after_first_read() -> Callable[[], int]:
    """A deadline's remaining time that runs out once the first mail has been read: plenty at
    the poll's start (when its connections' end is set, jobs/mail_poll.py, and when the
    ingestor asks before the first mail), none when the ingestor next asks."""
    asked: list[int] = []

    def remaining_ms() -> int:
        asked.append(1)
        return 0 if len(asked) > 2 else 10**12

    return remaining_ms


def test_mail_that_agoras_own_stop_left_on_the_server_is_the_next_runs_first_poll(configured, api):
    """make run's stop (Ctrl-C) mid-poll: what was read is posted, the rest stays on the server,
    and the mailbox stays due, so the restarted make run's schedule (`poll-mail --due`) reads the
    rest at once, not an interval later: nothing of Agora's own stop is the mailbox's."""
    from chalicelib.clock import utc_now
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.mail_poll import composed, poll_all_in_process, poll_mailbox

    for n in range(3):
        configured.mailbox.deliver(mail("ann@example.org", f"Before the stop {n}", "hello"))
    stop = Deadline(ends_after_first_read(), margin_ms=0, stopping=True)
    polled = poll_mailbox(f"post#{configured.garden}", stop, composed())
    assert polled.failure is None, polled.line
    assert configured.mailbox.count() == 2  # one read (and deleted), two left on the server
    path = f"/api/v1/en_US/connector/email-to-post/{configured.garden}"
    shown = api.get(path, configured.admin)[1]["object"]
    assert shown["lastError"] is None and shown["lastProcessed"] is not None
    assert datetime.fromisoformat(shown["nextPollOn"]) <= utc_now()  # due: not in 5 minutes
    # The next run's schedule polls what is due, and finds it due.
    report = poll_all_in_process(Deadline.unbounded(), due=True)
    assert not report.failures and len(report.lines) == 1, report.lines
    assert configured.mailbox.count() == 0


def test_mail_a_lambda_runs_end_left_on_the_server_waits_the_contracts_five_minutes(
    configured, api
):
    """The counterpart of the stop above: a run's own end (Lambda's time running out, not Agora's
    stop) with mail left is a poll that found mail, due 5 minutes on (CONTRACT §9), so only
    Agora's own stop makes a mailbox due at once."""
    from chalicelib.clock import utc_now
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.mail_poll import composed, poll_mailbox

    for n in range(3):
        configured.mailbox.deliver(mail("ann@example.org", f"Before the run's end {n}", "hello"))
    run_end = Deadline(ends_after_first_read(), margin_ms=0)
    polled = poll_mailbox(f"post#{configured.garden}", run_end, composed())
    assert polled.failure is None, polled.line
    assert configured.mailbox.count() == 2
    path = f"/api/v1/en_US/connector/email-to-post/{configured.garden}"
    shown = api.get(path, configured.admin)[1]["object"]
    assert shown["lastError"] is None
    due = datetime.fromisoformat(shown["nextPollOn"])
    assert utc_now() + timedelta(minutes=4) < due <= utc_now() + timedelta(minutes=5)


def test_log_endpoints_need_their_privileges(configured, api):
    member = configured.ann
    status, _ = api.get(f"/api/v1/en_US/connector/email-to-post/{configured.garden}/log", member)
    assert status == 403
    status, _ = api.get("/api/v1/en_US/connector/email-to-comment/log", configured.admin)
    assert status == 403
    status, body = api.get(
        "/api/v1/en_US/connector/email-to-comment/log", configured.users[0]["id"]
    )
    assert status == 200 and body["object"]["entries"] == []


def test_schedule_dispatches_due_mailboxes_in_one_message_and_sqs_function_polls(
    configured, client
):
    from chalicelib.aws import client as aws_client
    from chalicelib.clock import utc_now
    from chalicelib.jobs.mail_poll import dispatch
    from chalicelib.settings import get_settings

    configured.mailbox.deliver(mail("ann@example.org", "Via SQS", "queued"))
    # Saved settings make the mailbox due in 5 minutes: not before.
    assert dispatch(now=utc_now()) == 0
    assert dispatch(now=utc_now() + timedelta(minutes=5)) == 1
    sqs = aws_client("sqs")
    url = sqs.get_queue_url(QueueName=get_settings().mailbox_queue)["QueueUrl"]
    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    body = json.loads(message["Body"])
    # The dispatch's correlation id rides along, so the poll's log lines can be found from it.
    assert body == {
        "mailboxes": [f"post#{configured.garden}"],
        "dueBy": body["dueBy"],
        "correlationId": body["correlationId"],
    }
    assert isinstance(body["correlationId"], str) and body["correlationId"]
    event = client.events.generate_sqs_event(
        message_bodies=[message["Body"]], queue_name=get_settings().mailbox_queue
    )
    response = client.lambda_.invoke("poll-mailbox", event)
    assert response.payload == {"batchItemFailures": []}
    assert configured.mailbox.count() == 0


def test_scheduled_dispatch_through_app_wiring_sends_what_poll_now_made_due(
    configured, client, api
):
    def run_dispatch() -> object:
        return client.lambda_.invoke(
            "dispatch-mail-polls",
            client.events.generate_cw_event(
                source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
            ),
        ).payload

    assert run_dispatch() == 0
    path = f"/api/v1/en_US/connector/email-to-post/{configured.garden}/poll"
    assert api.post(path, configured.admin, {})[0] == 202
    assert run_dispatch() == 1


def test_email_to_comment_mailbox_through_settings(configured, api, mailbox, capsys):
    root = configured.users[0]["id"]
    settings = mailbox.api_settings()
    # Both connectors read the same test mailbox; the post one is switched off first.
    api.put(
        f"/api/v1/en_US/connector/email-to-post/{configured.garden}",
        configured.admin,
        {**settings, "isEnabled": False},
    )
    status, body = api.put("/api/v1/en_US/connector/email-to-comment", root, settings)
    assert status == 200, body
    mailbox.deliver(mail("ann@example.org", f"Re: {BASE}/garden/hello", "Nice one"))
    main(["poll-mail"])
    assert "comments: seen 1, posted 0, commented 1" in capsys.readouterr().out
    status, body = api.get("/api/v1/en_US/connector/email-to-comment/log", root)
    [entry] = body["object"]["entries"]
    assert entry["status"] == "commented" and entry["post"]["id"] == configured.hello
    status, comments = api.get(f"/api/v1/en_US/post/{configured.hello}/comments", root)
    assert [c["id"] for c in comments["object"]["comments"]] == [entry["commentId"]]


# --- a mailbox that cannot be polled is visible: lastError, the exit status, a metric ---------


def _emf_lines(text: str, metric: str) -> list[dict]:
    from tests.support.emf import emf, json_lines

    return emf(json_lines(text), metric)


def test_closed_port_and_wrong_password_show_last_error_until_a_good_poll(
    configured, api, mailbox, capsys, monkeypatch
):
    from tests.support.running import free_port

    c = configured
    root = c.users[0]["id"]
    post_path = f"/api/v1/en_US/connector/email-to-post/{c.garden}"
    comment_path = "/api/v1/en_US/connector/email-to-comment"
    good = mailbox.api_settings()
    wrong_password = "wrong-" + mailbox.password
    assert api.put(post_path, c.admin, {**good, "serverPort": free_port()})[0] == 200
    assert api.put(comment_path, root, {**good, "serverPassword": wrong_password})[0] == 200
    # EMF lines are written only in Lambda.
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-PollMailbox")
    capsys.readouterr()

    assert main(["poll-mail"]) == 1
    out, err = capsys.readouterr()
    # One line each, on stderr, naming the mailbox as people do: said once (issue 51).
    failures = [line for line in err.splitlines() if not line.startswith("{")]
    assert len(failures) == 2, err
    assert any(line.startswith("Garden (garden): error: Could not connect") for line in failures)
    assert any(line.startswith("comments: error: ") for line in failures)
    people_lines = [line for line in (out + err).splitlines() if not line.startswith("{")]
    assert sum("Could not connect" in line for line in people_lines) == 1, out + err
    assert f"post#{c.garden}" not in "\n".join(people_lines)
    reasons = {
        m["Reason"]: value(m, "MailboxPollFailed") for m in _emf_lines(out, "MailboxPollFailed")
    }
    assert reasons == {"connection": 1, "login": 1}

    post = api.get(post_path, c.admin)[1]["object"]
    comment = api.get(f"{comment_path}/{c.garden}", root)[1]["object"]
    assert post["lastProcessed"] is None and comment["lastProcessed"] is None
    assert post["lastError"]["on"].endswith("Z")
    assert post["lastError"]["message"].startswith("Could not connect to the mail server")
    assert comment["lastError"]["message"].startswith(
        "The mail server refused the user name or password"
    )
    assert wrong_password not in json.dumps(comment["lastError"])
    assert wrong_password not in err and wrong_password not in out

    assert api.put(post_path, c.admin, good)[0] == 200
    assert api.put(comment_path, root, good)[0] == 200
    assert main(["poll-mail"]) == 0
    for path, user in ((post_path, c.admin), (f"{comment_path}/{c.garden}", root)):
        settings = api.get(path, user)[1]["object"]
        assert settings["lastError"] is None and settings["lastProcessed"] is not None


def test_a_failed_poll_is_one_line_on_a_terminal_naming_the_group(configured, api, capsys):
    """Issue 51: the CLI said a failed poll three times (its line, a log warning, the failure
    list) and named the mailbox `post#<uuid>`."""
    from tests.support.running import free_port

    c = configured
    closed = {**c.mailbox.api_settings(), "serverPort": free_port()}
    assert api.put(f"/api/v1/en_US/connector/email-to-post/{c.garden}", c.admin, closed)[0] == 200
    capsys.readouterr()

    assert main(["poll-mail"]) == 1

    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.splitlines()
    assert line.startswith("Garden (garden): error: Could not connect to the mail server"), err


def test_a_mailbox_that_refuses_is_done_with_and_backs_off_while_the_other_is_polled(
    configured, api, client
):
    from chalicelib.clock import utc_now
    from chalicelib.settings import get_settings
    from tests.support.running import free_port

    c = configured
    configured.mailbox.deliver(mail("ann@example.org", "Still imported", "x"))
    root = c.users[0]["id"]
    closed = {
        "serverName": "127.0.0.1",
        "serverPort": free_port(),
        "serverUsername": "nobody",
        "serverPassword": "irrelevant",
        "isEnabled": True,
        "isSSL": False,
        "deleteProcessed": False,
    }
    assert api.put("/api/v1/en_US/connector/email-to-comment", root, closed)[0] == 200
    event = client.events.generate_sqs_event(
        message_bodies=[json.dumps({"mailboxes": ["comment#system", f"post#{c.garden}"]})],
        queue_name=get_settings().mailbox_queue,
    )
    before = utc_now()
    response = client.lambda_.invoke("poll-mailbox", event)
    # The mailbox's own failure is not the platform's: never delivered again.
    assert response.payload == {"batchItemFailures": []}
    assert configured.mailbox.count() == 0  # the good mailbox's mail was imported and deleted
    bad = api.get(f"/api/v1/en_US/connector/email-to-comment/{c.garden}", root)[1]["object"]
    assert bad["lastError"]["message"].startswith("Could not connect to the mail server")
    next_poll = datetime.fromisoformat(bad["nextPollOn"].replace("Z", "+00:00"))
    assert next_poll >= before + timedelta(minutes=30)
    good = api.get(f"/api/v1/en_US/connector/email-to-post/{c.garden}", c.admin)[1]["object"]
    assert good["lastError"] is None and good["lastProcessed"] is not None
    next_good = datetime.fromisoformat(good["nextPollOn"].replace("Z", "+00:00"))
    assert before + timedelta(minutes=5) <= next_good < before + timedelta(minutes=6)


def test_a_platform_fault_redelivers_the_message_and_the_retry_skips_what_was_polled(
    configured, api, dovecot
):
    """KMS throttles the second mailbox's password: the message fails; delivered again, the
    mailbox polled the first time is no longer due and is left alone."""
    from chalicelib import secrets
    from chalicelib.aws import client as aws_client
    from chalicelib.clock import utc_now
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.mail_poll import poll_from_queue
    from chalicelib.services.poll_schedule import dispatch_horizon
    from chalicelib.store.base import sort_moment

    c = configured
    root = c.users[0]["id"]
    other = f"other{uuid.uuid4().hex[:6]}"
    dovecot.add_user(other, "other-password")
    settings = {
        **c.mailbox.api_settings(),
        "serverUsername": other,
        "serverPassword": "other-password",
    }
    assert api.put("/api/v1/en_US/connector/email-to-comment", root, settings)[0] == 200
    # Both due now, as a dispatch finds them.
    assert api.post("/api/v1/en_US/connector/email-to-comment/poll", root, {})[0] == 202
    assert api.post(f"/api/v1/en_US/connector/email-to-post/{c.garden}/poll", c.admin, {})[0] == 202
    c.mailbox.deliver(mail("ann@example.org", "Imported once", "x"))
    secrets.forget()
    kms = aws_client("kms")
    throttled: list[str] = []

    class Refused:
        status_code = 400

    def throttle(params: dict, **_: object) -> object:
        sent = json.loads(params["body"])  # the request as botocore serialised it
        if sent.get("EncryptionContext", {}).get("agora:scope") != "system":
            return None
        throttled.append("Decrypt")
        return Refused(), {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}

    kms.meta.events.register_first("before-call.kms.Decrypt", throttle)
    body = json.dumps(
        {
            "mailboxes": [f"post#{c.garden}", "comment#system"],
            "dueBy": sort_moment(dispatch_horizon(utc_now())),
        }
    )
    try:
        with pytest.raises(Exception, match="comment#system"):
            poll_from_queue(body, Deadline.unbounded())
    finally:
        kms.meta.events.unregister("before-call.kms.Decrypt", throttle)
    assert throttled
    lines = poll_from_queue(body, Deadline.unbounded())
    assert f"post#{c.garden}: not due" in lines
    assert "comment#system: seen 0" in lines
