"""The monthly purge of comments deleted more than a calendar month ago (CONTRACT §8).

`app.py`'s schedule, `python -m chalicelib.cli purge-comments` and the tests call this function.

Its heartbeat: CloudWatch cannot look back a month, so a completed run stamps its time in the
counters table, and a daily check (`report_last_run`, app.py's daily schedule) emits the days
since as PurgeRunAgeDays, alarmed past 32 days and when missing (infra/alarms.py).

A run that stops at its deadline (900 s in Lambda) is not complete (issue 57: it recorded itself
complete and the backlog waited a month unseen): it counts what it left (CommentPurgeBacklog, up
to BACKLOG_COUNTED, alarmed), says so in its log, and stamps nothing; the next run, or
`python -m chalicelib.cli purge-comments`, goes on from the oldest comment left.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from chalicelib import deps, metrics
from chalicelib.clock import utc_now
from chalicelib.domain.audit import acting_as_job
from chalicelib.jobs.base import Deadline
from chalicelib.logs import get_logger
from chalicelib.services.comments import BATCH_SIZE, one_month_before

log = get_logger("jobs.comment_purge")


def purge_old_deleted_comments(
    deadline: Deadline,
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Purge across every group; answers the number purged.

    Stops once `deadline` expires (after at least one batch) and leaves the rest, oldest first, for
    the next run. `now` fixes the clock (tests); `batch_size` the comments handled per Query.
    """

    service = deps.comment_service(clock=(lambda: now) if now is not None else utc_now)
    # Each comment purged is the job's own decision, in the log with it (CONTRACT §12).
    with acting_as_job("purge-comments"):
        count = service.purge_old_deleted(
            deadline, batch_size=batch_size or BATCH_SIZE, progress=progress
        )
    log.info("purged deleted comments", extra={"count": count})
    metrics.emit("CommentsPurged", count)
    left = backlog(service, now or utc_now()) if deadline.expired() else 0
    metrics.emit("CommentPurgeBacklog", left)
    if left:
        more = "or more " if left >= BACKLOG_COUNTED else ""
        log.warning(
            f"the purge stopped at its deadline: {left} {more}deleted comments are left for the "
            "next run (or python -m chalicelib.cli purge-comments, which has none)",
            extra={"purged": count, "left": left},
        )
    else:
        record_run(now or utc_now())
    return count


# The backlog is counted up to this many (a Query of keys each page): enough to size the work.
BACKLOG_COUNTED = 10_000


def backlog(service: Any, now: datetime) -> int:
    """The deleted comments still due for the purge (at most BACKLOG_COUNTED)."""
    cutoff = one_month_before(now)
    found, after = 0, None
    while found < BACKLOG_COUNTED:
        page = service.comments.deleted_before(cutoff, limit=BATCH_SIZE, after=after)
        found += len(page)
        if len(page) < BATCH_SIZE:
            break
        after = page[-1]
    return min(found, BACKLOG_COUNTED)


# The counters item that holds when the last purge completed (epoch seconds).
LAST_RUN = "purge-comments:last-run"


def record_run(moment: datetime) -> None:
    from chalicelib.store.counters import CounterRepository

    CounterRepository().stamp(LAST_RUN, int(moment.timestamp()))


def report_last_run(now: datetime | None = None) -> float | None:
    """The days since the last completed purge, emitted as PurgeRunAgeDays; answers them (None:
    the counters table could not be read, logged, and no metric: the alarm sees missing data).
    A stack that never purged yet counts from its first check, so a new one does not page."""
    from chalicelib.store.counters import CounterRepository

    moment = now or datetime.now(UTC)
    try:
        last = CounterRepository().read(LAST_RUN)
        if last is None:
            record_run(moment)
            last = int(moment.timestamp())
    except Exception:  # noqa: BLE001 - the daily run it rides on goes on; the alarm sees silence
        log.exception("the last purge's time could not be read")
        return None
    days = max(0.0, (moment.timestamp() - last) / 86400)
    metrics.emit("PurgeRunAgeDays", round(days, 2))
    return days
