"""A rejected mail's notice goes to the outbox before its log entry is written, so the drain may
find it cannot send the notice (the address suppressed since, no group, SES refusing) before the
entry exists. The stored entry says `noticeSent` false whichever write comes first (CONTRACT §9,
§10: the administrator reads it in the mail log), and the log lists the entry either way; the
drain's note never shows as an entry of its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chalicelib.aws import client
from chalicelib.domain.mailboxes import Finish, Reserve
from chalicelib.settings import get_settings
from chalicelib.store.mail import ENTRY, MailRepository, NoticeClaims

MAILBOX = "post#garden"
ACCOUNT = "account-1"


def stored(entry_id: str) -> dict | None:
    return stored_at(ENTRY + entry_id)


def stored_at(sk: str) -> dict | None:
    item = client("dynamodb").get_item(
        TableName=get_settings().table_name("mail"),
        Key={"mailbox": {"S": MAILBOX}, "sk": {"S": sk}},
        ConsistentRead=True,
    )
    return item.get("Item")


def rejected(log: MailRepository, entry_id: str, when: datetime, *, told: bool) -> Finish:
    """The poll's outcome of a rejected mail, its notice due (`told`) as the decider leaves it."""
    entry = log.new_entry(
        MAILBOX, entry_id, when, sender="stranger@example.net", subject=entry_id, notice_sent=told
    )
    return Finish(entry, f"uidl-{entry_id}", "rejected", "unknown sender")


def listed(log: MailRepository) -> dict[str, bool]:
    """The mailbox's log as its pages list it (all, and the rejected): entry id -> noticeSent."""
    everything = log.page_newest_first(MAILBOX, limit=50, after=None)
    only_rejected = log.page_newest_first(MAILBOX, limit=50, after=None, status="rejected")
    assert [e.entry_id for e in everything] == [e.entry_id for e in only_rejected]
    return {e.entry_id: e.notice_sent for e in everything}


@pytest.fixture
def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def test_the_drain_failing_before_the_entry_is_written_leaves_notice_sent_false(aws, now):
    log, claims = MailRepository(), NoticeClaims()
    # The drain first: no entry yet. What it writes is no entry of the log.
    assert claims.not_sent(MAILBOX, "early", now) is False
    assert log.entry(MAILBOX, "early") is None
    assert log.entries(MAILBOX, ["early"]) == {}
    assert listed(log) == {}
    # Then the poll writes the entry, told a notice, with the mail's marker.
    log.record(MAILBOX, ACCOUNT, [rejected(log, "early", now, told=True)])
    entry = log.entry(MAILBOX, "early")
    assert entry is not None and entry.status == "rejected" and entry.notice_sent is False
    assert stored("early")["notice_sent"] == {"BOOL": False}
    assert "expires" not in stored("early")  # the note's TTL went with it: the entry stays
    assert listed(log) == {"early": False}
    assert log.handled_uidls(MAILBOX, ACCOUNT, ["uidl-early"])["uidl-early"].entry_id == "early"


def test_the_drain_failing_after_the_entry_is_written_leaves_notice_sent_false(aws, now):
    log, claims = MailRepository(), NoticeClaims()
    log.record(MAILBOX, ACCOUNT, [rejected(log, "late", now, told=True)])
    assert listed(log) == {"late": True}
    assert claims.not_sent(MAILBOX, "late", now) is True
    assert listed(log) == {"late": False}
    assert stored("late")["notice_sent"] == {"BOOL": False}
    # Written again (a retry of the same outcome): the notice still did not go.
    log.record(MAILBOX, ACCOUNT, [rejected(log, "late", now, told=True)])
    assert listed(log) == {"late": False}


def record_rejected(log: MailRepository, now: datetime, *entries: tuple[str, bool]) -> None:
    """Rejected mails (entry id, told a notice) a second apart, written in one call."""
    steps = [
        rejected(log, entry_id, now + timedelta(seconds=n), told=told)
        for n, (entry_id, told) in enumerate(entries)
    ]
    log.record(MAILBOX, ACCOUNT, steps)


def test_an_entry_whose_notice_went_says_so_and_others_are_untouched(aws, now):
    log = MailRepository()
    record_rejected(log, now, ("told", True), ("untold", False))
    assert listed(log) == {"told": True, "untold": False}
    assert "notice_sent" not in stored("untold")  # absent reads false, as before notices


def test_the_drain_repeating_itself_before_the_entry_changes_nothing(aws, now):
    log, claims = MailRepository(), NoticeClaims()
    assert claims.not_sent(MAILBOX, "twice", now) is False
    assert claims.not_sent(MAILBOX, "twice", now) is False  # an event told again
    assert listed(log) == {}
    log.record(MAILBOX, ACCOUNT, [rejected(log, "twice", now, told=True)])
    assert listed(log) == {"twice": False}


def test_a_mail_counted_before_its_rejection_keeps_the_drains_false(aws, now):
    """Its attempt is written first (status processing), then the outbox, the drain, the outcome."""
    log, claims = MailRepository(), NoticeClaims()
    log.record(MAILBOX, ACCOUNT, [Reserve(rejected(log, "counted", now, told=False).entry)])
    assert claims.not_sent(MAILBOX, "counted", now) is True
    log.record(MAILBOX, ACCOUNT, [rejected(log, "counted", now, told=True)])
    assert listed(log) == {"counted": False}


def test_a_refusal_no_entry_ever_follows_expires_with_the_claims(aws, now):
    from chalicelib.store.mail import NOTICE_KEPT, REFUSED

    NoticeClaims().not_sent(MAILBOX, "orphan", now)
    assert stored("orphan") is None  # nothing at the entry's key: no entry to come is replaced
    refusal = stored_at(REFUSED + "orphan")
    assert refusal is not None and refusal["entry_id"] == {"S": "orphan"}
    assert not {"received_key", "status_mailbox"} & set(refusal)  # in no index of the log
    expires = datetime.fromtimestamp(int(refusal["expires"]["N"]), UTC)
    assert expires == now + NOTICE_KEPT


def test_a_poll_that_died_after_its_outbox_and_counted_again_keeps_the_drains_false(aws, now):
    """The poll counts the mail (processing), writes its outbox and dies; the drain cannot send
    the notice (the entry says false); the retry counts the mail again, a batch put of the whole
    entry that knows nothing of the drain's false, then writes its outcome told a notice: the
    entry says false (it said true: last session's review)."""
    log, claims = MailRepository(), NoticeClaims()
    counted = Reserve(rejected(log, "retried", now, told=False).entry)
    log.record(MAILBOX, ACCOUNT, [counted])
    assert claims.not_sent(MAILBOX, "retried", now) is True
    assert stored("retried")["notice_sent"] == {"BOOL": False}
    log.record(MAILBOX, ACCOUNT, [counted])  # the retry's count: the stored false is replaced
    log.record(MAILBOX, ACCOUNT, [rejected(log, "retried", now, told=True)])
    assert listed(log) == {"retried": False}
    assert stored("retried")["notice_sent"] == {"BOOL": False}
    # Counted and settled in one call (a retry that reads the mail at once): false all the same.
    log.record(MAILBOX, ACCOUNT, [counted, rejected(log, "retried", now, told=True)])
    assert listed(log) == {"retried": False}


def test_a_note_the_last_release_wrote_at_the_entrys_key_still_says_false(aws, now):
    """The last release's drain noted the false on an item at the entry's key (keys,
    `notice_sent` false, a TTL) when the entry was not written yet: the entry written over it
    says false, and the note is no entry of the log until then."""
    from chalicelib.store.mail import NOTICE_KEPT

    client("dynamodb").put_item(
        TableName=get_settings().table_name("mail"),
        Item={
            "mailbox": {"S": MAILBOX},
            "sk": {"S": ENTRY + "old-note"},
            "notice_sent": {"BOOL": False},
            "expires": {"N": str(int((now + NOTICE_KEPT).timestamp()))},
        },
    )
    log = MailRepository()
    assert log.entry(MAILBOX, "old-note") is None and listed(log) == {}
    log.record(MAILBOX, ACCOUNT, [rejected(log, "old-note", now, told=True)])
    assert listed(log) == {"old-note": False}
    assert "expires" not in stored("old-note")


def test_a_refusal_noted_for_one_entry_leaves_the_others_told(aws, now):
    log, claims = MailRepository(), NoticeClaims()
    claims.not_sent(MAILBOX, "refused", now)
    record_rejected(log, now, ("refused", True), ("other", True))
    assert listed(log) == {"refused": False, "other": True}
