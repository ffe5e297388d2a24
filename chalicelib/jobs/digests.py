"""The daily digest job (CONTRACT §3 `send-digests`).

`app.py`'s daily schedule, `python -m chalicelib.cli send-digests`, `make run`'s scheduler and the
tests call this function.
"""

from __future__ import annotations

from datetime import datetime

from chalicelib import deps
from chalicelib.jobs.base import Deadline
from chalicelib.logs import get_logger

log = get_logger("jobs.digests")


def send_daily_digests(deadline: Deadline, *, now: datetime | None = None) -> int:
    """Send today's digests; answers how many were sent.

    Stops once `deadline` expires and leaves the other users' items for the next run. `now` fixes
    the clock, and with it the day (tests).
    """
    from chalicelib.clock import utc_now

    service = deps.digest_service(clock=(lambda: now) if now is not None else utc_now)
    run = service.send_all(deadline.expired)
    log.info("daily digests", extra={"sent": run.sent, "failed": run.failed})
    return run.sent
