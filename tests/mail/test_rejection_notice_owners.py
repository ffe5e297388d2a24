"""The rejection notice's failures have owners (CONTRACT §9 `noticeSent`): a notice the drain could
not send leaves its entry's `noticeSent` false and counts `RejectionNoticeNotSent` by reason for
the operator; a sender the decider could not check (DNS) is counted too. And the notice reads the
mailbox's group through the planner's per-poll read, not once more."""

from __future__ import annotations

from email.utils import make_msgid

import pytest

from chalicelib import deps
from chalicelib.clock import utc_now
from chalicelib.mail.authentication import SenderVerifier
from tests.mail import test_rejection_notices as notices
from tests.mail.test_authentication import FakeDns
from tests.mail.test_rejection_notices import (
    DOMAIN,
    log_of,
    notices_to,
    push,
    raw_mail,
    verifier,
)
from tests.support.dkim_signing import signed
from tests.support.emf import emf, json_lines, value
from tests.support.notify import text_of
from tests.support.outbox import drain

world = notices.world  # the notices' community (a fixture)


class CountingGroups:
    """The configured groups, counting each read of one group."""

    def __init__(self) -> None:
        self.real = deps.groups()
        self.reads: list[str] = []

    def get(self, group_id: str):
        self.reads.append(group_id)
        return self.real.get(group_id)

    def __getattr__(self, name: str):
        return getattr(self.real, name)


def test_under_verify_a_rejected_mail_reads_its_group_once_for_plan_and_notice(world, client):
    """A member without the right to post, under `verify`: the planner reads the group (the
    mailbox's inbound address, the permission) and the notice's check of the sender needs the
    same address; one read serves both."""
    groups = CountingGroups()
    raw = raw_mail("ann@example.org", "Not allowed here", to=f"closed@{DOMAIN}")
    assert "rejected 1" in push(raw, f"closed@{DOMAIN}", verifier=verifier(), groups=groups)
    assert log_of(client, world, world.closed)["Not allowed here"]["status"] == "rejected"
    assert groups.reads.count(world.closed) == 1


# --- a notice the drain cannot send: the entry says so, the operator's metric counts it ----------


def drained_metrics(monkeypatch, capsys) -> dict[str, float]:
    """Drain as the drain-outbox function does in Lambda: its RejectionNoticeNotSent by Reason."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-DrainOutbox")
    capsys.readouterr()
    drain()
    out = capsys.readouterr().out
    lines = emf(json_lines(out), "RejectionNoticeNotSent")
    return {line["Reason"]: value(line, "RejectionNoticeNotSent") for line in lines}


def test_a_notice_whose_address_is_suppressed_since_the_mail_is_not_sent_and_says_so(
    world, client, monkeypatch, capsys
):
    push(raw_mail("stranger@example.net", "Suppressed since"))
    assert log_of(client, world, world.garden)["Suppressed since"]["noticeSent"] is True
    deps.suppressions().suppress("stranger@example.net", "bounce", "550", "f1", utc_now())
    assert drained_metrics(monkeypatch, capsys) == {"suppressed": 1}
    assert notices_to("stranger@example.net") == []
    entry = log_of(client, world, world.garden)["Suppressed since"]
    assert entry["status"] == "rejected" and entry["noticeSent"] is False


class OutboxDrainedAtOnce:
    """The real outbox, drained the moment it is written (before the mail's entry is), the
    sender's address suppressed in between: the drain cannot send the notice and finds no entry
    to write `noticeSent` on yet."""

    def __init__(self, address: str) -> None:
        self.real, self.address = deps.outbox(), address

    def save(self, announcements) -> None:
        self.real.save(announcements)
        deps.suppressions().suppress(self.address, "bounce", "550", "f2", utc_now())
        drain()


def test_a_notice_the_drain_cannot_send_before_the_entry_is_written_says_so(
    world, client, mailbox, monkeypatch, capsys
):
    """The entry, written after the drain, says `noticeSent` false (it said true: issue 60's
    review), and the operator's metric counts it."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-PollMailbox")
    mailbox.deliver(raw_mail("stranger@example.net", "Drained first"))
    outbox = OutboxDrainedAtOnce("stranger@example.net")
    capsys.readouterr()
    result = deps.mail_ingestor(outbox=outbox).poll(mailbox.connector(world.garden), lambda: False)
    assert result.rejected == 1
    lines = emf(json_lines(capsys.readouterr().out), "RejectionNoticeNotSent")
    assert {line["Reason"]: value(line, "RejectionNoticeNotSent") for line in lines} == {
        "suppressed": 1
    }
    assert notices_to("stranger@example.net") == []
    entry = log_of(client, world, world.garden)["Drained first"]
    assert entry["status"] == "rejected" and entry["noticeSent"] is False
    drain()  # nothing left to tell: the entry stays as it is
    assert log_of(client, world, world.garden)["Drained first"]["noticeSent"] is False


def forget_claims() -> None:
    """The day's notice claims gone, as their TTL removes them (store/mail.py NOTICE_KEPT)."""
    from chalicelib.aws import client as aws_client
    from chalicelib.settings import get_settings

    table, dynamodb = get_settings().table_name("mail"), aws_client("dynamodb")
    for item in dynamodb.scan(TableName=table)["Items"]:
        if item["mailbox"]["S"].startswith("notice#"):
            dynamodb.delete_item(TableName=table, Key={k: item[k] for k in ("mailbox", "sk")})


def test_a_notice_told_after_its_claim_expired_is_not_sent_and_says_so(
    world, client, monkeypatch, capsys
):
    """A notice whose event is told after its claim is gone: not sent, and not silently (the
    drain answered "sent already" and the entry kept saying it was)."""
    push(raw_mail("stranger@example.net", "Claim gone"))
    forget_claims()
    assert drained_metrics(monkeypatch, capsys) == {"expired": 1}
    assert notices_to("stranger@example.net") == []
    assert log_of(client, world, world.garden)["Claim gone"]["noticeSent"] is False


def test_a_notice_told_again_after_it_went_sends_nothing_more_and_stays_sent(
    world, client, monkeypatch, capsys
):
    """A redrive tells events already told: the claim (kept longer than any redrive reaches)
    says the notice went, and nothing is counted as not sent."""
    from chalicelib.domain.announcements import RejectionNoticeDue
    from chalicelib.store.mail import NoticeClaims

    push(raw_mail("stranger@example.net", "Told twice"))
    assert drained_metrics(monkeypatch, capsys) == {}
    assert len(notices_to("stranger@example.net")) == 1
    entry = log_of(client, world, world.garden)["Told twice"]
    day = utc_now().date().isoformat()
    event = RejectionNoticeDue(
        mailbox=f"post#{world.garden}",
        group_id=world.garden,
        log_entry_id=NoticeClaims().holder("stranger@example.net", day) or "",
        to="stranger@example.net",
        subject="Told twice",
        message_id=None,
        reason="unknown sender",
        day=day,
    )
    capsys.readouterr()
    assert deps.rejection_notices().tell(event) is False
    assert emf(json_lines(capsys.readouterr().out), "RejectionNoticeNotSent") == []
    assert len(notices_to("stranger@example.net")) == 1
    assert log_of(client, world, world.garden)["Told twice"] == entry


@pytest.mark.fast
def test_claims_outlive_every_redrive_of_the_outbox():
    """The drain's dead letters are told again by redrive-outbox as long as they are kept: a
    claim kept longer is there for every such event, so a missing one means never sent."""
    from datetime import timedelta

    from chalicelib.store.mail import NOTICE_KEPT
    from tests.fast.test_alarm_table import built

    for stage in ("dev", "prod"):
        dead = built(stage)["Resources"]["OutboxDeadLetterQueue"]["Properties"]
        assert NOTICE_KEPT > timedelta(seconds=dead["MessageRetentionPeriod"])


def test_a_notice_ses_refuses_is_not_sent_and_says_so(world, client, monkeypatch, capsys):
    from chalicelib.aws import client as aws_client

    push(raw_mail("stranger@example.net", "Refused by SES"))
    aws_client("ses").delete_identity(Identity="community.example")  # no sender SES accepts
    assert drained_metrics(monkeypatch, capsys) == {"refused": 1}
    assert notices_to("stranger@example.net") == []
    assert log_of(client, world, world.garden)["Refused by SES"]["noticeSent"] is False
    drain()  # told again: nothing more is sent, nothing changes back
    assert log_of(client, world, world.garden)["Refused by SES"]["noticeSent"] is False


def test_a_notice_ses_refuses_between_a_crashed_poll_and_its_retry_says_not_sent(
    world, client, mailbox, monkeypatch, capsys
):
    """The poll counts the mail (processing), writes the notice's event to the outbox and dies;
    the drain finds SES refusing; the retry counts the mail again and writes its outcome told a
    notice. The log says the notice did not go (it said it did: the retry's count replaced the
    drain's false, last session's review)."""
    from chalicelib.aws import client as aws_client

    mailbox.deliver(raw_mail("stranger@example.net", "Refused between"))
    config = mailbox.connector(world.garden)
    with pytest.raises(notices.Crash):
        deps.mail_ingestor(outbox=notices.OutboxThenDie()).poll(config, lambda: False)
    # Counted (listed as failed until its outcome is written), its event in the outbox.
    assert log_of(client, world, world.garden)["Refused between"]["status"] == "failed"
    aws_client("ses").delete_identity(Identity="community.example")  # no sender SES accepts
    assert drained_metrics(monkeypatch, capsys) == {"refused": 1}
    assert deps.mail_ingestor().poll(config, lambda: False).rejected == 1
    entry = log_of(client, world, world.garden)["Refused between"]
    assert entry["status"] == "rejected" and entry["noticeSent"] is False
    assert drained_metrics(monkeypatch, capsys) == {}  # the retry's event: counted once only
    assert notices_to("stranger@example.net") == []
    assert log_of(client, world, world.garden)["Refused between"]["noticeSent"] is False


def test_a_sender_the_dns_failure_left_unchecked_is_counted(world, client, monkeypatch, capsys):
    """Under verify the notice needs the sender's DKIM check; a DNS failure leaves the sender
    untold, and the operator sees it (not only the log)."""
    unreachable = SenderVerifier(FakeDns({}, failing={"_dmarc.signed.example"}))
    raw = raw_mail("dave@signed.example", "Unchecked").replace(b"\n", b"\r\n")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-ReceiveMail")
    capsys.readouterr()
    assert "rejected 1" in push(signed(raw, "signed.example"), verifier=unreachable)
    lines = emf(json_lines(capsys.readouterr().out), "RejectionNoticeNotSent")
    assert {line["Reason"]: value(line, "RejectionNoticeNotSent") for line in lines} == {
        "unchecked": 1
    }
    assert log_of(client, world, world.garden)["Unchecked"]["noticeSent"] is False


# --- a polled mail too large to download: its header block (TOP) tells its sender ---------------


def test_a_polled_mail_too_large_to_download_is_answered_from_its_headers(world, client, mailbox):
    """As a pushed one is (CONTRACT §9: a rejected mail of a proven sender is told why): the
    mail's header block alone is read with TOP, for its entry and its notice."""
    message_id = make_msgid(domain="mail.example")
    raw = raw_mail("ann@example.org", "Photos by POP3", "x" * 5000, message_id=message_id)
    mailbox.deliver(raw)
    config = mailbox.connector(world.garden)
    assert deps.mail_ingestor(max_bytes=2000).poll(config, lambda: False).rejected == 1
    drain()
    [notice] = notices_to("ann@example.org")
    assert notice["In-Reply-To"] == message_id
    assert "Photos by POP3" in text_of(notice) and "too large" in text_of(notice)
    entry = log_of(client, world, world.garden)["Photos by POP3"]
    assert entry["status"] == "rejected" and "not downloaded" in entry["reason"]
    assert entry["from"] == "ann@example.org" and entry["noticeSent"] is True
    assert mailbox.count() == 0  # deleted as a handled mail


class AskedDns(FakeDns):
    """DNS that notes every name it is asked."""

    def __init__(self) -> None:
        super().__init__({})
        self.asked: list[str] = []

    def __call__(self, name: str):
        self.asked.append(name)
        return super().__call__(name)


def test_under_verify_a_polled_mail_too_large_to_download_gets_no_notice(world, client, mailbox):
    """Its DKIM signature covers a body never downloaded: its sender cannot be proven, and no
    DNS look-up is spent on it."""
    dns = AskedDns()
    mailbox.deliver(raw_mail("dave@signed.example", "Large and signed", "x" * 5000))
    ingestor = deps.mail_ingestor(max_bytes=2000, verifier=SenderVerifier(dns))
    assert ingestor.poll(mailbox.connector(world.garden), lambda: False).rejected == 1
    drain()
    assert notices_to("dave@signed.example") == [] and dns.asked == []
    entry = log_of(client, world, world.garden)["Large and signed"]
    assert entry["from"] == "dave@signed.example" and entry["noticeSent"] is False
