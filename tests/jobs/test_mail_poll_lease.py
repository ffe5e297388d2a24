"""A poll's lease: how long it keeps other pollers off a mailbox (`lease_for`, production's
`mail_poll.LEASE` by default), and a dead poller's lease taken over once it has run out."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from chalicelib.jobs.base import Deadline
from chalicelib.jobs.mail_poll import LEASE, MailPoll, composed, poll_mailbox
from chalicelib.services.mail_in.ingest import PollResult
from chalicelib.services.mailboxes import EMAIL_TO_POST, Mailbox
from chalicelib.store.mail import MailboxLeaseRecord, MailRepository
from tests.mail.test_ingest import FakeDirectory


def parts(source: Any, ingestor: Any, **more: Any) -> MailPoll:
    """The production poll with the test's mailboxes and mail-in in place of the configured."""
    return replace(composed(), source=source, polls=source, ingestor=lambda: ingestor, **more)


KEY = "post#garden"


def directory() -> FakeDirectory:
    box = Mailbox(
        scope="garden",
        kind=EMAIL_TO_POST,
        server_name="pop.example.org",
        server_port=995,
        server_username="garden",
        has_password=True,
        password="secret",
    )
    return FakeDirectory({KEY: box})


class LeaseReadingIngestor:
    """Stands in for POP3: notes how long the lease it polls under runs."""

    def __init__(self) -> None:
        self.leased_for: list[timedelta] = []

    def poll(self, mailbox: Any, should_stop: Any) -> PollResult:
        from chalicelib.clock import utc_now

        lease = MailboxLeaseRecord.get(mailbox.key, consistent_read=True)
        self.leased_for.append(lease.expires_on - utc_now())
        return PollResult(mailbox=mailbox.key, seen=1)


def test_a_poll_holds_the_production_lease_unless_told_otherwise(aws):
    ingestor = LeaseReadingIngestor()
    poll_mailbox(KEY, Deadline.unbounded(), parts(directory(), ingestor))
    poll_mailbox(
        KEY, Deadline.unbounded(), parts(directory(), ingestor, lease_for=timedelta(seconds=2))
    )
    production, short = ingestor.leased_for
    assert LEASE - timedelta(seconds=30) < production <= LEASE
    assert timedelta(0) < short <= timedelta(seconds=2)
    assert LEASE == timedelta(minutes=5)
    # Released after each poll: nothing is left holding the mailbox.
    assert MailboxLeaseRecord.count(KEY) == 0


def test_a_dead_pollers_lease_is_taken_over_only_once_it_has_run_out(aws):
    from chalicelib.clock import utc_now

    leases = MailRepository()
    ingestor = LeaseReadingIngestor()
    now = utc_now()
    # A poller that died holding the mailbox until a minute from now.
    assert leases.acquire_lease(KEY, "dead", now, now + timedelta(minutes=1))
    line = poll_mailbox(KEY, Deadline.unbounded(), parts(directory(), ingestor)).line
    assert line.endswith("another worker is polling it") and not ingestor.leased_for
    # The same lease, run out: the next poller takes the mailbox, and the dead one's late
    # release does not free it from under the new owner.
    MailboxLeaseRecord(KEY, owner="dead", expires_on=now - timedelta(seconds=1)).save()
    poll_mailbox(KEY, Deadline.unbounded(), parts(directory(), ingestor), owner="new")
    assert len(ingestor.leased_for) == 1
    assert leases.acquire_lease(KEY, "new", now, now + timedelta(minutes=1))
    leases.release_lease(KEY, "dead")
    assert MailboxLeaseRecord.get(KEY, consistent_read=True).owner == "new"


class ServerGoneWhenTheRunEnds:
    """Stands in for POP3 whose server goes while the run is told to stop (make run's Ctrl-C
    reaching its Dovecot): the run's end comes first, then the connection is refused."""

    def __init__(self, ending: list[bool]) -> None:
        self.ending = ending

    def poll(self, mailbox: Any, should_stop: Any) -> PollResult:
        from chalicelib.mail.pop3 import MailboxError

        self.ending.append(True)
        raise MailboxError("cannot connect: [Errno 111] Connection refused", reason="connection")


def test_a_poll_cut_short_by_the_runs_end_is_not_the_mailboxs_failure(aws):
    """A stop of make run is never a mailbox's failure: no lastError, no back-off (issue 56)."""
    ending: list[bool] = []
    source = directory()
    polled = poll_mailbox(
        KEY,
        Deadline(lambda: 0 if ending else 10**12, margin_ms=0),
        parts(source, ServerGoneWhenTheRunEnds(ending)),
    )
    assert polled.failure is None and "left for the next run" in polled.line
    assert source.last_errors == {}
    assert source.boxes[KEY].poll_failures == 0 and source.boxes[KEY].next_poll_on is None
    # The same refusal while the run goes on is the mailbox's own.
    ending.clear()
    polled = poll_mailbox(KEY, Deadline.unbounded(), parts(source, ServerGoneWhenTheRunEnds([])))
    assert polled.failure == "connection" and KEY in source.last_errors


class SessionRunOutAsTheRunEnds:
    """Stands in for POP3 whose server trickles bytes until the session's own 270 s run out:
    in Lambda the run's deadline (300 s less its 30 s margin) has passed a moment before."""

    def poll(self, mailbox: Any, should_stop: Any) -> PollResult:
        from chalicelib.mail.pop3 import SessionExpired

        raise SessionExpired("pop3://a@b:110: the session went on longer than 270 seconds")


def test_a_session_that_ran_out_its_own_time_is_the_mailboxs_timeout_even_at_the_runs_end(aws):
    """Recorded and backed off, not left due for every next run to hold a Lambda for."""
    source = directory()
    polled = poll_mailbox(
        KEY, Deadline(lambda: 0, margin_ms=0), parts(source, SessionRunOutAsTheRunEnds())
    )
    assert polled.failure == "timeout" and "270 seconds" in source.last_errors[KEY][1]
    assert source.boxes[KEY].poll_failures == 1 and source.boxes[KEY].next_poll_on is not None
