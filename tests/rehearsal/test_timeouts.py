"""The rehearsal ends an invocation at its time, as Lambda does: an answer not given within the
time the context states is Lambda's timeout error (Sandbox.Timedout, "Task timed out after …"),
the runtime is killed, and the next invocation starts a new one (its init again). A function
overrunning its time here fails as it would on AWS, instead of passing on a patient harness.

Tried with a tiny handler of its own (its code beside the runtime, as Lambda runs a zip's): it
sleeps as long as its event says, and answers which execution environment ran it."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.rehearsal import triggers
from tests.rehearsal.lambda_service import GRACE_S, Invocation, LambdaFunction
from tests.rehearsal.stage import lambda_runtime
from tests.support.running import this_clock

SLEEPY = """
import os
import time

STARTED = os.getpid()  # the init: once per execution environment


def handler(event, context):
    time.sleep(event["sleep_s"])
    return {"environment": STARTED, "remaining_ms": context.get_remaining_time_in_millis()}
"""
TIMEOUT_S = 60  # the function's configured timeout: far past anything waited for here
REMAINING_MS = 1000  # the time its context states, which the invocation must keep to


@pytest.fixture
def sleepy(tmp_path: Path):
    root, runtime = tmp_path / "code", tmp_path / "runtime"
    root.mkdir()
    (root / "sleepy.py").write_text(SLEEPY)
    lambda_runtime(runtime)  # botocore: the runtime records the AWS calls through it
    env = {
        "_HANDLER": "sleepy.handler",
        "AWS_LAMBDA_FUNCTION_NAME": "agora-dev-Sleepy",
        "AWS_LAMBDA_FUNCTION_VERSION": "1",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/agora-dev-Sleepy",
        "AWS_LAMBDA_LOG_STREAM_NAME": f"{datetime.now(UTC):%Y/%m/%d}/[1]sleepy",
        "AWS_REGION": "us-east-1",
        "PATH": "/usr/bin:/bin",
        **this_clock(),  # the test's clock, as every process of the rehearsal has
    }
    function = LambdaFunction("Sleepy", env, TIMEOUT_S, root, runtime, tmp_path / "Sleepy.log")
    try:
        yield function
    finally:
        function.stop()


def test_an_invocation_past_its_time_is_lambdas_timeout_and_the_next_starts_a_new_runtime(sleepy):
    warm = sleepy.invoke({"sleep_s": 0})
    assert warm.error is None and warm.result["remaining_ms"] > 0.9 * TIMEOUT_S * 1000

    started = time.monotonic()
    late = sleepy.invoke({"sleep_s": REMAINING_MS / 1000 + 30}, remaining_ms=REMAINING_MS)
    took = time.monotonic() - started
    # Ended at its time, not when the handler gave up: a bound far below the handler's 31 s and
    # the old harness's timeout + 30 s, loose enough for a loaded machine.
    assert REMAINING_MS / 1000 <= took < REMAINING_MS / 1000 + GRACE_S + 10, took
    assert late.result is None
    assert late.error is not None and late.error["errorType"] == "Sandbox.Timedout", late.error
    message = late.error["errorMessage"]
    assert message.startswith("RequestId: ") and message.endswith(
        f"Error: Task timed out after {TIMEOUT_S:.2f} seconds"
    ), message
    [timed_out_line] = [line for line in late.log.splitlines() if "Task timed out" in line]
    assert timed_out_line.split()[1] == message.split()[1]  # the request's id, as Lambda logs it

    again = sleepy.invoke({"sleep_s": 0})
    assert again.error is None, again.log
    assert again.result["environment"] != warm.result["environment"]  # a new runtime, inited
    assert sleepy.inits == 2


def test_an_sqs_batch_whose_run_failed_or_timed_out_returns_to_the_queue_whole(stage):
    """The SQS mapping deletes nothing of a batch whose invocation failed, a timeout as any other
    error (the batch is received again once its visibility timeout passes); only an answer's
    batchItemFailures spare single messages."""
    queue = triggers.queue_of(stage, "PollMailbox")
    triggers.send(stage, "PollMailbox", ["a poll the run's end cut off"])
    event, sqs = triggers.sqs_batch(stage, "PollMailbox")
    [record] = event["Records"]
    cut_off = Invocation(error={"errorType": "Sandbox.Timedout", "errorMessage": "…"})
    assert triggers.settle(sqs, queue, event, cut_off) == [record["messageId"]]
    # Still on the queue: received again once it is visible (made visible at once here).
    stage.aws("sqs").change_message_visibility(
        QueueUrl=queue, ReceiptHandle=record["receiptHandle"], VisibilityTimeout=0
    )
    again, _ = triggers.sqs_batch(stage, "PollMailbox")
    assert [r["messageId"] for r in again["Records"]] == [record["messageId"]]
    assert triggers.settle(sqs, queue, again, Invocation(result={"batchItemFailures": []})) == []
    assert "Messages" not in stage.aws("sqs").receive_message(QueueUrl=queue, WaitTimeSeconds=0)


def test_a_scheduled_run_that_keeps_timing_out_is_retried_then_sent_to_its_on_failure_queue(
    stage, sleepy
):
    """EventBridge invokes asynchronously: a run cut off at its time is retried as any failed run
    (PurgeComments: MaximumRetryAttempts 2), each retry in a new runtime, and the last one's
    timeout is what its on-failure record carries. Run here by the tiny handler in
    PurgeComments' place: no packaged function can be made to overrun at will."""
    event = triggers.schedule(stage, "PurgeComments")
    runs = triggers.invoked_async(
        stage,
        "PurgeComments",
        event,
        run=lambda: sleepy.invoke({"sleep_s": 30}, remaining_ms=REMAINING_MS),
    )
    assert [r.error["errorType"] for r in runs if r.error] == ["Sandbox.Timedout"] * 3
    assert sleepy.inits == 3
    operator = stage.aws("sqs")
    destination = triggers.on_failure_destinations(stage)["PurgeComments"]
    url = operator.get_queue_url(QueueName=destination.rsplit(":", 1)[1])["QueueUrl"]
    [message] = operator.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    operator.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    record = json.loads(message["Body"])
    assert record["requestContext"]["approximateInvokeCount"] == 3
    assert record["requestPayload"] == event
    assert record["responsePayload"] == runs[-1].error
