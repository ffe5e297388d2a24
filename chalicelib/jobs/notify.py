"""Notification fan-out: an occurrence with many recipients is delivered in chunks through SQS.

- `deliver_from_queue`: the SQS-triggered function delivers each message's chunk; a chunk with a
  failed recipient raises, so SQS delivers the message again (what was told is not told twice).
- `drain_queue`: `make run` has no SQS trigger; its scheduler receives and delivers the messages,
  same code.

Instant emails share `AGORA_MAIL_SEND_RATE` with every other sender (chalicelib/mail/outgoing.py),
ahead of the digests: each send takes the next free moment of the stack's one sending clock.

Not Powertools' BatchProcessor (ses-feedback uses it): the trigger's batch size is 1, so a raise
already is the partial batch response, and this function's cold start does not pay for importing
it. A larger batch would take it up as jobs/ses_feedback.py does.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from chalicelib import deps
from chalicelib.aws import client
from chalicelib.jobs.base import Deadline
from chalicelib.logs import get_logger, invocation
from chalicelib.settings import get_settings

if TYPE_CHECKING:
    from chalicelib.domain.ports.notify import Fanout
    from chalicelib.mail.outgoing import SendingRate
    from chalicelib.services.notify.delivery import NotifyService

log = get_logger("jobs.notify")

# The function that delivers the chunks (app.py), as the sending rate knows it (`SENDERS`).
WORKER = "deliver-notifications"
# Seconds of sending between two looks at the deadline.
STEP_SECONDS = 5


def deliver_from_queue(
    bodies: list[str],
    *,
    service: NotifyService | None = None,
    deadline: Deadline | None = None,
    pacer: SendingRate | None = None,
    requeue: Fanout | None = None,
) -> list[dict[str, int]]:
    """Deliver each chunk, its instant emails paced by the shared sending rate (`pacer`; a
    `service` given sends as it was built: `sending_service` builds it paced).

    The recipients go a few at a time; when the deadline comes before the chunk is done, the
    rest go back on the queue as a new chunk (the service's own fan-out queue, unless `requeue`
    says), and this one is done.
    """

    from chalicelib.services.notify.delivery import (
        DeliveryReport,
        chunk_body,
        chunk_correlation,
        parse_chunk,
    )

    pacer = pacer or deps.sending_rate(WORKER)
    service = service or sending_service(pacer)
    deadline = deadline or Deadline.unbounded()
    # As many recipients as the pacer lets through in a few seconds, between deadline checks.
    step = max(1, int(pacer.rate * STEP_SECONDS))
    reports = []
    for body in bodies:
        event, recipients = parse_chunk(body)
        report = DeliveryReport()
        with invocation(correlation=chunk_correlation(body)):
            for start in range(0, len(recipients), step):
                if start and deadline.expired():
                    rest = recipients[start:]
                    (requeue or service.fanout).send([chunk_body(event, rest)])
                    log.info("notification chunk split", extra={"requeued": len(rest)})
                    break
                part = service.deliver(event, recipients[start : start + step])
                for name, value in asdict(part).items():
                    setattr(report, name, getattr(report, name) + value)
        if report.failed:
            raise RuntimeError(f"{report.failed} notification(s) failed; the chunk is retried")
        reports.append(asdict(report))
    return reports


def sending_service(pacer: SendingRate) -> NotifyService:
    """The notifications as this function sends them: its mail paced by `pacer`."""
    return deps.notify_service(sender=WORKER, pacer=pacer)


def drain_queue(*, max_messages: int = 1000, queue_name: str | None = None) -> int:
    """Receive and deliver queued chunks in this process; answers the number delivered."""

    queue_name = queue_name or get_settings().notify_queue

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
