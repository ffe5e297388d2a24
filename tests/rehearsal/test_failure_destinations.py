"""Lambda's own failure path: a schedule's invocation that failed its retries, and a stream batch
drain-outbox gave up on, go to their on-failure queue, sent by Lambda with the function's role
(infra/privileges.py `scheduled_failures`, `outbox_dead_letters`): each role may send there."""

from __future__ import annotations

import json

from tests.rehearsal import triggers


def test_a_failed_invocation_reaches_its_on_failure_queue_with_the_functions_role(stage):
    destinations = triggers.on_failure_destinations(stage)
    assert {"DispatchMailPolls", "PurgeComments", "SendDigests", "DrainOutbox"} <= set(destinations)
    operator = stage.aws("sqs")
    for function, destination in sorted(destinations.items()):
        record = triggers.failure_record(function, {"source": "aws.events"})
        # Lambda knows the queue by its ARN: it sends, and asks nothing else of SQS.
        url = operator.get_queue_url(QueueName=destination.rsplit(":", 1)[1])["QueueUrl"]
        stage.role_client(function, "sqs").send_message(
            QueueUrl=url, MessageBody=json.dumps(record)
        )
        [message] = operator.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        operator.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        arn = json.loads(message["Body"])["requestContext"]["functionArn"]
        assert arn.endswith(f"{function}:live"), function
