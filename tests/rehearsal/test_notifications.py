"""Notifications as AWS runs them: a chunk of recipients on the notification queue, delivered by
the SQS-triggered function with its own role; a chunk whose email can never be built (a post
title holding U+2028, issue 47) goes once to the dead-letter queue with the metric
`NotificationDeadLettered`, which must be a metric the function can emit in Lambda (issue 57: it
raised there, and the record was retried until its shard blocked)."""

from __future__ import annotations

import json

from tests.rehearsal import triggers


def sent_count(stage) -> int:
    return int(stage.aws("ses").get_send_quota()["SentLast24Hours"])


def test_a_chunk_of_recipients_is_told_by_mail(stage):
    before = sent_count(stage)
    triggers.send(stage, "DeliverNotifications", [stage.world["chunk"]])
    delivered = triggers.handled_queue_batch(stage, "DeliverNotifications")
    assert sent_count(stage) == before + 1  # Mia's email
    assert delivered.metrics()["NotificationsSent"] == [1.0]


def test_a_notification_that_cannot_be_built_is_dead_lettered_once(stage):
    before = sent_count(stage)
    triggers.send(stage, "DeliverNotifications", [stage.world["poison_chunk"]])
    delivered = triggers.handled_queue_batch(stage, "DeliverNotifications")
    assert sent_count(stage) == before
    assert delivered.metrics()["NotificationDeadLettered"] == [1.0]
    dead = stage.aws("sqs")
    url = dead.get_queue_url(QueueName="agora-dev-notification-jobs-dead")["QueueUrl"]
    [letter] = dead.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    dead.delete_message(QueueUrl=url, ReceiptHandle=letter["ReceiptHandle"])
    assert "cannot be built" in json.loads(letter["Body"])["reason"]
