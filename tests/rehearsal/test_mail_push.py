"""Mail in by push as AWS runs it (CONTRACT §13): SES receiving asks mail-verdict first
(RequestResponse) whether a recipient is Agora's, stores the raw mail in the inbound bucket (its
S3 action), then invokes receive-mail (asynchronously), which reads it with its role and delivers
it: Sam's reply by mail to the comments address on the inbound domain becomes a comment."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from tests.rehearsal import triggers
from tests.rehearsal.test_mail_in import reply
from tests.support.mail_messages import ses_event


def sam() -> dict[str, str]:
    """Sam's mail as SES received it on the stage, a moment ago."""
    return {"source": "sam@agora.example", "timestamp": triggers.aws_time(-2)}


def test_the_verdict_takes_agoras_recipients_and_stops_the_others(stage):
    to_agora = stage.invoke(
        "MailVerdict", ses_event("v1", [stage.world["reply_to"]], "RequestResponse", **sam())
    )
    assert to_agora.error is None, to_agora.log[-3000:]
    assert to_agora.result == {"disposition": "CONTINUE"}
    elsewhere = stage.invoke(
        "MailVerdict",
        ses_event("v2", ["nobody@in.community.example.org"], "RequestResponse", **sam()),
    )
    assert elsewhere.result == {"disposition": "STOP_RULE"}


def test_a_pushed_reply_is_read_from_the_bucket_and_becomes_a_comment(stage):
    message_id = uuid.uuid4().hex
    bucket = triggers.inbound_bucket(stage)
    raw = reply("sam@agora.example", stage.world["reply_to"], "Pushed, not polled: see you there.")
    stage.aws("s3").put_object(Bucket=bucket, Key=f"inbound/{message_id}", Body=raw)
    received = stage.invoke(
        "ReceiveMail", ses_event(message_id, [stage.world["reply_to"]], "Event", **sam())
    )
    assert received.error is None, received.log[-3000:]
    assert "commented 1" in received.result, received.result
    stored = json.dumps(stage.aws("dynamodb").scan(TableName="agora-dev-comments")["Items"])
    assert "Pushed, not polled" in stored
    # The mail log says when SES received it (its event's timestamp): a moment ago, on the
    # clock the suite runs on (`make test-future` runs it years ahead), not a fixed date.
    entries = stage.aws("dynamodb").scan(TableName="agora-dev-mail")["Items"]
    said = str(abs(hash("Pushed, not polled: see you there.")))  # its Message-ID (`reply`)
    [entry] = [e for e in entries if said in e.get("message_id", {}).get("S", "")]
    when = datetime.fromisoformat(entry["received_on"]["S"].replace("Z", "+00:00"))
    assert abs(datetime.now(UTC) - when) < timedelta(minutes=10)


def test_a_pushed_mail_missing_from_the_bucket_fails_for_lambda_to_retry(stage):
    missing = stage.invoke(
        "ReceiveMail", ses_event(uuid.uuid4().hex, [stage.world["reply_to"]], "Event", **sam())
    )
    # An error: Lambda's asynchronous retries, then the inbound dead-letter queue.
    assert missing.error is not None and "NoSuchKey" in missing.error["errorMessage"]
