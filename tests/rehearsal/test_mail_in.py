"""Mail in as AWS runs it: the schedule queues the due mailboxes, the SQS-triggered poll reads
them. A reply by mail to the comments mailbox carries a reply key, which the poll checks with
the token secret: its role and environment must give it that secret (issue 57: they did not, and
every reply failed three times and was quarantined)."""

from __future__ import annotations

import json

from tests.rehearsal import triggers
from tests.rehearsal.lambda_service import alarm_reads


def reply(sender: str, to: str, text: str) -> bytes:
    return (
        f"From: {sender}\r\nTo: {to}\r\nSubject: Re: welcome\r\n"
        f"Message-ID: <{abs(hash(text))}@agora.example>\r\n\r\n{text}\r\n"
    ).encode()


def test_a_reply_by_mail_is_polled_and_becomes_a_comment(stage):
    text = "Glad to be here, thanks for the welcome."
    stage.mailbox.deliver(reply("sam@agora.example", stage.world["reply_to"], text))

    dispatched = stage.invoke("DispatchMailPolls", triggers.schedule(stage, "DispatchMailPolls"))
    assert dispatched.error is None, dispatched.log[-3000:]
    assert dispatched.result == 1  # the comments mailbox, due since the operator's "poll now"

    event, sqs = triggers.sqs_batch(stage, "PollMailbox")
    polled = stage.invoke("PollMailbox", event)
    assert polled.error is None, polled.log[-3000:]
    assert polled.result == {"batchItemFailures": []}, polled.log[-3000:]
    triggers.settle(sqs, triggers.queue_of(stage, "PollMailbox"), event, polled)
    assert stage.mailbox.count() == 0, polled.log[-3000:]
    stored = json.dumps(stage.aws("dynamodb").scan(TableName="agora-dev-comments")["Items"])
    assert "Glad to be here" in stored
    assert polled.metrics()["MailHandled"] == [1.0, 0.0]  # commented, failed
    # Filed as the mail-failed alarm reads them (the function's environment names the Stage).
    reads = alarm_reads(stage.template, "MailFailedAlarm")
    for written in polled.metric_dimensions()["MailHandled"]:
        assert {"name": "MailHandled", "dimensions": written} in reads, (written, reads)


def test_a_message_the_poll_cannot_read_is_reported_and_delivered_again(stage):
    triggers.unreadable_message_reported(stage, "PollMailbox", "not a poll message")
