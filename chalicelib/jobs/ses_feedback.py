"""SES bounce and complaint notifications, taken off the SQS queue that their SNS topic feeds.

`app.py`'s SQS-triggered function calls `handle_sqs_event` (Powertools' BatchProcessor: each
record on its own, and only the records that failed go back to the queue, as the partial batch
response `batchItemFailures`; the event source must report batch item failures). The tests and
`make run` call `handle_from_queue` with the bodies. A body is either SNS's envelope (a
subscription without raw message delivery), validated as such by Powertools Parser's
`SnsNotificationModel` before its `Message` is read, or, with raw message delivery (the stack's
subscription), the SES JSON itself. A body that is neither is logged and dropped: retrying it
cannot help. A failure to record a suppression (DynamoDB) fails that record alone.

Powertools' and Pydantic's parser models are imported at the first message, in this function
only: the other functions' cold starts never pay for them.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib import deps
from chalicelib.logs import get_logger

log = get_logger("jobs.ses_feedback")


def unwrap(body: str) -> dict[str, Any] | None:
    """The SES notification a body carries, or None when it carries none."""
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return None
    if isinstance(data, dict) and data.get("Type") == "Notification":
        from aws_lambda_powertools.utilities.parser import ValidationError, parse
        from aws_lambda_powertools.utilities.parser.models import SnsNotificationModel

        try:
            message = parse(event=data, model=SnsNotificationModel).Message
            data = json.loads(message) if isinstance(message, str) else None
        except (ValidationError, TypeError, ValueError):
            return None
    return data if isinstance(data, dict) else None


def handle_one(body: str, service: Any) -> int:
    """Record one body's notification; answers how many addresses it suppressed (-1: dropped)."""
    notification = unwrap(body)
    if notification is None:
        log.warning("not an SES notification; dropped", extra={"body": body[:200]})
        return -1
    return len(service.record(notification))


def handle_from_queue(bodies: list[str], *, service: Any = None) -> dict[str, int]:
    service = service or deps.suppression_service()
    suppressed = ignored = 0
    for body in bodies:
        count = handle_one(body, service)
        if count < 0:
            ignored += 1
        else:
            suppressed += count
    return {"suppressed": suppressed, "ignored": ignored}


def handle_sqs_event(
    event: dict[str, Any], context: Any = None, *, service: Any = None
) -> dict[str, Any]:
    """The SQS-triggered function: the partial batch response of the records that failed."""
    from aws_lambda_powertools.utilities.batch import (
        BatchProcessor,
        EventType,
        process_partial_response,
    )

    service = service or deps.suppression_service()
    processor = BatchProcessor(event_type=EventType.SQS)
    return dict(
        process_partial_response(
            event=event,
            record_handler=lambda record: handle_one(record.body, service),
            processor=processor,
            context=context,
        )
    )
