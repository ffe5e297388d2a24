"""A mailbox as every layer reads it: where its mail is, its settings and the rhythm of its polls;
the statuses of its mail log (below: what a mail became, which of them are final); and the log's
entries, frozen records, with the steps that change them (last).

The settings service lists mailboxes and the mail-in job polls them (services/mailboxes.py);
the POP3 session opens one (mail/pop3.py); the mail log is keyed by `mailbox_key`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from functools import cached_property

SYSTEM_SCOPE = "system"
# How a mail came in (its log entry's `via`, CONTRACT §10).
VIA_POP3 = "pop3"
VIA_PUSH = "push"
EMAIL_TO_POST = "emailToPost"
EMAIL_TO_COMMENT = "emailToComment"

POST_KEY_PREFIX = "post#"
COMMENT_KEY = "comment#system"


def mailbox_key(scope: str) -> str:
    """The mail-in key of a mailbox: `post#<groupId>`, or `comment#system`."""
    return COMMENT_KEY if scope == SYSTEM_SCOPE else f"{POST_KEY_PREFIX}{scope}"


def account_key(host: str, port: int, username: str) -> str:
    """Which maildrop a UIDL belongs to (short hash: user names need not show in keys)."""
    text = f"{host.strip().lower()}:{int(port)}:{username}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class PollState:
    """A mailbox's rhythm: `next_poll_on` None while it is disabled (services/poll_schedule.py
    decides it)."""

    next_poll_on: datetime | None
    empty_polls: int = 0
    failures: int = 0


@dataclass(frozen=True)
class PollOutcome:
    """One poll as its mailbox keeps it: when it ran, the rhythm after it (its next poll, the
    streaks), and the error that defeated it (None: a good poll)."""

    on: datetime
    after: PollState
    error: str | None = None

    @property
    def next_poll_on(self) -> datetime:
        if self.after.next_poll_on is None:
            raise ValueError("a polled mailbox is enabled: its rhythm names its next poll")
        return self.after.next_poll_on


@dataclass(frozen=True)
class Mailbox:
    """A mailbox: its settings as the API edits them and, for a poll, its password.

    The one mailbox type: the store reads them (store/mailboxes.py, the password as its KMS
    ciphertext), the settings service shows them, the mail-in job polls them
    (`MailboxDirectory.mailbox` fills the plain password in from the same read).
    """

    scope: str  # the group id (email-to-post), or `system` (email-to-comment)
    kind: str  # emailToPost | emailToComment
    server_name: str
    server_port: int
    server_username: str
    is_enabled: bool = True
    is_ssl: bool = True
    delete_processed: bool = False
    last_processed: datetime | None = None
    has_password: bool = False
    password: str = field(default="", repr=False)
    # The address members write to ("" for none): shown on the console, Reply-To of mail out.
    email_address: str = ""
    # The rhythm of its polls (services/poll_schedule.py); next_poll_on None while disabled.
    next_poll_on: datetime | None = None
    empty_polls: int = 0
    poll_failures: int = 0
    # Polls in a row that the run's end cut short (jobs/mail_poll.py): none recorded as a poll.
    polls_cut_short: int = 0
    # As stored: the KMS ciphertext of the password (None: none saved).
    password_ciphertext: bytes | None = field(default=None, repr=False)
    # The last poll that could not reach the mailbox, in plain words (None after a good one).
    last_error: str | None = None
    last_error_on: datetime | None = None
    # Who saved the settings last, and when.
    editor_id: str | None = None
    modified_on: datetime | None = None
    # When "poll now" last made the mailbox due (CONTRACT §5: once a minute).
    poll_now_on: datetime | None = None

    @property
    def poll_state(self) -> PollState:
        return PollState(self.next_poll_on, self.empty_polls, self.poll_failures)

    # What the mailbox is called by, worked out once for the frozen record (a poll reads its key
    # and account for every mail it handles; the account is a hash).

    @cached_property
    def group_id(self) -> str | None:
        return None if self.scope == SYSTEM_SCOPE else self.scope

    @cached_property
    def key(self) -> str:
        """The mail-in key: `post#<groupId>`, or `comment#system`."""
        return mailbox_key(self.scope)

    @cached_property
    def is_post(self) -> bool:
        return self.kind == EMAIL_TO_POST

    @cached_property
    def account(self) -> str:
        """Which maildrop its UIDLs belong to (server, port and user name)."""
        return account_key(self.server_name, self.server_port, self.server_username)


@dataclass(frozen=True)
class MailboxEdit:
    """What an administrator's save of a mailbox's settings writes (the poller's state is kept):
    a `password` (ciphertext) of None keeps the stored one, an `email_address` of None the stored
    address; an enabled mailbox is due at `next_poll_on` (None: it is disabled)."""

    kind: str  # emailToPost | emailToComment
    server_name: str
    server_port: int
    server_username: str
    password: bytes | None
    is_enabled: bool
    is_ssl: bool
    delete_processed: bool
    editor_id: str
    modified_on: datetime
    email_address: str | None = None
    next_poll_on: datetime | None = None


# -----------------------------------------------------------------------------------------------
# What became of a mail: the statuses of mail log entries (stored, listed by, and in the API).
#
# The values are stored in the mail log and shown by the API: never rename one.


class MailStatus(StrEnum):
    PROCESSING = "processing"  # reserved: an import under way, or interrupted (retried)
    POSTED = "posted"
    COMMENTED = "commented"
    IGNORED = "ignored"
    REJECTED = "rejected"
    FAILED = "failed"  # for now: the next poll tries again
    QUARANTINED = "quarantined"  # failed for good: the mail stays on its server, never retried


# A mail whose status is one of these is settled: its server's copy may go.
FINAL = frozenset(
    {
        MailStatus.POSTED,
        MailStatus.COMMENTED,
        MailStatus.IGNORED,
        MailStatus.REJECTED,
        MailStatus.QUARANTINED,
    }
)

# What a poll counts and reports (its line, the MailHandled metric), in order; and what the API
# and the log's by-status index show.
OUTCOMES = (
    MailStatus.POSTED,
    MailStatus.COMMENTED,
    MailStatus.IGNORED,
    MailStatus.REJECTED,
    MailStatus.FAILED,
)

# An interrupted import is listed as failed (to be retried), a quarantined mail as failed (for
# good: its reason says so).
_LISTED: dict[str, MailStatus] = {
    MailStatus.PROCESSING: MailStatus.FAILED,
    MailStatus.QUARANTINED: MailStatus.FAILED,
}


def listed(status: str) -> str:
    """The status a stored one is counted, listed and shown under (an unknown one as it is)."""
    return str(_LISTED.get(status, status))


# -----------------------------------------------------------------------------------------------
# A mail's log entry as mail in and the mail log read it: a frozen record, not the PynamoDB item
# (store/mail.py maps one to the other), and the steps that change it. Nobody changes an entry in
# place: mail in hands the log steps, the log writes the entries as the steps leave them
# (`played`) and answers those entries, and mail in goes on with what it answered (an attempt's
# count, a kept comment id).


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
    # How the mail came in (CONTRACT §10): `pop3` (a poll; entries from before push read so) or
    # `push` (SES receiving, make run's SMTP door: CONTRACT §13).
    via: str = VIA_POP3
    # A rejected mail's sender was sent a notice of why (CONTRACT §9, §10); entries written
    # before notices read False.
    notice_sent: bool = False


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
        sent = entry.notice_sent or step.entry.notice_sent  # decided with the outcome
        return replace(
            entry, status=step.status, reason=step.reason, post_id=post_id, notice_sent=sent
        )
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
