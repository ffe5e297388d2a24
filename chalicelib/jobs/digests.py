"""The daily digest job (CONTRACT §3 `send-digests`), fanned out.

In AWS the daily schedule (`send-digests`) only lists the users with queued items and puts them
on the digest queue in batches (`enqueue_daily_digests`); the queue's function (`deliver-digests`)
sends each batch (`deliver_batch`), paced by `AGORA_MAIL_SEND_RATE` after any instant mail
(chalicelib/mail/outgoing.py), so 100,000 digests take about two hours of two workers instead of
stopping at one function's 15-minute limit. A batch is the day's: its users get the digest of the
day it was queued, once (the claim per user and day, store/notifications.py), however often SQS
delivers it. A batch still on the queue when its day is over is not sent: its users are counted
as `DigestsLeftOver` (alarmed) and their items wait for the next day's digest.

`python -m chalicelib.cli send-digests`, `make run`'s scheduler and the tests send the day in this
process (`run_daily_digests`) with the same batches and the same `send_batch`, paced the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from chalicelib import deps, metrics
from chalicelib.aws import QueueSender
from chalicelib.clock import utc_now
from chalicelib.jobs.base import Deadline, PartsFailed, require_token_secret
from chalicelib.logs import correlation_id, get_logger
from chalicelib.services.notify.digests import BATCH_SIZE, DigestRun
from chalicelib.settings import get_settings

if TYPE_CHECKING:
    from chalicelib.domain.ports.notify import Fanout
    from chalicelib.services.notify.digests import DigestRun, DigestService

log = get_logger("jobs.digests")

# The function that sends the batches (app.py), as the sending rate knows it (`SENDERS`).
WORKER = "deliver-digests"
# Users whose digests one execution prepares side by side (each waits on DynamoDB and SES; the
# pacer keeps the sends themselves at the worker's rate).
SENDING_THREADS = 4


# --- the batches on the queue ---------------------------------------------------------------------


def batch_body(day: str, user_ids: list[str]) -> str:
    return json.dumps({"day": day, "users": user_ids, "correlationId": correlation_id()})


def parse_batch(body: str) -> tuple[str, list[str]]:
    data = json.loads(body)
    day, users = data["day"], data["users"]
    if not isinstance(day, str) or not isinstance(users, list):
        raise ValueError("a digest batch has a day and a list of users")
    return day, [str(user) for user in users]


def _service(now: datetime | None, deadline: Deadline | None = None) -> DigestService:
    """`now` fixes the clock (tests); `deadline`: this function's, its mail then paced (unpaced
    without one)."""
    return deps.digest_service(
        clock=(lambda: now) if now is not None else utc_now,
        sender=WORKER if deadline is not None else None,
        expired=deadline.expired if deadline is not None else None,
    )


def sending_service(deadline: Deadline, now: datetime | None = None) -> DigestService:
    """The digests as this function sends them: its mail paced by the shared rate, waiting no
    longer than `deadline` behind instant mail; `now` fixes the clock (tests)."""
    return _service(now, deadline)


def _queue() -> QueueSender:
    return QueueSender(get_settings().digest_queue, "digest batch(es)")


# --- the daily schedule: the day's users onto the queue -------------------------------------------


@dataclass
class DigestFanout:
    day: str
    recipients: int = 0
    batches: int = 0
    stopped_early: bool = False


def enqueue_daily_digests(
    deadline: Deadline,
    *,
    now: datetime | None = None,
    service: DigestService | None = None,
    queue: Fanout | None = None,
    batch_size: int | None = None,
) -> DigestFanout:
    """Put today's digest recipients on the digest queue in batches; answers what it queued.
    Sent ten batches a request as they are read, so a run stopped at its deadline (counted as
    stopped early) has queued everyone before that point; a second run the same day queues the
    users again, and the claim per user and day sends each digest once."""

    service = service or _service(now)
    queue = queue or _queue()
    fanout = DigestFanout(day=service.today())
    bodies: list[str] = []
    for batch in service.batches(batch_size or BATCH_SIZE):
        if deadline.expired():
            fanout.stopped_early = True
            break
        bodies.append(batch_body(fanout.day, batch))
        fanout.recipients += len(batch)
        fanout.batches += 1
        if len(bodies) == 10:
            queue.send(bodies)
            bodies = []
    if bodies:
        queue.send(bodies)
    # At best, the whole rate: nothing else to send.
    rate = get_settings().mail_send_rate
    started = service.clock()
    seconds_left = 86_400 - (started.hour * 3600 + started.minute * 60 + started.second)
    log.info(
        "daily digests queued",
        extra={"day": fanout.day, "recipients": fanout.recipients, "batches": fanout.batches},
    )
    if fanout.recipients / rate > seconds_left:
        # The alarm (DigestsLeftOver) fires when the batches are found late; this says it early.
        log.warning(
            "the day's digests cannot all be sent today at the sending rate",
            extra={"recipients": fanout.recipients, "ratePerSecond": rate},
        )
    metrics.emit("DigestRunsStoppedEarly", int(fanout.stopped_early))
    return fanout


def scheduled_daily_digests(deadline: Deadline) -> dict[str, int]:
    """The scheduled function (AWS): queues the day's batches for `deliver-digests`."""
    fanout = enqueue_daily_digests(deadline)
    return {"recipients": fanout.recipients, "batches": fanout.batches}


# --- the queue's function: one batch ----------------------------------------------------------------


def deliver_batch(
    body: str,
    deadline: Deadline,
    *,
    service: DigestService | None = None,
    queue: Fanout | None = None,
    now: datetime | None = None,
    threads: int = SENDING_THREADS,
) -> DigestRun:
    """Send one batch's digests at the pace of the shared rate. Users the deadline leaves (it
    may come while instant mail has the rate) go back on the queue as a new batch of the same
    day; a user whose digest failed fails the message, after the others were sent, so SQS
    delivers it again (those sent are skipped: one per day). `threads`: users prepared side by
    side (`make simulate` runs one). A `service` given sends as it was built (`sending_service`
    builds it paced)."""

    day, users = parse_batch(body)
    service = service or sending_service(deadline, now)
    if service.today() > day:
        # Its day is over: tomorrow's digest carries these users' items.
        log.warning("digest batch of a past day left over", extra={"day": day, "users": len(users)})
        metrics.emit("DigestsLeftOver", len(users))
        return DigestRun(left=users)
    run = service.send_batch(users, day, deadline.expired, threads=threads)
    if run.left:
        (queue or _queue()).send([batch_body(day, run.left)])
    log.info(
        "digest batch sent",
        extra={"day": day, "sent": run.sent, "skipped": run.skipped, "failed": run.failed,
               "requeued": len(run.left)},
    )  # fmt: skip
    metrics.emit("DigestsFailed", run.failed)
    if run.failures:
        raise PartsFailed(run.failures)
    return run


# --- in this process: the CLI, make run, the tests ----------------------------------------------


def run_daily_digests(deadline: Deadline, *, now: datetime | None = None) -> DigestRun:
    """Send today's digests here; answers the run (sent, failed with one line each, stopped early
    with the users it did not reach).

    Stops once `deadline` expires and leaves the other users' items for the next run. `now` fixes
    the clock, and with it the day (tests). Refuses to start without the token secret (every
    digest carries a signed unsubscribe link).
    """

    require_token_secret()
    service = sending_service(deadline, now)
    run = service.send_all(deadline.expired, threads=SENDING_THREADS)
    log.info(
        "daily digests",
        extra={"sent": run.sent, "failed": run.failed, "stoppedEarly": run.stopped_early},
    )
    # Zeros too: the alarms then see values rather than missing data.
    metrics.emit("DigestsFailed", run.failed)
    metrics.emit("DigestRunsStoppedEarly", int(run.stopped_early))
    metrics.emit("DigestsLeftOver", len(run.left))
    if run.stopped_early:
        log.warning("daily digests stopped before the time limit; the rest go in the next run")
    return run


def send_daily_digests(deadline: Deadline, *, now: datetime | None = None) -> int:
    """`run_daily_digests`, answering how many were sent."""
    return run_daily_digests(deadline, now=now).sent
