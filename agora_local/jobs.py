"""The scheduled jobs `make run` runs in-process (agora_local/lifecycle.py `Scheduler`), and how its
mail schedule acts on a mailbox made due now within seconds.

In AWS, dispatch-mail-polls runs every 5 minutes. Here the same poll (`poll-mail --due`) runs as
soon as a mailbox is due: every LOOK_SECONDS the scheduler looks at the mailboxes table of the
embedded DynamoDB, which lives in this process (no call, no Query: a look at its memory), and polls
when one is due, so "Poll now" on the console is answered in seconds, not at the next 5-minute
round. Should the look be impossible (no such table here), it polls every 5 minutes as AWS does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from agora_local.lifecycle import OutboxDrain

LOOK_SECONDS = 2


def mailboxes_due_by(moment: datetime) -> bool | None:
    """Whether an enabled mailbox of the embedded DynamoDB is due at `moment` (its due-index key,
    `<due time>#<scope>`, at or before it); None when the table is not in this process."""
    from moto.dynamodb.models import dynamodb_backends

    from chalicelib.settings import get_settings
    from chalicelib.store.base import sort_moment

    name = get_settings().table_name("mailboxes")
    tables = [
        backend.tables[name]
        for by_region in list(dynamodb_backends.values())
        for backend in list(by_region.values())
        if name in backend.tables
    ]
    if len(tables) != 1:
        return None
    upper = f"{sort_moment(moment)}#~"
    for item in list(tables[0].items.values()):
        due_key = getattr(item, "attrs", {}).get("due_key")
        if due_key is not None and str(due_key.value) <= upper:
            return True
    return False


class DueMailPoll:
    """The mail job, asked every LOOK_SECONDS: polls what is due when a mailbox is due now (and
    every `fallback_seconds` when it cannot tell)."""

    def __init__(
        self,
        poll: Callable[[], Any],
        due_by: Callable[[datetime], bool | None] = mailboxes_due_by,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        fallback_seconds: float = 300.0,
    ) -> None:
        self.poll = poll
        self.due_by = due_by
        self.clock = clock
        self.fallback_seconds = fallback_seconds
        self.last_run: datetime | None = None

    def __call__(self) -> Any:
        now = self.clock()
        due = self.due_by(now)
        if due is False:
            return None
        if due is None and self.last_run is not None:
            if (now - self.last_run).total_seconds() < self.fallback_seconds:
                return None
        self.last_run = now
        return self.poll()


def until_stopped(stopping: threading.Event) -> Any:
    """A job's deadline that expires when make run's stop begins: the job starts no new work
    then (a poll leaves the rest of its mail on the server, as at a Lambda's time limit), so the
    stop waits for little, and what it did is in the stop's save."""
    from chalicelib.jobs.base import Deadline

    return Deadline(lambda: 0 if stopping.is_set() else 10**12, margin_ms=0, stopping=True)


def scheduled_jobs(
    stopping: threading.Event | None = None,
) -> list[tuple[str, Any, Callable[[], Any]]]:
    from chalicelib.jobs import comment_purge, digests, mail_poll, notify, outbox, schedules

    deadline = until_stopped(stopping or threading.Event())
    return [
        (
            "poll-mail",
            schedules.Every(seconds=LOOK_SECONDS),
            # What the deployed schedule polls (the mailboxes that are due), once one is due.
            DueMailPoll(lambda: mail_poll.poll_all_in_process(deadline, due=True)),
        ),
        (
            "purge-comments",
            schedules.COMMENT_PURGE,
            lambda: comment_purge.purge_old_deleted_comments(deadline),
        ),
        (
            "send-digests",
            schedules.DAILY_DIGEST,
            lambda: digests.send_daily_digests(deadline),
        ),
        # In AWS the queue triggers a function; here the scheduler takes the chunks off it.
        ("deliver-notifications", schedules.Every(minutes=1), notify.drain_queue),
        # In AWS the outbox table's stream triggers drain-outbox; here the scheduler reads the
        # stream every second (jobs/outbox.py), so a write's consequences follow it at once.
        ("drain-outbox", schedules.Every(seconds=1), OutboxDrain(outbox.drain_in_process)),
    ]
