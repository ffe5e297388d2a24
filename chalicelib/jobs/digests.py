"""The daily digest job (CONTRACT §3 `send-digests`).

`app.py`'s daily schedule, `python -m chalicelib.cli send-digests`, `make run`'s scheduler and the
tests call this function.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from chalicelib import deps, metrics
from chalicelib.jobs.base import Deadline, PartsFailed, require_token_secret
from chalicelib.logs import get_logger

if TYPE_CHECKING:
    from chalicelib.services.digests import DigestRun

log = get_logger("jobs.digests")


def run_daily_digests(deadline: Deadline, *, now: datetime | None = None) -> DigestRun:
    """Send today's digests; answers the run (sent, failed with one line each, stopped early).

    Stops once `deadline` expires and leaves the other users' items for the next run. `now` fixes
    the clock, and with it the day (tests). Refuses to start without the token secret (every
    digest carries a signed unsubscribe link).
    """
    from chalicelib.clock import utc_now

    require_token_secret()
    service = deps.digest_service(clock=(lambda: now) if now is not None else utc_now)
    run = service.send_all(deadline.expired)
    log.info(
        "daily digests",
        extra={"sent": run.sent, "failed": run.failed, "stoppedEarly": run.stopped_early},
    )
    # Zeros too: the alarms then see values rather than missing data.
    metrics.emit("DigestsFailed", run.failed)
    metrics.emit("DigestRunsStoppedEarly", int(run.stopped_early))
    if run.stopped_early:
        log.warning("daily digests stopped before the time limit; the rest go in the next run")
    return run


def send_daily_digests(deadline: Deadline, *, now: datetime | None = None) -> int:
    """`run_daily_digests`, answering how many were sent."""
    return run_daily_digests(deadline, now=now).sent


def scheduled_daily_digests(deadline: Deadline) -> dict[str, int]:
    """The scheduled function: fails when a digest failed, after sending the others, so that
    Lambda retries the run (what was sent is not sent again) and then hands the event to the
    on-failure destination (infra/operations.py)."""
    run = run_daily_digests(deadline)
    if run.failures:
        raise PartsFailed(run.failures)
    return {"sent": run.sent, "skipped": run.skipped}
