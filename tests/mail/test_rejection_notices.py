"""The sender learns why (CONTRACT §9): a rejected mail of a proven sender gets one notice (RFC 3834)
naming it and saying why, at most one a sender a day, never to automatic mail; `noticeSent` in
the mail log. Through the real pipeline: pushed mail (jobs/mail_push.py), polled mail (Dovecot),
the outbox drain and moto's SES, read back as a mail client would."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from email.message import EmailMessage
from email.utils import make_msgid

import pytest

from chalicelib import deps
from chalicelib.clock import utc_now
from chalicelib.jobs import mail_push
from chalicelib.mail.authentication import SenderVerifier
from tests.fixtures import auth
from tests.mail.test_authentication import FakeDns
from tests.support.dkim_signing import SELECTOR, dkim_record, signed
from tests.support.mail_fakes import CRASH_STEPS, Crash, CrashAt
from tests.support.mail_messages import email_message
from tests.support.notify import sent_mail, text_of, verify_sender_domain
from tests.support.outbox import drain

DOMAIN = "in.example.org"
GARDEN = f"garden@{DOMAIN}"


@pytest.fixture
def world(community, kms_key, monkeypatch):
    from chalicelib.settings import reload_settings

    monkeypatch.setenv("AGORA_MAIL_INBOUND_DOMAIN", DOMAIN)
    reload_settings()
    c = community
    c.garden = c.group("garden")
    c.closed = c.group(
        "closed",
        permissions={
            "post": ["administrator"],
            "comment": ["member", "moderator", "administrator"],
            "commentWithoutApproval": ["moderator", "administrator"],
        },
    )
    c.ann = c.user("ann", {c.garden: "member", c.closed: "member"}, email="ann@example.org")
    c.load()
    for group in (c.garden, c.closed):
        enable(group)
    verify_sender_domain()
    yield c
    monkeypatch.delenv("AGORA_MAIL_INBOUND_DOMAIN")
    reload_settings()


def enable(group_id: str) -> None:
    from chalicelib.schemas.connectors import MailboxSettingsUpdate

    update = MailboxSettingsUpdate.model_validate({"isEnabled": True})
    deps.mailbox_settings_service().update_email_to_post(deps.groups().get(group_id), update, "t")


def raw_mail(sender: str, subject: str, body: str = "Hello all.", **kw) -> bytes:
    return email_message(sender, subject, body, to=kw.pop("to", GARDEN), **kw).as_bytes()


def push(raw: bytes, to: str = GARDEN, **ingestor) -> str:
    parts = replace(mail_push.composed(), ingestor=lambda: deps.mail_ingestor(**ingestor))
    [line] = mail_push.deliver(raw, [to], parts=parts)
    return line


def log_of(client, world, group_id: str) -> dict[str, dict]:
    """The group's mail log as the API answers it, by subject."""
    path = f"/api/v1/en_US/connector/email-to-post/{group_id}/log"
    response = client.http.get(path, headers=auth(world.users[0]["id"]))
    assert response.status_code == 200
    return {e["subject"]: e for e in json.loads(response.body)["object"]["entries"]}


def notices_to(address: str) -> list[EmailMessage]:
    return [m for m in sent_mail() if m["To"].addresses[0].addr_spec == address]


@pytest.mark.parametrize(
    ("sender", "to", "body", "words"),
    [
        ("stranger@example.net", GARDEN, "Hi.", "no member of the community has that email"),
        ("ann@example.org", f"closed@{DOMAIN}", "Hi.", "may not start posts in this group"),
        ("ann@example.org", GARDEN, "", "It had no text of yours"),
    ],
    ids=["not a member", "no permission to post", "no text"],
)
def test_a_rejected_mail_of_a_proven_sender_gets_one_notice_saying_why(
    world, client, sender, to, body, words
):
    message_id = make_msgid(domain="mail.example")
    raw = raw_mail(sender, "Plant swap on Sunday", body, to=to, message_id=message_id)
    assert "rejected 1" in push(raw, to)
    drain()
    drain()  # a second drain tells nothing again
    [notice] = notices_to(sender)
    assert notice["Auto-Submitted"] == "auto-replied"
    assert notice["In-Reply-To"] == message_id and notice["References"] == message_id
    assert notice["From"].addresses[0].addr_spec == "noreply@community.example"
    assert notice["List-Id"] is None and notice["List-Unsubscribe"] is None
    assert "Plant swap on Sunday" in str(notice["Subject"])
    text = text_of(notice)
    assert "Your email “Plant swap on Sunday”" in text and "was not posted" in text
    assert words in text and "What to do:" in text
    group = world.garden if to == GARDEN else world.closed
    entry = log_of(client, world, group)["Plant swap on Sunday"]
    assert entry["status"] == "rejected" and entry["noticeSent"] is True


def test_a_comment_naming_no_post_is_answered_under_the_communitys_name(world):
    from chalicelib.schemas.connectors import MailboxSettingsUpdate

    update = MailboxSettingsUpdate.model_validate(
        {"isEnabled": True, "emailAddress": f"replies@{DOMAIN}"}
    )
    deps.mailbox_settings_service().update_email_to_comment(update, "t")
    subject = "Re: https://community.example/garden/no-such-post"
    raw = raw_mail("ann@example.org", subject, "Agreed.", to=f"replies@{DOMAIN}")
    assert "rejected 1" in push(raw, f"replies@{DOMAIN}")
    drain()
    [notice] = notices_to("ann@example.org")
    text = text_of(notice)
    assert "to the community's comment address was not posted" in text
    assert "named no post or comment that exists" in text
    entry = next(iter(deps.mail().page_newest_first("comment#system", limit=5, after=None)))
    assert entry.status == "rejected" and entry.notice_sent is True


@pytest.mark.parametrize(
    "headers",
    [
        {"Auto-Submitted": "auto-replied"},
        {"Precedence": "list"},
        {"Precedence": "bulk"},
        {"List-Id": "Seeds <seeds.lists.example.net>"},
        {"Return-Path": "<>"},
    ],
    ids=["auto-reply", "precedence list", "precedence bulk", "list-id", "empty return path"],
)
def test_automatic_bounce_and_list_mail_gets_no_notice(world, client, headers):
    push(raw_mail("stranger@example.net", "Automatic", headers=headers))
    drain()
    assert notices_to("stranger@example.net") == []
    assert log_of(client, world, world.garden)["Automatic"]["noticeSent"] is False


def test_at_most_one_notice_a_sender_a_day(world, client):
    # One moment for both pushes: on the machine's clock a run across UTC midnight would push
    # them on two days, each with its own notice.
    moment = utc_now()
    for subject in ("First", "Second"):
        push(raw_mail("stranger@example.net", subject), clock=lambda: moment)
    drain()
    assert len(notices_to("stranger@example.net")) == 1
    log = log_of(client, world, world.garden)
    assert log["First"]["noticeSent"] is True and log["Second"]["noticeSent"] is False
    assert log["Second"]["status"] == "rejected"


def test_the_next_day_the_sender_is_told_again(world, client):
    push(raw_mail("stranger@example.net", "Today"))
    tomorrow = utc_now() + timedelta(days=1)
    push(raw_mail("stranger@example.net", "Tomorrow"), clock=lambda: tomorrow)
    drain()
    assert len(notices_to("stranger@example.net")) == 2
    assert log_of(client, world, world.garden)["Tomorrow"]["noticeSent"] is True


def test_a_suppressed_address_gets_no_notice(world, client):
    deps.suppressions().suppress("stranger@example.net", "bounce", "550", "f1", utc_now())
    push(raw_mail("stranger@example.net", "Bounced before"))
    drain()
    assert notices_to("stranger@example.net") == []
    assert log_of(client, world, world.garden)["Bounced before"]["noticeSent"] is False


def test_a_pushed_mail_too_large_to_take_is_answered_from_its_headers(world, client):
    message_id = make_msgid(domain="mail.example")
    raw = raw_mail("ann@example.org", "Holiday photos", "x" * 5000, message_id=message_id)
    assert "rejected 1" in push(raw, max_bytes=2000)
    push(raw, max_bytes=2000)  # delivered again (SES may): no second notice
    drain()
    [notice] = notices_to("ann@example.org")
    assert notice["In-Reply-To"] == message_id
    text = text_of(notice)
    assert "Holiday photos" in text and "too large" in text
    entry = log_of(client, world, world.garden)["Holiday photos"]
    assert entry["status"] == "rejected" and entry["noticeSent"] is True


# --- AGORA_MAIL_AUTH=verify: only a sender a DKIM signature proves is told -----------------------


def verifier() -> SenderVerifier:
    return SenderVerifier(
        FakeDns(
            {
                f"{SELECTOR}._domainkey.signed.example": [dkim_record()],
                "_dmarc.signed.example": ["v=DMARC1; p=reject"],
                "_dmarc.nodmarc.example": ["v=DMARC1; p=none"],
            }
        )
    )


def test_under_verify_a_signed_stranger_is_told_and_an_unsigned_one_is_not(world, client):
    dave = raw_mail("dave@signed.example", "Signed stranger").replace(b"\n", b"\r\n")
    push(signed(dave, "signed.example"), verifier=verifier())
    push(raw_mail("eve@nodmarc.example", "Unsigned stranger"), verifier=verifier())
    drain()
    assert len(notices_to("dave@signed.example")) == 1
    assert notices_to("eve@nodmarc.example") == []
    log = log_of(client, world, world.garden)
    assert log["Signed stranger"]["noticeSent"] is True
    assert log["Unsigned stranger"]["status"] == "rejected"
    assert log["Unsigned stranger"]["noticeSent"] is False


class CountingVerifier:
    """The verifier, counting the mails it checks (each a DKIM verification)."""

    def __init__(self, inner: SenderVerifier) -> None:
        self.inner = inner
        self.checked: list[bytes] = []

    def verify(self, raw: bytes, from_domain: str, **kw):
        self.checked.append(raw)
        return self.inner.verify(raw, from_domain, **kw)


def test_under_verify_a_members_mail_is_checked_once_for_its_plan_and_its_notice(world, client):
    """The planner verified the member's signature before it refused the post: the notice
    reuses that verdict rather than run DKIM on the same mail again."""
    counting = CountingVerifier(
        SenderVerifier(
            FakeDns(
                {
                    f"{SELECTOR}._domainkey.example.org": [dkim_record()],
                    "_dmarc.example.org": ["v=DMARC1; p=reject"],
                }
            )
        )
    )
    to = f"closed@{DOMAIN}"
    ann = raw_mail("ann@example.org", "Signed member", to=to).replace(b"\n", b"\r\n")
    assert "rejected 1" in push(signed(ann, "example.org"), to, verifier=counting)
    drain()
    [notice] = notices_to("ann@example.org")
    assert "may not start posts in this group" in text_of(notice)
    assert len(counting.checked) == 1
    # A stranger's mail is not planned as far as the verifier: the notice checks it itself.
    dave = raw_mail("dave@signed.example", "Signed stranger").replace(b"\n", b"\r\n")
    counting.inner = verifier()
    push(signed(dave, "signed.example"), verifier=counting)
    drain()
    assert len(notices_to("dave@signed.example")) == 1
    assert len(counting.checked) == 2


def test_under_verify_a_spoofed_mail_is_never_answered(world, client):
    """Its sender is not proven: the notice would go to the person the mail pretends to be."""
    forged = signed(
        raw_mail("ann@signed.example", "Forged").replace(b"\n", b"\r\n"), "signed.example"
    ).replace(b"Hello all.", b"Send money.")
    push(forged, verifier=verifier())
    drain()
    assert notices_to("ann@signed.example") == []
    entry = log_of(client, world, world.garden)["Forged"]
    assert entry["status"] == "rejected" and entry["noticeSent"] is False


# --- AGORA_MAIL_AUTH=header: the trusted server's dmarc=pass proves the sender ------------------


@pytest.mark.parametrize(("dmarc", "told"), [("pass", 1), ("none", 0), ("fail", 0)])
def test_under_header_only_a_dmarc_pass_of_the_trusted_server_is_told(world, client, dmarc, told):
    results = f"mx.community.example; dmarc={dmarc} header.from=example.net"
    raw = raw_mail("stranger@example.net", "Header", headers={"Authentication-Results": results})
    push(raw, authserv_id="mx.community.example")
    drain()
    assert len(notices_to("stranger@example.net")) == told
    assert log_of(client, world, world.garden)["Header"]["noticeSent"] is bool(told)


def test_under_header_a_pass_written_below_the_trusted_servers_own_header_counts_for_nothing(
    world, client
):
    """Only the topmost header of the trusted server counts (RFC 8601 §5): one the sender wrote
    lower down proves nothing."""
    raw = raw_mail("stranger@example.net", "Forged pass").replace(
        b"From:",
        b"Authentication-Results: mx.community.example; dmarc=none\n"
        b"Authentication-Results: mx.community.example; dmarc=pass\nFrom:",
        1,
    )
    push(raw, authserv_id="mx.community.example")
    drain()
    assert notices_to("stranger@example.net") == []
    entry = log_of(client, world, world.garden)["Forged pass"]
    assert entry["status"] == "rejected" and entry["noticeSent"] is False


def test_under_header_a_signed_mail_replayed_from_other_recipients_is_not_answered(world, client):
    """The planner's replay rule, read by the notice too (as under verify): a mail its sender
    sent to others, replayed to the mailbox, is rejected as not theirs to it; the trusted
    server's dmarc=pass is about the mail its sender sent, so no notice goes to them."""
    from chalicelib.schemas.connectors import MailboxSettingsUpdate

    update = MailboxSettingsUpdate.model_validate(
        {"isEnabled": True, "emailAddress": f"replies@{DOMAIN}"}
    )
    deps.mailbox_settings_service().update_email_to_comment(update, "t")
    results = "mx.community.example; dmarc=pass header.from=example.net"
    raw = raw_mail(
        "stranger@example.net",
        "Replayed",
        to="friends@example.net",
        headers={"Authentication-Results": results},
    )
    assert "rejected 1" in push(raw, f"replies@{DOMAIN}", authserv_id="mx.community.example")
    drain()
    assert notices_to("stranger@example.net") == []
    [entry] = deps.mail().page_newest_first("comment#system", limit=5, after=None)
    assert "sent to other recipients" in (entry.reason or "") and entry.notice_sent is False


def test_under_header_a_mail_rejected_for_its_unsigned_mime_headers_is_told_so(world, client):
    """A signed mail whose unsigned Content-Type was changed on the way is rejected (one
    reading, CONTRACT §9); its sender is proven (the trusted server's dmarc=pass) and told why:
    the signature leaves that header out, not that the mail was unsigned."""
    from tests.mail.test_signers_reading import GMAIL_HEADERS, gmail_forward, retyped

    mail = gmail_forward("stranger@example.net", "Retyped").replace(
        b"To: garden@community.example", f"To: {GARDEN}".encode()
    )
    signed_mail = signed(mail, "example.net", headers=GMAIL_HEADERS)
    results = b"Authentication-Results: mx.community.example; dkim=pass; dmarc=pass\r\n"
    raw = results + retyped(signed_mail, b'multipart/mixed; boundary="evil"')
    assert "rejected 1" in push(raw, authserv_id="mx.community.example")
    drain()
    [notice] = notices_to("stranger@example.net")
    text = text_of(notice)
    assert "signature leaves out a header that decides how its text is read" in text
    assert "not signed" not in text
    entry = log_of(client, world, world.garden)["Retyped"]
    assert entry["reason"].startswith("sender not verified: its unsigned Content-Type")
    assert entry["noticeSent"] is True


# --- polled mail: the same notice -----------------------------------------------------------------


def test_a_polled_rejected_mail_gets_its_notice(world, client, mailbox):
    mailbox.deliver(raw_mail("stranger@example.net", "Polled stranger"))
    result = deps.mail_ingestor().poll(mailbox.connector(world.garden), lambda: False)
    assert result.rejected == 1
    drain()
    [notice] = notices_to("stranger@example.net")
    assert "Polled stranger" in text_of(notice) and notice["Auto-Submitted"] == "auto-replied"
    assert log_of(client, world, world.garden)["Polled stranger"]["noticeSent"] is True


def test_workers_racing_on_one_senders_mails_send_one_notice(world, client, mailbox):
    """Eight mails of one sender in one chunk, planned side by side by four workers: one claims
    the day's notice (a conditional write), the others see it taken."""
    for i in range(8):
        mailbox.deliver(raw_mail("stranger@example.net", f"Race {i}"))
    result = deps.mail_ingestor(workers=4).poll(mailbox.connector(world.garden), lambda: False)
    assert result.rejected == 8
    drain()
    assert len(notices_to("stranger@example.net")) == 1
    told = [e["noticeSent"] for e in log_of(client, world, world.garden).values()]
    assert sorted(told) == [False] * 7 + [True]


class OutboxThenDie:
    """The real outbox, and the process dies right after its first save (before the entries
    are written)."""

    def __init__(self) -> None:
        self.real, self.armed = deps.outbox(), True

    def save(self, announcements) -> None:
        self.real.save(announcements)
        if self.armed:
            self.armed = False
            raise Crash("after the outbox")


def test_a_crash_between_the_outbox_and_the_entry_still_sends_one_notice(world, client, mailbox):
    """The retry finds its own claim of the day and announces the notice again; the drain sends
    it once."""
    mailbox.deliver(raw_mail("stranger@example.net", "Crashed"))
    config = mailbox.connector(world.garden)
    with pytest.raises(Crash):
        deps.mail_ingestor(outbox=OutboxThenDie()).poll(config, lambda: False)
    assert deps.mail_ingestor().poll(config, lambda: False).rejected == 1
    drain()
    assert len(notices_to("stranger@example.net")) == 1
    assert log_of(client, world, world.garden)["Crashed"]["noticeSent"] is True


def test_a_notice_drained_between_a_crash_and_its_retry_is_not_sent_again(world, client, mailbox):
    """The drain sends the notice before the crashed poll is retried; the retry finds its claim
    and announces the notice again, and that event sends nothing more (the retry's claim put
    the claim whole, its mark of the sending gone, and the sender got two notices)."""
    mailbox.deliver(raw_mail("stranger@example.net", "Drained between"))
    config = mailbox.connector(world.garden)
    with pytest.raises(Crash):
        deps.mail_ingestor(outbox=OutboxThenDie()).poll(config, lambda: False)
    drain()
    assert len(notices_to("stranger@example.net")) == 1
    assert deps.mail_ingestor().poll(config, lambda: False).rejected == 1
    drain()
    assert len(notices_to("stranger@example.net")) == 1
    assert log_of(client, world, world.garden)["Drained between"]["noticeSent"] is True


@pytest.mark.parametrize("step", CRASH_STEPS)
def test_a_crash_at_any_step_sends_one_notice_all_the_same(world, client, mailbox, step):
    mailbox.deliver(raw_mail("stranger@example.net", "Crash test"))
    config = mailbox.connector(world.garden)
    try:
        deps.mail_ingestor(**CrashAt(step).overrides()).poll(config, lambda: False)
    except Crash:
        deps.mail_ingestor().poll(config, lambda: False)
    drain()
    assert len(notices_to("stranger@example.net")) == 1
    assert log_of(client, world, world.garden)["Crash test"]["noticeSent"] is True


# --- the words: every reason a sender is told has them; the rest is never answered ---------------


@pytest.mark.fast
@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("unknown sender s@x.example", "no member of the community has that email address"),
        ("s@x.example may not post in group garden", "may not start posts"),
        ("s@x.example may not comment in group garden", "may not comment"),
        ("the subject names no existing post or comment", "named no post or comment"),
        ("the post you replied to no longer exists", "The post you replied to no longer"),
        ("the comment you replied to no longer exists", "The comment you replied to no longer"),
        ("the mailbox's group no longer exists", "The group this address belonged to"),
        ("larger than 10485760 bytes (12000000)", "too large"),
        ("nothing to post: no text", "It had no text of yours"),
        ("nothing to comment with: binary", "It had no text of yours"),
        ("the mail has no text to comment with", "It had no text of yours"),
        ("reply key of another member", "sent to another member"),
        (
            "sender not verified: x.example publishes no DMARC policy (…); a post by email needs "
            "a verified sender",
            "not signed (DKIM)",
        ),
        (
            "sender not verified: its unsigned Content-Type names another boundary than the "
            "signed body's own, so the DMARC result of mx.example may be about another reading "
            "of it",
            "the signature leaves out a header",
        ),
    ],
)
def test_each_reason_a_sender_is_told_has_plain_words(reason, said):
    from chalicelib.services.mail_in.rejections import words_for

    words = words_for(reason, "s@x.example")
    assert words is not None and said in words.why and words.what_to_do


@pytest.mark.fast
@pytest.mark.parametrize(
    "reason",
    [
        "spoofed: x.example publishes DMARC p=reject and the mail has no DKIM signature",
        "spoofed: DMARC failed at mx.example",
        "marked as spam by the receiving server",
        "cannot be read: no mail headers found",
        "no valid sender address: no address",
        "sender could not be verified: timed out, on every attempt (DMARC policy)",
    ],
)
def test_spoofed_spam_and_unreadable_mail_is_never_answered(reason):
    from chalicelib.services.mail_in.rejections import words_for

    assert words_for(reason, "s@x.example") is None
