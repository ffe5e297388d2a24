"""Notification fan-out: an occurrence with many recipients is delivered in chunks through SQS.

- `deliver_from_queue`: the SQS-triggered function delivers each message's chunk; a chunk with a
  failed recipient raises, so SQS delivers the message again (what was told is not told twice).
- `drain_queue`: `make run` has no SQS trigger; its scheduler receives and delivers the messages,
  same code.

Not Powertools' BatchProcessor (ses-feedback uses it): the trigger's batch size is 1, so a raise
already is the partial batch response, and this function's cold start does not pay for importing
it. A larger batch would take it up as jobs/ses_feedback.py does.
"""

from __future__ import annotations

from typing import Any

from chalicelib import deps
from chalicelib.logs import get_logger

log = get_logger("jobs.notify")


def deliver_from_queue(bodies: list[str], *, service: Any = None) -> list[dict[str, int]]:
    from dataclasses import asdict

    from chalicelib.logs import invocation
    from chalicelib.services.notify import chunk_correlation, parse_chunk

    service = service or deps.notify_service()
    reports = []
    for body in bodies:
        event, recipients = parse_chunk(body)
        with invocation(correlation=chunk_correlation(body)):
            report = service.deliver(event, recipients)
        if report.failed:
            raise RuntimeError(f"{report.failed} notification(s) failed; the chunk is retried")
        reports.append(asdict(report))
    return reports


def drain_queue(*, max_messages: int = 1000, queue_name: str | None = None) -> int:
    """Receive and deliver queued chunks in this process; answers the number delivered."""
    from chalicelib.settings import get_settings

    queue_name = queue_name or get_settings().notify_queue
    from chalicelib.aws import client

    sqs = client("sqs")
    queue_url = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
    delivered = 0
    while delivered < max_messages:
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        ).get("Messages", [])
        if not messages:
            break
        for message in messages:
            try:
                deliver_from_queue([message["Body"]])
            except Exception:
                # Left on the queue: visible again after its timeout, for the next drain.
                log.exception("notification chunk failed")
                continue
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            delivered += 1
    return delivered
