"""A mail's log entry as mail in and the mail log read it: a frozen record, not the PynamoDB item
(store/mail.py maps one to the other), and the steps that change it.

Nobody changes an entry in place: mail in hands the log steps (`Reserve`, `Finish`, `Quarantine`,
`Fail`, `Skip`), the log writes the entries as the steps leave them (`played`) and answers those
entries, and mail in goes on with what it answered (an attempt's count, a kept comment id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from chalicelib.domain.mailboxes import MailStatus


@dataclass(frozen=True)
class LogEntry:
    """One mail's entry in its mailbox's log; `entry_id` derives from (mailbox, Message-ID or
    content hash), so a mail has one entry however often it is seen."""

    mailbox: str
    entry_id: str
    received_on: datetime
    message_id: str | None = None
    sender: str | None = None
    subject: str | None = None
    status: str | None = None
    reason: str | None = None
    attempts: int = 0
    post_id: str | None = None
    # Kept before the comment is stored: a retry after a crash reuses it (mail-in idempotency).
    comment_id: int | None = None


# --- the mail log's steps -----------------------------------------------------------------------


@dataclass(frozen=True)
class Reserve:
    """An attempt is counted before any work on the mail: a mail that kills the process is
    counted like one that raises (status `processing`)."""

    entry: LogEntry


@dataclass(frozen=True)
class Finish:
    """The mail's outcome (posted, commented, ignored, rejected) and its UIDL's marker."""

    entry: LogEntry
    uidl: str
    status: str
    reason: str
    post_id: str | None = None


@dataclass(frozen=True)
class Quarantine:
    """No more attempts: kept on the server for a person, and marked so no poll takes it again."""

    entry: LogEntry
    uidl: str
    reason: str


@dataclass(frozen=True)
class Fail:
    """This attempt failed; the next poll tries again (no marker)."""

    entry: LogEntry
    reason: str


@dataclass(frozen=True)
class Skip:
    """The message on the server is a mail handled already (by `entry`): only its marker."""

    entry: LogEntry
    uidl: str


Step = Reserve | Finish | Quarantine | Fail | Skip


def stepped(entry: LogEntry, step: Step) -> LogEntry:
    """`entry` as `step` leaves it (a `Skip` leaves it as it is: it only marks another copy)."""
    if isinstance(step, Reserve):
        return replace(entry, attempts=entry.attempts + 1, status=MailStatus.PROCESSING)
    if isinstance(step, Finish):
        post_id = step.post_id or entry.post_id
        return replace(entry, status=step.status, reason=step.reason, post_id=post_id)
    if isinstance(step, Quarantine):
        return replace(entry, status=MailStatus.QUARANTINED, reason=step.reason)
    if isinstance(step, Fail):
        return replace(entry, status=MailStatus.FAILED, reason=step.reason)
    return entry


def played(steps: Sequence[Step]) -> list[tuple[Step, LogEntry]]:
    """Each step with its entry as the step leaves it. Steps on one entry build on each other, in
    order: `[Reserve(e), Fail(e)]` counts the attempt and fails it, whichever `e` each was given."""
    left: dict[str, LogEntry] = {}
    answer = []
    for step in steps:
        key = step.entry.entry_id
        left[key] = stepped(left.get(key, step.entry), step)
        answer.append((step, left[key]))
    return answer
