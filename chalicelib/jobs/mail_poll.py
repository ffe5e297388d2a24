"""Mail-in at scale (ARCHITECTURE "Scheduled work at scale"; the rhythm: CONTRACT §9).

- `dispatch`: the 5-minute schedule Queries the mailboxes that are due (the sharded due index,
  services/poll_schedule.py decides when each is due) and sends them in SQS messages of up to
  MAILBOXES_PER_MESSAGE mailboxes, each message saying up to when its mailboxes were due.
- `poll_from_queue`: the SQS-triggered function polls a message's mailboxes side by side (POP3
  waits on the network), within the function's deadline.
- `poll_mailbox`: one poll under a lease (a conditional write with an expiry), so overlapping
  schedules or redelivered messages never poll one mailbox twice at once; a mailbox polled since
  its message was sent is left alone. Its outcome sets the next poll: found mail, nothing, or a
  failure of the mailbox's own server (backed off, never retried at once).
- `poll_all_in_process`: the CLI and `make run` poll every enabled mailbox (or every due one)
  here, same code.

Failures: the mailbox's own (login refused, host unknown, connection refused, TLS, timeout, a
server that is not POP3) are recorded on the mailbox (lastError, the back-off) and the message is
done. A fault of the platform (AWS refusing or throttling) fails the message: SQS delivers it
again, and its other mailboxes, polled already, are skipped then since they are no longer due.
"""

from __future__ import annotations

import contextvars
import json
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Protocol

from chalicelib import deps, metrics
from chalicelib.clock import utc_now
from chalicelib.domain.audit import acting_as_job
from chalicelib.domain.mailboxes import OUTCOMES, MailStatus
from chalicelib.jobs.base import Deadline, require_token_secret
from chalicelib.logs import correlation_id, get_logger, invocation
from chalicelib.mail.pop3 import SessionExpired, run_ending_at
from chalicelib.services.mailboxes import mailbox_failure, poll_failure
from chalicelib.services.poll_schedule import dispatch_horizon, is_due

if TYPE_CHECKING:
    from chalicelib.domain.mailboxes import Mailbox
    from chalicelib.services.mail_in import MailIngestor
    from chalicelib.services.mail_in.rules import PollResult
    from chalicelib.services.mailboxes import (
        MailboxDirectory,
        MailboxSettingsService,
    )

log = get_logger("mail_poll")

# A poll stops starting new mail after this long, leaving the rest for the next one.
POLL_SECONDS = 240
LEASE_MARGIN = timedelta(seconds=60)
# A poll's lease outlives its longest poll: a crashed poller's mailbox is taken over after this.
LEASE = timedelta(seconds=POLL_SECONDS) + LEASE_MARGIN
# Mailboxes in one SQS message, polled side by side by one invocation (infra/fleet.py sizes the
# poller's concurrency with it).
MAILBOXES_PER_MESSAGE = 10
# The dispatch counts the enabled mailboxes (the share-failing alarm's denominator) once in
# this many minutes: a keys-only read of the whole due index, too much for every run.
FLEET_COUNT_MINUTES = 15


@dataclass
class PollReport:
    lines: list[str] = field(default_factory=list)
    # One line per mailbox that could not be polled (the CLI exits 1 when there is any).
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MailboxPolled:
    """One mailbox's poll: its line for the CLI and the log, the failure reason (one of
    chalicelib.mail.pop3.FAILURE_REASONS) when it could not be polled, and whether the platform
    failed (`retry`: the message is delivered again)."""

    line: str
    failure: str | None = None
    retry: bool = False


class Leases(Protocol):
    """Who polls a mailbox now (store/mail.py: one lease per mailbox, taken with a condition)."""

    def acquire_lease(self, mailbox: str, owner: str, now: datetime, until: datetime) -> bool: ...
    def release_lease(self, mailbox: str, owner: str) -> None: ...


def _now() -> datetime:
    return utc_now()


@dataclass(frozen=True)
class MailPoll:
    """What one mailbox's poll is made of, composed in one place (`composed`): where mailboxes
    are read (`source`), where a poll's outcome sets the next one (`polls`), who holds a mailbox
    now, the mail-in pipeline's entry
    (made for each poll: its sender checks are one poll's), the clock, and how long a poller
    that dies mid-poll keeps others off the mailbox (production keeps LEASE; the bench's lease
    race shortens it to measure a takeover in seconds). Tests and benches replace a part with
    `dataclasses.replace`."""

    source: MailboxDirectory
    polls: MailboxSettingsService
    leases: Leases
    ingestor: Callable[[], MailIngestor]
    clock: Callable[[], datetime] = _now
    lease_for: timedelta = LEASE


def composed() -> MailPoll:
    """The poll's production parts: the one place this job asks the composition root for them."""
    directory = deps.mailbox_directory()
    return MailPoll(directory, directory.settings, deps.mail(), deps.mail_ingestor)


def poll_mailbox(
    key: str,
    deadline: Deadline,
    parts: MailPoll,
    *,
    owner: str | None = None,
    due_by: datetime | None = None,
) -> MailboxPolled:
    """Poll one mailbox if it is (still) due by `due_by` (None: whenever) and its lease can be
    taken (as `owner`: a new id when None).

    A poll that fails is recorded where each person looks: the mailbox's lastError (API,
    console), the metric MailboxPollFailed by reason (dashboard), a log line, and the failure in
    the answer (the CLI's exit status; `retry` for the SQS function when the platform failed).
    """

    with acting_as_job("poll-mailbox"):
        return _poll_if_due(key, deadline, parts, owner or str(uuid.uuid4()), due_by)


def _poll_if_due(
    key: str, deadline: Deadline, parts: MailPoll, owner: str, due_by: datetime | None
) -> MailboxPolled:
    mailbox = parts.source.mailbox(key)
    if mailbox is None:
        return MailboxPolled(f"{key}: not enabled")
    if due_by is not None and not is_due(getattr(mailbox, "next_poll_on", None), due_by):
        return MailboxPolled(f"{key}: not due (polled since it was sent)")
    now = parts.clock()
    poll_deadline = Deadline.after_seconds(POLL_SECONDS)
    if not parts.leases.acquire_lease(key, owner, now, now + parts.lease_for):
        return MailboxPolled(f"{key}: another worker is polling it")
    try:
        return _poll_leased(key, mailbox, deadline, poll_deadline, parts)
    finally:
        parts.leases.release_lease(key, owner)


def _poll_leased(
    key: str, mailbox: Mailbox, deadline: Deadline, poll_deadline: Deadline, parts: MailPoll
) -> MailboxPolled:
    source, clock = parts.source, parts.clock
    # Its connections end before the run does (pop3.RunEnding, a poll cut short): halfway
    # through the run's margin, past its deadline, so that the poll is still recorded in time.
    run_ends_at = time.monotonic() + (deadline.remaining_ms() - deadline.margin_ms // 2) / 1000
    try:
        with run_ending_at(run_ends_at):
            result = parts.ingestor().poll(
                mailbox, lambda: deadline.expired() or poll_deadline.expired()
            )
    except Exception as error:
        if deadline.expired() and not isinstance(error, SessionExpired):
            # A session that ran out its own SESSION_SECONDS is the mailbox's timeout all the
            # same: in Lambda (300 s, deadline's margin 30 s) the run's deadline passes just
            # before the session's 270 s, and a trickling server would otherwise never be
            # backed off.
            return _cut_short(key, mailbox, error, parts, by_stop=deadline.stopping)
        failure = mailbox_failure(error, mailbox)
        if failure is None:
            # The platform failed (AWS refusing, throttling): retried through the queue.
            reason, message = poll_failure(error, mailbox)
            log.exception("mailbox poll failed", extra={"mailbox": key, "why": message})
            metrics.emit("MailboxPollFailed", 1, Reason=reason)
            try:
                source.record_poll_failed(key, clock(), message)
            except Exception:
                log.exception("could not record the mailbox's last error", extra={"mailbox": key})
            return MailboxPolled(f"{key}: error: {message}", reason, retry=True)
        # The mailbox's own server or settings: backed off, its administrators told at the third.
        # Not a warning of the platform's: one line at INFO (a CLI prints the failure itself).
        metrics.emit("MailboxPollFailed", 1, Reason=failure.reason)
        state = parts.polls.record_poll(mailbox, clock(), found_mail=False, failure=failure)
        log.info(
            "mailbox poll failed",
            extra={
                "mailbox": key,
                "reason": failure.reason,
                "why": failure.message,
                "next": str(state),
            },
        )
        return MailboxPolled(f"{key}: error: {failure.message}", failure.reason)
    line = result.line()
    emit_outcomes(result)
    found = (result.seen - result.skipped) > 0 or result.left > 0
    # Mail that make run's stop left on the server stays due: the next run's first poll reads it,
    # as a poll the stop cut short with an error does (`_cut_short`), not an interval later.
    left_by_stop = result.left > 0 and deadline.stopping and deadline.expired()
    parts.polls.record_poll(
        mailbox, clock(), found_mail=found, failure=None, left_by_stop=left_by_stop
    )
    log.info("mailbox polled", extra={"mailbox": key, "summary": line})
    return MailboxPolled(line)


def _cut_short(
    key: str, mailbox: Mailbox, error: Exception, parts: MailPoll, *, by_stop: bool
) -> MailboxPolled:
    """The run was ending: not the mailbox's failure, and it stays due for the next run. The
    operator's metric MailboxPollCutShort counts it (its alarm: mailboxes cut short run after
    run), and the mailbox keeps the streak: the poll_schedule.CUT_SHORT_LIMIT-th in a row is its
    timeout, which its administrators see. Cut short by Agora's own stop (`by_stop`: make run's,
    whose Dovecot may be going too), it is nothing of the mailbox's: no streak, never a failure."""
    log.info("mailbox poll cut short", extra={"mailbox": key, "why": str(error)})
    if by_stop:
        return MailboxPolled(f"{key}: left for the next run (Agora was stopping)")
    metrics.emit("MailboxPollCutShort", 1)
    try:
        state = parts.polls.record_cut_short(mailbox, parts.clock())
    except Exception:
        # make run's stop may have taken its embedded AWS down first: the metric has it.
        log.warning("could not note the poll cut short", exc_info=True, extra={"mailbox": key})
        state = None
    if state is None:
        return MailboxPolled(f"{key}: left for the next run (the run was ending)")
    metrics.emit("MailboxPollFailed", 1, Reason="timeout")
    log.info("mailbox poll failed", extra={"mailbox": key, "reason": "timeout", "next": str(state)})
    return MailboxPolled(f"{key}: error: its polls keep running out of time", "timeout")


def emit_outcomes(result: PollResult) -> None:
    """Mails handled by outcome (CloudWatch metric MailHandled); `failed` always, so that its
    alarm sees a zero rather than no data."""

    for outcome in OUTCOMES:
        count = getattr(result, outcome, 0)
        if count or outcome == MailStatus.FAILED:
            metrics.emit("MailHandled", count, Outcome=str(outcome))


def poll_all_in_process(
    deadline: Deadline,
    *,
    parts: MailPoll | None = None,
    on_line: Callable[[str], None] | None = None,
    on_failure: Callable[[str], None] | None = None,
    due: bool = False,
    now: datetime | None = None,
) -> PollReport:
    """Poll every enabled mailbox in this process (CLI, `make run`), or with `due` only those the
    schedule would poll now; `on_line` is told each mailbox's line as soon as it is done, or
    `on_failure`, when given, the line of a mailbox that could not be polled."""

    require_token_secret()  # notifications of the mail need it: refuse before touching any
    parts = parts or composed()
    source = parts.source
    report = PollReport()
    due_by = None
    if due:
        now = now or _now()
        due_by = dispatch_horizon(now)
        keys = list(source.due_mailbox_keys(now))
    else:
        keys = list(source.enabled_mailbox_keys())
    for key in keys:
        if deadline.expired():
            line = f"{key}: left for the next run (time is up)"
        else:
            polled = poll_mailbox(key, deadline, parts, due_by=due_by)
            line = polled.line
            if polled.failure is not None:
                report.failures.append(line)
        report.lines.append(line)
        told = on_failure if on_failure is not None and line in report.failures else on_line
        if told is not None:
            told(line)
    return report


def batches(keys: Sequence[str], size: int = MAILBOXES_PER_MESSAGE) -> list[list[str]]:
    return [list(keys[start : start + size]) for start in range(0, len(keys), size)]


def dispatch(
    *,
    source: MailboxDirectory | None = None,
    now: datetime | None = None,
    send: Callable[[list[str]], object] | None = None,
) -> int:
    """Send the due mailboxes, MAILBOXES_PER_MESSAGE to a message; answers how many."""
    from chalicelib.store.base import sort_moment

    source = source or deps.mailbox_directory()
    now = now or _now()
    # Each poll's log lines, and the notifications its mail causes, carry this run's id.
    correlation = correlation_id()
    keys = list(source.due_mailbox_keys(now))
    due_by = sort_moment(dispatch_horizon(now))
    bodies = [
        json.dumps({"mailboxes": chunk, "dueBy": due_by, "correlationId": correlation})
        for chunk in batches(keys)
    ]
    if send is None:
        from chalicelib.aws import send_batches
        from chalicelib.settings import get_settings

        send_batches(get_settings().mailbox_queue, bodies, "mailbox message(s)")
    else:
        send(bodies)
    metrics.emit("MailboxesDue", len(keys))
    count_fleet(source.settings, now)
    return len(keys)


def count_fleet(settings: MailboxSettingsService, now: datetime) -> None:
    """The share-failing alarm's figures: failing mailboxes each run (a sparse index of them),
    enabled ones once in FLEET_COUNT_MINUTES."""

    try:
        if now.minute % FLEET_COUNT_MINUTES < 5:
            enabled, failing = settings.fleet()
            metrics.emit("MailboxesEnabled", enabled)
        else:
            failing = settings.mailboxes.count_failing()
        metrics.emit("MailboxesFailing", failing)
    except Exception:
        # The polls are sent; a missing figure shows as missing data, not as a failed dispatch.
        log.exception("could not count the mailbox fleet")


def parse_message(body: str) -> tuple[list[str], datetime | None, str | None]:
    """(mailbox keys, due by, correlation id) of a message; `{"mailbox": key}` (one mailbox,
    as messages were before) is read too."""
    message = json.loads(body)
    keys = message.get("mailboxes")
    if keys is None:
        keys = [message["mailbox"]]
    due_by = None
    if message.get("dueBy"):
        due_by = datetime.fromisoformat(str(message["dueBy"]).replace("Z", "+00:00"))
    return [str(key) for key in keys], due_by, message.get("correlationId")


def poll_many(
    keys: Sequence[str],
    deadline: Deadline,
    *,
    poll: Callable[..., MailboxPolled],
    due_by: datetime | None = None,
) -> list[MailboxPolled]:
    """Poll the mailboxes side by side, each on its own; an exception of one is that one's
    platform failure, never the others'."""

    def one(key: str) -> MailboxPolled:
        try:
            return poll(key, deadline, due_by=due_by)
        except Exception as error:
            log.exception("mailbox poll failed", extra={"mailbox": key})
            return MailboxPolled(f"{key}: error: {type(error).__name__}", "other", retry=True)

    if len(keys) <= 1:
        return [one(key) for key in keys]
    _prepare_clients()
    with ThreadPoolExecutor(max_workers=len(keys)) as pool:
        futures = [pool.submit(contextvars.copy_context().run, one, key) for key in keys]
        return [future.result() for future in futures]


def _prepare_clients() -> None:
    """Make the shared AWS clients in this thread, before the pollers' threads use them."""
    try:
        deps.mail().prepare()
        deps.mailboxes().prepare()
    except Exception:
        log.exception("could not prepare the AWS clients")


def poll_from_queue(body: str, deadline: Deadline) -> str:
    """The SQS-triggered function, one message of several mailboxes: raises (so that this
    message is reported as a batch item failure and delivered again) only when the platform
    failed for one of them; the others are no longer due by then, and are skipped."""

    keys, due_by, correlation = parse_message(body)
    with invocation(correlation=correlation):
        polled = poll_many(
            keys, deadline, poll=partial(poll_mailbox, parts=composed()), due_by=due_by
        )
    lines = [p.line for p in polled]
    retried = [p.line for p in polled if p.retry]
    if retried:
        raise MailboxPollFailed("; ".join(retried))
    return "\n".join(lines)


class MailboxPollFailed(Exception):
    """The platform failed while polling a mailbox (already logged, counted and shown as its
    lastError); its message is delivered again."""
