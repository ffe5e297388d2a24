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
    item = client("dynamodb").get_item(
        TableName=get_settings().table_name("mail"),
        Key={"mailbox": {"S": MAILBOX}, "sk": {"S": ENTRY + entry_id}},
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


def test_an_entry_whose_notice_went_says_so_and_others_are_untouched(aws, now):
    log = MailRepository()
    log.record(
        MAILBOX,
        ACCOUNT,
        [
            rejected(log, "told", now, told=True),
            rejected(log, "untold", now + timedelta(seconds=1), told=False),
        ],
    )
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


def test_a_note_no_entry_ever_follows_expires_with_the_claims(aws, now):
    from chalicelib.store.mail import NOTICE_KEPT

    NoticeClaims().not_sent(MAILBOX, "orphan", now)
    note = stored("orphan")
    assert note is not None and note["notice_sent"] == {"BOOL": False}
    expires = datetime.fromtimestamp(int(note["expires"]["N"]), UTC)
    assert expires == now + NOTICE_KEPT
