"""The rhythm of polls (CONTRACT §9) as pure decisions over a clock, and the poll job's choices
with the store's fakes: found mail, nothing, the mailbox's own failure, the platform's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from chalicelib.domain.announcements import MailboxFailing
from chalicelib.jobs.base import Deadline
from chalicelib.jobs.mail_poll import (
    MailPoll,
    batches,
    dispatch,
    parse_message,
    poll_mailbox,
    poll_many,
)
from chalicelib.mail.pop3 import MailboxError, SessionLost
from chalicelib.schemas.connectors import MailboxSettingsUpdate
from chalicelib.services import poll_schedule as rhythm
from chalicelib.services.mail_in.rules import PollResult
from chalicelib.services.mailboxes import (
    MailboxDirectory,
    MailboxSettingsService,
    mailbox_failure,
)
from chalicelib.services.poll_schedule import PollState
from tests.support.mailbox_fakes import FakeCipher, FakeLeases, FakeMailboxRepository

T0 = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
MAX = timedelta(minutes=15)


def minutes(state: PollState, now: datetime) -> float:
    assert state.next_poll_on is not None
    return (state.next_poll_on - now).total_seconds() / 60


# --- the decisions ---------------------------------------------------------------------------


def test_saved_settings_are_due_in_five_minutes_and_disabled_ones_never():
    assert minutes(rhythm.after_saved(T0, enabled=True), T0) == 5
    assert rhythm.after_saved(T0, enabled=False).next_poll_on is None


def test_each_empty_poll_doubles_the_wait_up_to_the_maximum():
    state, waits = rhythm.after_mail(T0), []
    now = T0
    for _ in range(5):
        now = state.next_poll_on or now
        state = rhythm.after_empty(state, now, MAX)
        waits.append(minutes(state, now))
    assert waits == [10, 15, 15, 15, 15]
    # The operator's maximum (AGORA_MAIL_POLL_MAX_MINUTES) is the cap: 5 * 2**4 = 80 > 60.
    longer = rhythm.after_empty(PollState(T0, empty_polls=3), T0, timedelta(minutes=60))
    assert minutes(longer, T0) == 60


def test_found_mail_brings_the_mailbox_back_to_five_minutes():
    tired = PollState(T0, empty_polls=7)
    assert minutes(rhythm.after_mail(T0), T0) == 5
    assert rhythm.after_mail(T0).empty_polls == 0
    assert minutes(rhythm.after_empty(rhythm.after_mail(T0), T0, MAX), T0) == 10
    assert tired.empty_polls == 7


def test_failures_wait_thirty_minutes_doubling_to_six_hours():
    state, waits = PollState(T0), []
    for _ in range(7):
        state = rhythm.after_failure(state, T0)
        waits.append(minutes(state, T0))
    assert waits == [30, 60, 120, 240, 360, 360, 360]
    assert state.failures == 7


def test_only_the_third_failure_in_a_row_tells_the_administrators():
    told, state = [], PollState(T0)
    for _ in range(6):
        after = rhythm.after_failure(state, T0)
        told.append(rhythm.tells_administrators(state, after))
        state = after
    assert told == [False, False, True, False, False, False]
    # A good poll ends the streak: the next streak tells again at its third.
    state = rhythm.after_mail(T0)
    for _ in range(3):
        after = rhythm.after_failure(state, T0)
        last = rhythm.tells_administrators(state, after)
        state = after
    assert last is True


def test_poll_now_is_due_at_once_and_keeps_the_failure_streak():
    failing = PollState(T0 + timedelta(hours=2), empty_polls=2, failures=2)
    now = rhythm.after_poll_now(failing, T0)
    assert now.next_poll_on == T0 and now.failures == 2 and now.empty_polls == 0


def test_a_dispatch_takes_what_falls_due_before_its_next_run():
    # A poll that ran 20 s after its dispatch at 08:00 is due again at 08:15:20; the dispatch
    # of 08:15 takes it rather than leaving it to 08:20.
    due = T0 + timedelta(minutes=15, seconds=20)
    assert rhythm.is_due(due, rhythm.dispatch_horizon(T0 + timedelta(minutes=15)))
    assert not rhythm.is_due(due, rhythm.dispatch_horizon(T0 + timedelta(minutes=10)))
    assert rhythm.is_due(None, T0)


# --- the poll job with the store's fakes -----------------------------------------------------


class Clock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Ingestor:
    """POP3 at the seam: `found` new mails per poll, or an error to raise."""

    found: int = 0
    error: BaseException | None = None
    polls: int = 0

    def poll(self, mailbox: Any, expired: Any) -> PollResult:
        self.polls += 1
        if self.error is not None:
            raise self.error
        return PollResult(mailbox=mailbox.key, seen=self.found, posted=self.found)


def fleet(clock: Clock, *scopes: str) -> tuple[MailboxDirectory, FakeMailboxRepository]:
    store = FakeMailboxRepository()
    service = MailboxSettingsService(store, FakeCipher(), clock, max_wait=MAX)
    for scope in scopes:
        update = MailboxSettingsUpdate.model_validate(
            {
                "serverName": "pop.example.org",
                "serverPort": 995,
                "serverUsername": scope,
                "serverPassword": "secret",
                "isEnabled": True,
                "isSSL": True,
                "deleteProcessed": False,
            }
        )
        service._save(scope, "emailToPost", update, "editor")
    return MailboxDirectory(service), store


def poll(directory: MailboxDirectory, clock: Clock, ingestor: Ingestor, key: str, **kw: Any):
    leases = kw.pop("leases", FakeLeases())
    parts = MailPoll(directory, directory.settings, leases, lambda: ingestor, clock)
    return poll_mailbox(key, Deadline.unbounded(), parts, **kw)


def test_a_poll_that_finds_mail_is_due_in_five_minutes_an_empty_one_later():
    clock = Clock()
    directory, store = fleet(clock, "garden")
    poll(directory, clock, Ingestor(found=2), "post#garden")
    assert store.get("garden").next_poll_on == T0 + timedelta(minutes=5)
    clock.now = T0 + timedelta(minutes=5)
    poll(directory, clock, Ingestor(found=0), "post#garden")
    assert store.get("garden").next_poll_on == clock.now + timedelta(minutes=10)


def test_a_refused_login_is_done_with_backs_off_and_is_told_once_per_streak():
    clock = Clock()
    directory, store = fleet(clock, "garden")
    refused = Ingestor(error=MailboxError("pop3://x: log in (PASS) failed: -ERR", reason="login"))
    lines = []
    for _ in range(4):
        polled = poll(directory, clock, refused, "post#garden")
        assert polled.failure == "login" and not polled.retry
        lines.append(polled.line)
        clock.now = store.get("garden").next_poll_on
    record = store.get("garden")
    assert record.poll_failures == 4
    assert record.last_error.startswith("The mail server refused the user name or password")
    assert [type(e) for e in store.announcements] == [MailboxFailing]
    [told] = store.announcements
    assert told.failures == 3 and told.reason == "login" and told.group_id == "garden"
    # The job's decision to tell them is in the audit log, written with it, as the job's own.
    [emailed] = store.audit
    assert emailed.action == "mailbox.failureEmail" and emailed.group_id == "garden"
    assert (emailed.actor.system, emailed.actor.via) == ("poll-mailbox", "job")
    assert emailed.changes[0].after.startswith("The mail server refused the user name")
    assert store.count_failing() == 1
    # Fixed: the good poll ends the streak and leaves the failing index.
    poll(directory, clock, Ingestor(found=0), "post#garden")
    record = store.get("garden")
    assert record.poll_failures == 0 and record.last_error is None
    assert store.count_failing() == 0


def test_a_platform_fault_is_retried_and_changes_nothing_of_the_rhythm():
    clock = Clock()
    directory, store = fleet(clock, "garden")
    before = store.get("garden").next_poll_on
    polled = poll(directory, clock, Ingestor(error=RuntimeError("Throttling")), "post#garden")
    assert polled.retry and store.get("garden").next_poll_on == before
    assert store.get("garden").poll_failures == 0
    assert "inside Agora" in store.get("garden").last_error


def test_a_mailbox_polled_since_its_message_was_sent_is_skipped():
    clock = Clock()
    directory, store = fleet(clock, "garden")
    due_by = rhythm.dispatch_horizon(T0 + timedelta(minutes=5))
    clock.now = T0 + timedelta(minutes=5)
    ingestor = Ingestor(found=1)
    assert "seen 1" in poll(directory, clock, ingestor, "post#garden", due_by=due_by).line
    # The same message again (redelivered): the mailbox is due only in 5 minutes now.
    again = poll(directory, clock, ingestor, "post#garden", due_by=due_by)
    assert again.line == "post#garden: not due (polled since it was sent)"
    assert ingestor.polls == 1


def test_a_leased_mailbox_is_left_to_its_poller():
    clock = Clock()
    directory, _ = fleet(clock, "garden")
    leases = FakeLeases()
    leases.acquire_lease("post#garden", "other", T0, T0 + timedelta(minutes=5))
    polled = poll(directory, clock, Ingestor(found=1), "post#garden", leases=leases)
    assert polled.line == "post#garden: another worker is polling it"


def test_one_mailboxs_failure_never_fails_the_others_of_its_message():
    def fake_poll(key: str, deadline: Any, due_by: Any = None) -> Any:
        from chalicelib.jobs.mail_poll import MailboxPolled

        if key == "post#boom":
            raise RuntimeError("DynamoDB refused")
        return MailboxPolled(f"{key}: seen 0")

    polled = poll_many(["post#a", "post#boom", "post#b"], Deadline.unbounded(), poll=fake_poll)
    assert [p.retry for p in polled] == [False, True, False]
    assert polled[0].line == "post#a: seen 0" and polled[2].line == "post#b: seen 0"


def test_the_session_lost_and_a_server_that_is_not_pop3_are_the_mailboxs_own_failures():
    lost = mailbox_failure(SessionLost("the connection broke 4 times"), None)
    assert lost is not None and lost.reason == "connection"
    assert mailbox_failure(RuntimeError("AWS"), None) is None


def test_dispatch_sends_only_the_due_mailboxes_several_to_a_message():
    clock = Clock()
    scopes = [f"g{n:02d}" for n in range(23)]
    directory, store = fleet(clock, *scopes)
    sent: list[str] = []
    assert dispatch(source=directory, now=T0, send=sent.extend) == 0
    for scope in scopes[:12]:
        store.poll_due_at(scope, T0, not_since=T0)
    store.reads = 0
    assert dispatch(source=directory, now=T0, send=sent.extend) == 12
    assert store.reads == 12  # the due index read only what was due
    keys = [parse_message(body)[0] for body in sent]
    assert [len(k) for k in keys] == [10, 2]
    assert sorted(k for chunk in keys for k in chunk) == sorted(f"post#{s}" for s in scopes[:12])
    _, due_by, _ = parse_message(sent[0])
    assert due_by == rhythm.dispatch_horizon(T0)
    # Five minutes on, the saved ones are due too.
    sent.clear()
    assert dispatch(source=directory, now=T0 + timedelta(minutes=5), send=sent.extend) == 23


def test_batches_and_the_old_one_mailbox_message():
    assert batches([str(n) for n in range(25)], 10)[-1] == ["20", "21", "22", "23", "24"]
    assert parse_message('{"mailbox": "post#a"}') == (["post#a"], None, None)
