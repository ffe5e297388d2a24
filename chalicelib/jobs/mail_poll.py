"""Mail-in at scale (ARCHITECTURE "Scheduled work at scale").

- `dispatch`: the 5-minute schedule finds the enabled mailboxes through an index (no Scan) and
  sends one SQS message per mailbox.
- `poll_from_queue`: the SQS-triggered function polls the mailbox of each message.
- `poll_mailbox`: one poll under a lease (a conditional write with an expiry), so overlapping
  schedules or redelivered messages never poll one mailbox twice at once.
- `poll_all_in_process`: the CLI and `make run` poll every enabled mailbox here, same code.

`poll_from_queue` is not Powertools' BatchProcessor: the trigger's batch size is 1 (one mailbox,
up to five minutes), so there is no batch to report on in part.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from chalicelib import deps
from chalicelib.jobs.base import Deadline
from chalicelib.logs import get_logger

log = get_logger("mail_poll")

# A poll stops starting new mail after this long, leaving the rest for the next one.
POLL_SECONDS = 240
LEASE_MARGIN = timedelta(seconds=60)
# A poll's lease outlives its longest poll: a crashed poller's mailbox is taken over after this.
LEASE = timedelta(seconds=POLL_SECONDS) + LEASE_MARGIN


@dataclass
class PollReport:
    lines: list[str] = field(default_factory=list)
    # One line per mailbox that could not be polled (the CLI exits 1 when there is any).
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MailboxPolled:
    """One mailbox's poll: its line for the CLI and the log, and the failure reason (one of
    chalicelib.mail.pop3.FAILURE_REASONS) when it could not be polled."""

    line: str
    failure: str | None = None


def default_source() -> Any:
    return deps.mailbox_directory()


def poll_mailbox(
    key: str,
    deadline: Deadline,
    *,
    source: Any = None,
    ingestor: Any = None,
    owner: str | None = None,
    lease_for: timedelta = LEASE,
) -> MailboxPolled:
    """Poll one mailbox if its lease can be taken.

    A poll that fails is recorded where each person looks: the mailbox's lastError (API,
    console), the metric MailboxPollFailed by reason (alarm), an ERROR log line, and the failure
    in the answer (the CLI's exit status, the SQS function's batch item failure).

    `lease_for` is how long a poller that dies mid-poll keeps others off the mailbox; production
    keeps LEASE (the bench's lease race shortens it to measure a takeover in seconds).
    """
    from chalicelib import metrics
    from chalicelib.clock import utc_now
    from chalicelib.services.mailboxes import poll_failure

    source = source or default_source()
    mailbox = source.mailbox(key)
    if mailbox is None:
        return MailboxPolled(f"{key}: not enabled")
    leases = deps.mail()
    owner = owner or str(uuid.uuid4())
    now = utc_now()
    poll_deadline = Deadline.after_seconds(POLL_SECONDS)
    if not leases.acquire_lease(key, owner, now, now + lease_for):
        return MailboxPolled(f"{key}: another worker is polling it")
    failure = None
    try:
        ingestor = ingestor or deps.mail_ingestor()
        result = ingestor.poll(mailbox, lambda: deadline.expired() or poll_deadline.expired())
        source.record_last_processed(key, utc_now())
        line = result.line()
        emit_outcomes(result)
    except Exception as error:
        failure, message = poll_failure(error, mailbox)
        log.exception(
            "mailbox poll failed", extra={"mailbox": key, "reason": failure, "why": message}
        )
        line = f"{key}: error: {message}"
        metrics.emit("MailboxPollFailed", 1, Reason=failure)
        try:
            source.record_poll_failed(key, utc_now(), message)
        except Exception:
            log.exception("could not record the mailbox's last error", extra={"mailbox": key})
    finally:
        leases.release_lease(key, owner)
    log.info("mailbox polled", extra={"mailbox": key, "summary": line})
    return MailboxPolled(line, failure)


MAIL_OUTCOMES = ("posted", "commented", "ignored", "rejected", "failed")


def emit_outcomes(result: Any) -> None:
    """Mails handled by outcome (CloudWatch metric MailHandled); `failed` always, so that its
    alarm sees a zero rather than no data."""
    from chalicelib import metrics

    for outcome in MAIL_OUTCOMES:
        count = getattr(result, outcome, 0)
        if count or outcome == "failed":
            metrics.emit("MailHandled", count, Outcome=outcome)


def poll_all_in_process(
    deadline: Deadline,
    *,
    source: Any = None,
    ingestor: Any = None,
    on_line: Callable[[str], None] | None = None,
) -> PollReport:
    """Poll every enabled mailbox in this process (CLI, `make run`); `on_line` is told each
    mailbox's line as soon as that mailbox is done."""
    from chalicelib.jobs.base import require_token_secret

    require_token_secret()  # notifications of the mail need it: refuse before touching any
    source = source or default_source()
    report = PollReport()
    for key in source.enabled_mailbox_keys():
        if deadline.expired():
            line = f"{key}: left for the next run (time is up)"
        else:
            polled = poll_mailbox(key, deadline, source=source, ingestor=ingestor)
            line = polled.line
            if polled.failure is not None:
                report.failures.append(line)
        report.lines.append(line)
        if on_line is not None:
            on_line(line)
    return report


def dispatch(*, source: Any = None) -> int:
    """Send one SQS message per enabled mailbox; answers how many were sent."""
    from chalicelib.aws import send_batches
    from chalicelib.logs import correlation_id
    from chalicelib.settings import get_settings

    source = source or default_source()
    # Each poll's log lines, and the notifications its mail causes, carry this run's id.
    correlation = correlation_id()
    keys = list(source.enabled_mailbox_keys())
    bodies = [json.dumps({"mailbox": key, "correlationId": correlation}) for key in keys]
    send_batches(get_settings().mailbox_queue, bodies, "mailbox message(s)")
    return len(keys)


def poll_from_queue(body: str, deadline: Deadline) -> str:
    """The SQS-triggered function, one message `{"mailbox": key}`: raises when the mailbox could
    not be polled, so that this message (only) is reported as a batch item failure and retried."""
    from chalicelib.logs import invocation

    message = json.loads(body)
    with invocation(correlation=message.get("correlationId")):
        polled = poll_mailbox(message["mailbox"], deadline)
    if polled.failure is not None:
        raise MailboxPollFailed(polled.line)
    return polled.line


class MailboxPollFailed(Exception):
    """A mailbox could not be polled (already logged, counted and shown as its lastError)."""
