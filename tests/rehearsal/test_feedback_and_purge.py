"""SES's bounces and complaints as AWS delivers them (SES publishes to the feedback topic, SNS
delivers to the queue raw, the queue triggers ses-feedback), and the monthly purge on its
schedule."""

from __future__ import annotations

import json

from tests.rehearsal import triggers


def test_a_permanent_bounce_suppresses_the_address_and_a_foreign_body_is_dropped(stage):
    bounce = {
        "notificationType": "Bounce",
        "bounce": {
            "bounceType": "Permanent",
            "bouncedRecipients": [{"emailAddress": "rita@agora.example", "action": "failed"}],
            "timestamp": triggers.aws_time(-60),
            "feedbackId": "feedback",
        },
        "mail": {"messageId": "sent", "destination": ["rita@agora.example"]},
    }
    sns = stage.aws("sns")
    [topic] = [t["TopicArn"] for t in sns.list_topics()["Topics"] if t["TopicArn"].endswith(":agora-dev-ses-feedback")]  # fmt: skip
    for body in (json.dumps(bounce), "not json"):
        sns.publish(TopicArn=topic, Message=body)
    event, sqs = triggers.sqs_batch(stage, "SesFeedback")
    assert sorted(r["body"] for r in event["Records"]) == sorted([json.dumps(bounce), "not json"])
    handled = stage.invoke("SesFeedback", event)
    assert handled.error is None, handled.log[-3000:]
    # The foreign body is logged and dropped: delivered again, it would fail again.
    assert handled.result == {"batchItemFailures": []}, handled.log[-3000:]
    triggers.settle(sqs, triggers.queue_of(stage, "SesFeedback"), event, handled)
    suppressed = stage.aws("dynamodb").scan(TableName="agora-dev-email-suppressions")["Items"]
    assert "rita@agora.example" in json.dumps(suppressed)


def test_the_monthly_purge_runs_on_its_schedule(stage):
    purged = stage.invoke("PurgeComments", triggers.schedule(stage, "PurgeComments"))
    assert purged.error is None, purged.log[-3000:]
    assert isinstance(purged.result, int)
    metrics = purged.metrics()
    assert metrics["CommentsPurged"] == [float(purged.result)]
    assert metrics["ScheduledRunCompleted"] == [1.0]
