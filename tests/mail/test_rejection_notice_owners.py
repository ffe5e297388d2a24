"""The rejection notice's failures have owners (CONTRACT §9 `noticeSent`): a notice the drain could
not send leaves its entry's `noticeSent` false and counts `RejectionNoticeNotSent` by reason for
the operator; a sender the decider could not check (DNS) is counted too. And the notice reads the
mailbox's group through the planner's per-poll read, not once more."""

from __future__ import annotations

from chalicelib import deps
from chalicelib.clock import utc_now
from tests.mail import test_rejection_notices as notices
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


def test_a_notice_ses_refuses_is_not_sent_and_says_so(world, client, monkeypatch, capsys):
    from chalicelib.aws import client as aws_client

    push(raw_mail("stranger@example.net", "Refused by SES"))
    aws_client("ses").delete_identity(Identity="community.example")  # no sender SES accepts
    assert drained_metrics(monkeypatch, capsys) == {"refused": 1}
    assert notices_to("stranger@example.net") == []
    assert log_of(client, world, world.garden)["Refused by SES"]["noticeSent"] is False
    drain()  # told again: nothing more is sent, nothing changes back
    assert log_of(client, world, world.garden)["Refused by SES"]["noticeSent"] is False


def test_a_sender_the_dns_failure_left_unchecked_is_counted(world, client, monkeypatch, capsys):
    """Under verify the notice needs the sender's DKIM check; a DNS failure leaves the sender
    untold, and the operator sees it (not only the log)."""
    from chalicelib.mail.authentication import SenderVerifier
    from tests.mail.test_authentication import FakeDns

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
