"""What follows a new post, as AWS runs it: the outbox's stream hands the post's record to
drain-outbox (read with its role, as the event source mapping reads it), which tells Sam at once
and keeps Pat's digest item (and writes back the noticeSent of a notice it cannot send); the daily schedule queues Pat's digest batch and deliver-digests
sends it."""

from __future__ import annotations

from tests.rehearsal import triggers
from tests.rehearsal.lambda_service import alarm_reads
from tests.rehearsal.test_notifications import sent_count
from tests.rehearsal.world import NOTICE_ENTRY


def test_a_new_post_is_told_at_once_and_in_the_days_digest(stage):
    before = sent_count(stage)
    event = triggers.stream_batch(stage, "DrainOutbox", "agora-dev-outbox")
    assert event["Records"], "the operator's post is in the outbox's stream"
    drained = stage.invoke("DrainOutbox", event)
    assert drained.error is None, drained.log[-3000:]
    assert drained.result == {"batchItemFailures": []}, drained.log[-3000:]
    assert sent_count(stage) > before  # Sam, at once
    assert drained.metrics()["ScheduledRunCompleted"] == [1.0]
    # Filed as the drain-silent alarm reads it (the function's environment names the Stage).
    [beat] = drained.metric_dimensions()["ScheduledRunCompleted"]
    reads = alarm_reads(stage.template, "DrainOutboxSilentAlarm")
    assert {"name": "ScheduledRunCompleted", "dimensions": beat} in reads
    # The stranger's notice, its address suppressed since: not sent, its entry says so (the
    # role's conditional write to the mail table), the operator's metric counts it.
    assert drained.metrics()["RejectionNoticeNotSent"] == [1.0]
    entry = stage.aws("dynamodb").get_item(
        TableName="agora-dev-mail",
        Key={"mailbox": {"S": "comment#system"}, "sk": {"S": f"entry#{NOTICE_ENTRY}"}},
    )["Item"]
    assert entry["status"]["S"] == "rejected" and entry["notice_sent"] == {"BOOL": False}

    queued = stage.invoke("SendDigests", triggers.schedule(stage, "SendDigests"))
    assert queued.error is None, queued.log[-3000:]
    assert queued.result == {"recipients": 1, "batches": 1}, queued.log[-3000:]
    assert "PurgeRunAgeDays" in queued.metrics()
    for alarm, name in (("SendDigestsHeartbeatAlarm", "ScheduledRunCompleted"),
                        ("PurgeCommentsHeartbeatAlarm", "PurgeRunAgeDays")):  # fmt: skip
        [written] = queued.metric_dimensions()[name]
        assert alarm_reads(stage.template, alarm) == [{"name": name, "dimensions": written}]

    told = sent_count(stage)
    triggers.handled_queue_batch(stage, "DeliverDigests")
    assert sent_count(stage) == told + 1  # Pat's digest


def test_a_stream_record_the_drain_cannot_read_fails_its_batch_there(stage):
    record = {
        "eventID": "unreadable",
        "eventName": "INSERT",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "Keys": {"id": {"S": "unreadable"}},
            "NewImage": {"id": {"S": "unreadable"}, "kind": {"S": "NoSuchEvent"}},
            "SequenceNumber": "999999999999999999999",
            "SizeBytes": 40,
            "StreamViewType": "NEW_IMAGE",
        },
        "eventSourceARN": stage.aws("dynamodb").describe_table(TableName="agora-dev-outbox")[
            "Table"
        ]["LatestStreamArn"],
    }
    drained = stage.invoke("DrainOutbox", {"Records": [record]})
    assert drained.error is None, drained.log[-3000:]
    assert drained.result == {"batchItemFailures": [{"itemIdentifier": "999999999999999999999"}]}


def test_a_digest_batch_that_cannot_be_read_is_delivered_again(stage):
    triggers.unreadable_message_reported(stage, "DeliverDigests", "not a digest batch")
