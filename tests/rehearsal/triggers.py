"""The events each function's real trigger sends, made as the trigger makes them: EventBridge's
schedule, Lambda's SQS and DynamoDB Streams event source mappings (reading the queue or the
stream with the function's own role, as the mapping does), CodeDeploy's lifecycle hook."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.rehearsal.lambda_service import Invocation
from tests.rehearsal.stage import Stage
from tests.support.sam_stack import ACCOUNT, REGION, stream_records


def aws_time(later: float = 0.0, *, millis: bool = True) -> str:
    """The clock's time now (`later` seconds on), UTC, as AWS writes an event's: SES's and
    Lambda's with milliseconds, EventBridge's `time` in whole seconds (`millis` False). From the
    clock at run time, never a fixed date: `make test-future` runs this tier years ahead, and
    what an event says of its time (a pushed mail's receipt) is stored as it says it."""
    moment = datetime.now(UTC) + timedelta(seconds=later)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (
        f".{moment.microsecond // 1000:03d}Z" if millis else "Z"
    )


def schedule(stage: Stage, function: str) -> dict[str, Any]:
    """EventBridge's event for the function's schedule rule."""
    [rule] = [
        name
        for name, r in stage.template["Resources"].items()
        if r["Type"] == "AWS::Events::Rule"
        and any(
            t["Arn"] == {"Fn::GetAtt": [function, "Arn"]} or function in str(t["Arn"])
            for t in r["Properties"]["Targets"]
        )  # fmt: skip
    ]
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": aws_time(millis=False),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/agora-dev-{rule}"],
        "detail": {},
    }


def _sqs_record(queue_arn: str, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {
            "ApproximateReceiveCount": message.get("Attributes", {}).get(
                "ApproximateReceiveCount", "1"
            ),
            "SentTimestamp": message.get("Attributes", {}).get("SentTimestamp", "0"),
            "SenderId": ACCOUNT,
            "ApproximateFirstReceiveTimestamp": "0",
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(message["Body"].encode()).hexdigest(),  # noqa: S324 - SQS's
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


def queue_of(stage: Stage, function: str) -> str:
    """The URL of the queue whose event source mapping triggers the function."""
    [mapping] = [
        r["Properties"]
        for r in stage.template["Resources"].values()
        if r["Type"] == "AWS::Lambda::EventSourceMapping"
        and r["Properties"]["FunctionName"] in ({"Ref": function}, {"Ref": f"{function}Aliaslive"})
    ]
    arn = stage.resolver.resolve(mapping["EventSourceArn"])
    return stage.aws("sqs").get_queue_url(QueueName=arn.rsplit(":", 1)[1])["QueueUrl"]


def send(stage: Stage, function: str, bodies: list[str]) -> None:
    """Messages put on the function's queue (by whoever sends them: the operator here)."""
    sqs = stage.aws("sqs")
    for body in bodies:
        sqs.send_message(QueueUrl=queue_of(stage, function), MessageBody=body)


def sqs_batch(stage: Stage, function: str, size: int = 10) -> tuple[dict[str, Any], Any]:
    """The batch Lambda's SQS mapping receives with the function's role, as its event, and that
    client (to delete what succeeded, as the mapping does)."""
    url = queue_of(stage, function)
    sqs = stage.role_client(function, "sqs")
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    messages = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=size, AttributeNames=["All"]
    ).get("Messages", [])
    assert messages, f"nothing on {url} for {function}"
    return {"Records": [_sqs_record(arn, m) for m in messages]}, sqs


def settle(sqs: Any, function_queue: str, event: dict[str, Any], done: Invocation) -> list[str]:
    """What the mapping does with the invocation's outcome: deletes each message not reported
    as failed; of an invocation that failed (an error, a timeout as any other), nothing (the
    whole batch is received again once its visibility timeout passes). The ids left."""
    if done.error is not None:
        return [record["messageId"] for record in event["Records"]]
    failed = {f["itemIdentifier"] for f in (done.result or {}).get("batchItemFailures", [])}
    for record in event["Records"]:
        if record["messageId"] not in failed:
            sqs.delete_message(QueueUrl=function_queue, ReceiptHandle=record["receiptHandle"])
    return [record["messageId"] for record in event["Records"] if record["messageId"] in failed]


def discard(sqs: Any, function_queue: str, event: dict[str, Any]) -> None:
    """The batch removed from the queue by the test (a message left for its retries and its
    dead-letter queue, which the test does not wait for)."""
    for record in event["Records"]:
        sqs.delete_message(QueueUrl=function_queue, ReceiptHandle=record["receiptHandle"])


def unreadable_message_reported(stage: Stage, function: str, body: str) -> None:
    """A message the function cannot read, in a batch of its own: the function answers it as the
    batch's one failed item (the SQS mapping leaves it on the queue, for its retries and then its
    dead-letter queue), and the test removes it."""
    send(stage, function, [body])
    event, sqs = sqs_batch(stage, function)
    done = stage.invoke(function, event)
    assert done.error is None, done.log[-3000:]
    [record] = event["Records"]
    assert done.result == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    discard(sqs, queue_of(stage, function), event)


def handled_queue_batch(stage: Stage, function: str) -> Invocation:
    """The function's queue batch handled as its SQS mapping hands it over, with no item failed
    (asserted), and what succeeded deleted from the queue as the mapping deletes it."""
    event, sqs = sqs_batch(stage, function)
    handled = stage.invoke(function, event)
    assert handled.error is None, handled.log[-3000:]
    assert handled.result == {"batchItemFailures": []}, handled.log[-3000:]
    settle(sqs, queue_of(stage, function), event, handled)
    return handled


def stream_batch(stage: Stage, function: str, table: str) -> dict[str, Any]:
    """The new records of the table's stream, read with the function's role as Lambda's
    DynamoDB Streams mapping reads them (from the start: each test drains what it made)."""
    streams = stage.role_client(function, "dynamodbstreams")
    arn, read = stream_records(stage.aws("dynamodb"), streams, table)
    records = []
    for record in read:
        dynamodb = dict(record["dynamodb"])
        if "ApproximateCreationDateTime" in dynamodb:
            dynamodb["ApproximateCreationDateTime"] = int(
                dynamodb["ApproximateCreationDateTime"].timestamp()
            )
        records.append({**record, "dynamodb": dynamodb, "eventSourceARN": arn})
    return {"Records": records}


def codedeploy_hook() -> dict[str, Any]:
    """CodeDeploy's PreTraffic lifecycle event."""
    return {
        "DeploymentId": "d-REHEARSAL1",
        "LifecycleEventHookExecutionId": "eyJlbmNyeXB0ZWREYXRhIjoicmVoZWFyc2FsIn0=",
    }


def api_call(
    method: str,
    path: str,
    resource: str | None = None,
    parameters: dict[str, str] | None = None,
    body: dict[str, Any] | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """API Gateway's proxy event for one call to the API's stage."""
    headers = {"Accept": "application/json", "Host": "api.community.example.org"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if token is not None:
        headers["X-Auth"] = token
    resource = resource or path
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": parameters,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": resource,
            "httpMethod": method,
            "path": f"/api{path}",
            "stage": "api",
            "requestId": str(uuid.uuid4()),
            "accountId": ACCOUNT,
            "identity": {"sourceIp": "203.0.113.7", "userAgent": "rehearsal"},
        },
        "body": None if body is None else json.dumps(body),
        "isBase64Encoded": False,
    }


def _on_failure_configs(stage: Stage) -> dict[str, dict[str, Any]]:
    """function -> the properties of what sends its failed invocations on: a schedule's
    EventInvokeConfig, a stream mapping (its DestinationConfig.OnFailure set)."""
    found = {}
    for resource in stage.template["Resources"].values():
        properties = resource.get("Properties", {})
        destination = properties.get("DestinationConfig", {}).get("OnFailure", {})
        if resource["Type"] in ("AWS::Lambda::EventInvokeConfig", "AWS::Lambda::EventSourceMapping") and destination:  # fmt: skip
            found[properties["FunctionName"]["Ref"].removesuffix("Aliaslive")] = properties
    return found


def on_failure_destinations(stage: Stage) -> dict[str, str]:
    """function -> the queue Lambda sends a failed invocation's record to: a schedule's
    EventInvokeConfig, a stream mapping's DestinationConfig (both with the function's role)."""
    return {
        function: stage.resolver.resolve(
            properties["DestinationConfig"]["OnFailure"]["Destination"]
        )
        for function, properties in _on_failure_configs(stage).items()
    }


def failure_record(
    function: str,
    event: dict[str, Any],
    error: dict[str, str] | None = None,
    invoked: int = 3,
) -> dict[str, Any]:
    """What Lambda sends an on-failure destination after the last retry of an invocation
    (`invoked` times in all), whose last answer was `error`."""
    arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:agora-dev-{function}:live"
    return {
        "version": "1.0",
        "timestamp": aws_time(),
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": arn,
            "condition": "RetriesExhausted",
            "approximateInvokeCount": invoked,
        },
        "requestPayload": event,
        "responseContext": {
            "statusCode": 200,
            "executedVersion": "1",
            "functionError": "Unhandled",
        },
        "responsePayload": error or {"errorType": "RuntimeError", "errorMessage": "the run failed"},
    }


def invoked_async(
    stage: Stage, function: str, event: dict[str, Any], run: Callable[[], Invocation] | None = None
) -> list[Invocation]:
    """Lambda's asynchronous invocation (EventBridge's schedule): `run` (the function's
    invocation with `event`, unless given), again while it fails (an error, a timeout as any
    other) up to the function's MaximumRetryAttempts, and after the last failure its record sent
    to its on-failure destination with the function's role. Each invocation, in order."""
    config = _on_failure_configs(stage).get(function, {})
    run = run or (lambda: stage.invoke(function, event))
    done = [run()]
    while done[-1].error is not None and len(done) <= config.get("MaximumRetryAttempts", 2):
        done.append(run())
    if done[-1].error is not None and config:
        destination = on_failure_destinations(stage)[function]
        # Lambda knows the queue by its ARN: it sends, and asks nothing else of SQS.
        url = stage.aws("sqs").get_queue_url(QueueName=destination.rsplit(":", 1)[1])["QueueUrl"]
        record = failure_record(function, event, done[-1].error, len(done))
        stage.role_client(function, "sqs").send_message(
            QueueUrl=url, MessageBody=json.dumps(record)
        )
    return done


def inbound_bucket(stage: Stage) -> str:
    """The bucket SES receiving's S3 action writes each mail to."""
    [bucket] = [n for n, r in stage.template["Resources"].items() if r["Type"] == "AWS::S3::Bucket"]
    return str(stage.resolver.name(bucket))
