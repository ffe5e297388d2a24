"""The monthly purge of comments deleted more than a calendar month ago (CONTRACT §8).

`app.py`'s schedule, `python -m chalicelib.cli purge-comments` and the tests call this function.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from chalicelib import deps, metrics
from chalicelib.jobs.base import Deadline
from chalicelib.logs import get_logger

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
    from chalicelib.clock import utc_now
    from chalicelib.services.comments import BATCH_SIZE

    service = deps.comment_service(clock=(lambda: now) if now is not None else utc_now)
    count = service.purge_old_deleted(
        deadline, batch_size=batch_size or BATCH_SIZE, progress=progress
    )
    log.info("purged deleted comments", extra={"count": count})
    metrics.emit("CommentsPurged", count)
    return count
