"""The body reads only the signer's way (issue 58 item 1, CONTRACT §9's one reading): a signature
that leaves `Content-Type` unsigned, as Gmail's does, counts only while the signed body decides its
own reading (chalicelib/mail/unsigned_mime.py; bench/mime_signing.py counts real signers).

The attack: ann (a member, her domain at DMARC p=reject) forwards a mail Mallory wrote. Gmail
signs her mail without its Content-Type. Mallory, copied on it, puts a Content-Type of his own on
top whose boundary is a line of his forwarded text: the parser then reads his part as ann's text.
Or he puts `Content-Type: text/plain` on top: every byte of the body, his forwarded mail included,
reads as ann's text."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chalicelib import deps
from chalicelib.mail import unsigned_mime
from chalicelib.mail.parse import parse_mail
from tests.mail.test_authentication import FakeDns, members, records  # noqa: F401  (a fixture)
from tests.support.dkim_signing import SIGNED_HEADERS, signed

# Gmail's h= (2023 on): no content-type; mime-version and the read headers.
GMAIL_HEADERS = (*SIGNED_HEADERS, "mime-version")
GMAIL_BOUNDARY = b"0000000000004d5b1e0627a1c2f3"
ATTACKER_WORDS = b"Send your password to evil@attacker.example."
FORWARDED = (
    b"---------- Forwarded message ---------\r\n"
    b"From: Mallory <mallory@attacker.example>\r\n"
    b"Subject: An offer\r\n\r\n"
    b"Hello all,\r\n"
    b"--evil\r\n"
    b"Content-Type: text/plain\r\n\r\n" + ATTACKER_WORDS + b"\r\n"
    b"--evil--\r\n"
)


def gmail_forward(sender: str, subject: str) -> bytes:
    """A forward as Gmail writes it: multipart/alternative, the body opening with its boundary."""
    part = b"--" + GMAIL_BOUNDARY
    return (
        b"MIME-Version: 1.0\r\n"
        b"From: Ann <" + sender.encode() + b">\r\n"
        b"Date: Sun, 1 Nov 2026 12:00:00 +0000\r\n"
        b"Message-ID: <fwd-" + subject.encode().replace(b" ", b"-") + b"@mail.gmail.com>\r\n"
        b"Subject: " + subject.encode() + b"\r\n"
        b"To: garden@community.example\r\n"
        b'Content-Type: multipart/alternative; boundary="'
        + GMAIL_BOUNDARY
        + b'"\r\n\r\n'
        + part
        + b'\r\nContent-Type: text/plain; charset="UTF-8"\r\n\r\n'
        b"FYI, see below.\r\n\r\n"
        + FORWARDED
        + b"\r\n"
        + part
        + b'\r\nContent-Type: text/html; charset="UTF-8"\r\n\r\n'
        b"<div>FYI, see below.</div><pre>" + FORWARDED + b"</pre>\r\n" + part + b"--\r\n"
    )


def retyped(raw: bytes, content_type: bytes, *, on_top: bool = False) -> bytes:
    """`raw` with its (unsigned) Content-Type replaced by `content_type`, or another put on top."""
    if on_top:
        return b"Content-Type: " + content_type + b"\r\n" + raw
    start = raw.index(b"Content-Type: multipart/alternative")
    end = raw.index(b"\r\n", start)
    return raw[:start] + b"Content-Type: " + content_type + raw[end:]


def encoded_on_top(raw: bytes, content_type: bytes, encoding: bytes) -> bytes:
    """`raw` (a text part whose own headers say neither) with an unsigned Content-Type and
    Content-Transfer-Encoding put on top."""
    headers = b"Content-Type: " + content_type + b"\r\nContent-Transfer-Encoding: " + encoding
    return headers + b"\r\n" + raw


def verdict_of(raw: bytes):
    from chalicelib.mail.authentication import SenderVerifier

    return SenderVerifier(FakeDns(records())).verify(raw, "strict.example", last_attempt=False)


@pytest.mark.fast
def test_the_attack_reads_the_attackers_words_as_anns():
    """What the rule is against: the parser does read Mallory's part as the mail's text."""
    genuine = signed(
        gmail_forward("ann@strict.example", "Fwd"), "strict.example", headers=GMAIL_HEADERS
    )
    attacked = retyped(genuine, b'multipart/mixed; boundary="evil"')

    assert parse_mail(attacked).text == ATTACKER_WORDS.decode()
    assert verdict_of(genuine).verified


@pytest.mark.fast
@pytest.mark.parametrize(
    ("content_type", "on_top", "why"),
    [
        (
            b'multipart/mixed; boundary="evil"',
            False,
            "its unsigned Content-Type names another boundary than the signed body's own",
        ),
        (b"text/plain", False, "reads the signed body's parts as one text/plain"),
        (b"text/plain", True, "the mail has 2 Content-Type headers and the signature signs none"),
        (b"multipart/digest; boundary=" + GMAIL_BOUNDARY, False, "as mails (digest)"),
    ],
)
def test_an_unsigned_content_type_that_rereads_the_body_makes_the_signature_not_count(
    content_type, on_top, why
):
    genuine = signed(
        gmail_forward("ann@strict.example", "Fwd"), "strict.example", headers=GMAIL_HEADERS
    )

    verdict = verdict_of(retyped(genuine, content_type, on_top=on_top))

    assert verdict.spoofed and not verdict.verified
    assert "does not cover the Content-Type header, and " in verdict.reason
    assert why in verdict.reason


@pytest.mark.fast
def test_the_signers_own_content_type_respelled_still_counts():
    """Quoting, case and subtype are not the reading: the boundary the body opens with is."""
    genuine = signed(
        gmail_forward("ann@strict.example", "Fwd"), "strict.example", headers=GMAIL_HEADERS
    )

    respelled = retyped(genuine, b"Multipart/Mixed; boundary=" + GMAIL_BOUNDARY)

    assert verdict_of(respelled).verified
    assert parse_mail(respelled).text.startswith("FYI, see below.")


@pytest.mark.fast
@pytest.mark.parametrize(
    ("content_type", "encoding", "counts"),
    [
        (b"text/plain; charset=utf-8", b"quoted-printable", True),
        (b"text/plain; charset=utf-8", b"7bit", True),
        (b"text/html; charset=utf-8", b"7bit", False),
        (b"text/plain; charset=utf-8", b"base64", False),
        (b"multipart/mixed; boundary=evil", b"7bit", False),
    ],
)
def test_a_single_part_reads_only_as_the_signed_text(content_type, encoding, counts):
    """Exchange signs Content-Type but not Content-Transfer-Encoding; git-send-email through a
    relay signs neither: a text part keeps its signature unless the unsigned headers make it read
    as HTML, as base64 or as parts."""
    from tests.mail.test_authentication import mail

    body = mail("ann@strict.example", body="Line one.\n--evil\n\nLine two.\n--evil--")
    stripped = unsigned_mime.without(body, ["content-type", "content-transfer-encoding"])
    raw = signed(stripped, "strict.example", headers=GMAIL_HEADERS)

    assert verdict_of(encoded_on_top(raw, content_type, encoding)).verified is counts


@pytest.mark.fast
@settings(max_examples=60, deadline=None)
@given(
    boundary=st.text(
        alphabet="abcdefghijklmnopqrstuvwxyz0123456789'()+_,-./:=?", min_size=1, max_size=60
    ),
    subtype=st.sampled_from(["mixed", "alternative", "related", "signed", "report"]),
    own=st.booleans(),
)
def test_property_only_the_bodys_own_boundary_keeps_the_signature(boundary, subtype, own):
    raw = signed(
        gmail_forward("ann@strict.example", "Fwd"), "strict.example", headers=GMAIL_HEADERS
    )
    boundary = GMAIL_BOUNDARY.decode() if own else boundary
    content_type = f'multipart/{subtype}; boundary="{boundary}"'.encode()

    verdict = verdict_of(retyped(raw, content_type))

    assert verdict.verified is (boundary.encode() == GMAIL_BOUNDARY)
    if verdict.verified:
        assert parse_mail(retyped(raw, content_type)).text == parse_mail(raw).text


@pytest.mark.fast
@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=200))
def test_property_a_verified_single_part_reads_as_its_text(text):
    """Whatever Content-Type or encoding is put on a signed text part, a signature that still
    counts reads the text the signer signed."""
    from tests.mail.test_authentication import mail

    body = unsigned_mime.without(
        mail("ann@strict.example", body=text or "x"), ["content-type", "content-transfer-encoding"]
    )
    raw = signed(body, "strict.example", headers=GMAIL_HEADERS)
    # A text that is exactly a base64 encoder's output reads as base64 by the rule (Exchange's).
    assume(not unsigned_mime.encoded_as_base64(raw.partition(b"\r\n\r\n")[2]))
    # Quoted-printable only spells the signed bytes (every one of them stays in the text).
    readings = {
        parse_mail(raw).text,
        parse_mail(b"Content-Transfer-Encoding: quoted-printable\r\n" + raw).text,
    }
    for content_type in (
        b"text/html",
        b"multipart/mixed; boundary=x",
        b"message/rfc822",
        b"text/plain",
    ):
        for encoding in (b"base64", b"quoted-printable", b"8bit"):
            attacked = encoded_on_top(raw, content_type, encoding)
            if verdict_of(attacked).verified:
                assert parse_mail(attacked).text in readings


# --- through DNS and a real Dovecot --------------------------------------------------------------


# What the mail log says of a mail signed.example's DKIM signature does not vouch for.
SPOOFED = (
    "spoofed: signed.example publishes DMARC p=reject and its DKIM signature of signed.example "
)


def polled(mailbox, config) -> tuple[dict[str, str], dict[str, str], dict]:
    """Poll the mailbox once (nothing failed, nothing left in it): its mail log's statuses and
    reasons by subject, and its group's posts by title."""
    from chalicelib.store.mail import MailRecord
    from chalicelib.store.posts import PostRecord

    result = deps.mail_ingestor().poll(config, lambda: False)
    assert result.failed == 0 and mailbox.count() == 0
    entries = list(MailRecord.received.query(config.key))
    statuses = {e.subject: e.status for e in entries}
    reasons = {e.subject: e.reason or "" for e in entries}
    return statuses, reasons, {p.title: p for p in PostRecord.by_group.query(config.group_id)}


@pytest.mark.slow
def test_a_gmail_forward_retyped_by_an_attacker_through_dovecot_posts_nothing(members):  # noqa: F811
    """ann's Gmail forward arrives once as she sent it (posted, verified) and twice retyped by
    Mallory: his boundary, and text/plain on top. Neither becomes a post."""
    mailbox, config = members
    sign = lambda subject: signed(  # noqa: E731
        gmail_forward("ann@signed.example", subject), "signed.example", headers=GMAIL_HEADERS
    )
    mailbox.deliver(sign("As sent"))
    mailbox.deliver(retyped(sign("Retyped"), b'multipart/mixed; boundary="evil"'))
    mailbox.deliver(retyped(sign("Plain on top"), b"text/plain", on_top=True))

    statuses, reasons, posts = polled(mailbox, config)
    assert statuses == {"As sent": "posted", "Retyped": "rejected", "Plain on top": "rejected"}
    assert reasons["Retyped"] == (
        f"{SPOOFED}does not cover the Content-Type header, and its unsigned Content-Type names "
        "another boundary than the signed body's own"
    )
    assert "the mail has 2 Content-Type headers" in reasons["Plain on top"]
    assert set(posts) == {"As sent", "Hello"}
    assert posts["As sent"].content.startswith("<p>FYI, see below.</p>")


@pytest.mark.slow
def test_a_signed_mail_sent_elsewhere_and_replayed_to_the_mailbox_posts_nothing(members):  # noqa: F811
    """ann's signed mail to her friends, replayed by one of them to the garden's mailbox, is not
    her post; her mail to the garden (or Bcc'd, its Delivered-To saying so) is."""
    from dataclasses import replace

    from tests.support.mail_messages import email_message

    mailbox, config = members
    config = replace(config, email_address="Garden@Community.example")

    def sent(subject: str, to: str, **headers: str) -> bytes:
        raw = email_message("ann@signed.example", subject, "Hello.", to=to).as_bytes()
        raw = signed(raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), "signed.example")
        return b"".join(f"{name}: {value}\r\n".encode() for name, value in headers.items()) + raw

    mailbox.deliver(sent("To the garden", "garden@community.example"))
    mailbox.deliver(
        sent("Bcc", "friends@signed.example", **{"Delivered-To": "garden@community.example"})
    )
    mailbox.deliver(sent("Replayed", "friends@signed.example"))

    statuses, reasons, posts = polled(mailbox, config)
    assert statuses == {"To the garden": "posted", "Bcc": "posted", "Replayed": "rejected"}
    assert reasons["Replayed"] == (
        f"{SPOOFED}is of a mail sent to other recipients, not to garden@community.example"
    )
    assert set(posts) == {"To the garden", "Bcc", "Hello"}


# --- relaxed body canonicalisation: a blank line turned into spaces --------------------------------

PLAN = (
    b"From: ann@strict.example\r\nTo: garden@community.example\r\nSubject: Plan\r\n"
    b"Date: Sun, 1 Nov 2026 12:00:00 +0000\r\nMessage-ID: <plan@mail.example>\r\n"
    b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b1"\r\n\r\n'
    b"--b1\r\nContent-Type: text/plain\r\n\r\nNote: meet at noon.\r\nWhere: the shed.\r\n\r\n"
    b"Bring seeds.\r\n--b1--\r\n"
)


def relaxed(raw: bytes) -> bytes:
    import dkim

    from tests.support.dkim_signing import SELECTOR, key_pair

    names = [name.encode() for name in (*GMAIL_HEADERS, "content-type")]
    signature = dkim.sign(
        raw, SELECTOR.encode(), b"strict.example", key_pair()[0],
        canonicalize=(b"relaxed", b"relaxed"), include_headers=names,
    )  # fmt: skip
    return signature + raw


@pytest.mark.fast
@pytest.mark.parametrize("spaces", [b" ", b"   ", b"\t", b" \t "])
def test_a_blank_line_turned_into_spaces_keeps_its_parts_text(spaces):
    """Relaxed body canonicalisation reads a line of spaces as a blank line, so the signature
    still verifies; the part's `Note:` and `Where:` lines must not turn into its headers."""
    genuine = relaxed(PLAN)
    attacked = genuine.replace(b"text/plain\r\n\r\nNote", b"text/plain\r\n" + spaces + b"\r\nNote")

    assert verdict_of(attacked).verified
    assert parse_mail(attacked).text == parse_mail(genuine).text
    assert parse_mail(attacked).text.startswith("Note: meet at noon.\nWhere: the shed.")


@pytest.mark.fast
@settings(max_examples=40, deadline=None)
@given(
    whites=st.lists(st.sampled_from([b"", b" ", b"\t", b"  \t"]), min_size=9, max_size=9),
)
def test_property_white_space_lines_read_as_the_relaxed_signature_reads_them(whites):
    """Each empty line of the body made any white space: still verified, still the same text."""
    genuine = relaxed(PLAN)
    head, _, body = genuine.partition(b"\r\n\r\n")
    lines = body.split(b"\r\n")
    blanks = iter(whites)
    changed = [
        next(blanks, b"") if line == b"" and index < len(lines) - 1 else line
        for index, line in enumerate(lines)
    ]
    attacked = head + b"\r\n\r\n" + b"\r\n".join(changed)

    assert verdict_of(attacked).verified
    assert parse_mail(attacked).text == parse_mail(genuine).text


class RecordingVerifier:
    """A verifier that answers verified and keeps what mail-in told it of the recipients."""

    def __init__(self) -> None:
        self.elsewhere: list[str] = []

    def verify(self, raw, from_domain, *, last_attempt, sent_elsewhere=""):
        from types import SimpleNamespace

        self.elsewhere.append(sent_elsewhere)
        return SimpleNamespace(spoofed=False, verified=True, reason="sender verified")


@pytest.mark.fast
@pytest.mark.parametrize(
    ("to", "elsewhere"),
    [
        ("garden@club.example", ""),
        ("Garden+news@CLUB.example", ""),
        ("garden@in.community.example", ""),  # the group's address on the inbound domain
        ("friends@club.example", "garden@club.example"),
        ("garden@elsewhere.example", "garden@club.example"),
    ],
)
def test_a_mail_is_the_mailboxs_when_a_recipient_is_its_address_or_its_inbound_one(to, elsewhere):
    from dataclasses import replace

    from tests.mail.test_mail_in_fast import World, mail, plan_of, posts_box

    verifier = RecordingVerifier()
    raw = mail().replace(b"To: inbox@community.example", f"To: {to}".encode())
    box = replace(posts_box(), email_address="garden@club.example")

    plan_of(World(), raw, box, verifier=verifier, inbound_domain="in.community.example")

    assert verifier.elsewhere == [elsewhere]


@pytest.mark.fast
@pytest.mark.parametrize(
    ("body", "boundary"),
    [
        (b"--=-=-=\r\nContent-Type: text/plain\r\n\r\nHi.\r\n--=-=-=--\r\n", b"=-=-="),  # Gnus
        (b"\r\n--b1\r\n\r\nHi.\r\n--b1--\r\n", b"b1"),  # Ruby's mail, Mutt: a blank line first
        (b"This is a multi-part message in MIME format.\r\n--b1\r\n\r\nHi.\r\n--b1--\r\n", b"b1"),
        (b"----------\r\nHi.\r\n------------\r\n", None),  # a text's rule lines
        (b"Hi.\r\n--evil\r\n\r\nMallory.\r\n--evil--\r\n", None),  # a text's words first
        (b"--b1\r\n\r\nHi.\r\n", None),  # no closing line
        (b"--two words\r\n\r\nHi.\r\n--two words--\r\n", None),  # white space: a sentence
    ],
)
def test_a_body_delimits_its_own_parts_only_from_its_first_line(body, boundary):
    assert unsigned_mime.own_boundary(body) == boundary


# --- AGORA_MAIL_AUTH=header: the receiving server verified the signature, Agora reads the body --

AUTHSERV = "mx.community.example"


def header_mode_plan(raw: bytes):
    from tests.mail.test_mail_in_fast import World, plan_of, posts_box

    results = f"Authentication-Results: {AUTHSERV}; dkim=pass; dmarc=pass\r\n".encode()
    return plan_of(World(), results + raw, posts_box(), authserv_id=AUTHSERV)


@pytest.mark.fast
def test_under_header_mode_a_retyped_signed_forward_is_not_the_signers():
    """The receiving server's dkim=pass and dmarc=pass are true of the retyped mail too (the
    Content-Type is unsigned): the reading is still not the signer's."""
    genuine = signed(gmail_forward("ann@example.org", "Fwd"), "example.org", headers=GMAIL_HEADERS)
    attacked = retyped(genuine, b'multipart/mixed; boundary="evil"')

    assert header_mode_plan(genuine).status == "posted"
    plan = header_mode_plan(attacked)
    assert (plan.status, plan.reason) == (
        "rejected",
        "sender not verified: its unsigned Content-Type names another boundary than the signed "
        f"body's own, so the DMARC result of {AUTHSERV} may be about another reading of it",
    )
    # Another domain's signature that signs everything does not make the reading ann's.
    attackers = signed(attacked, "attacker.example", headers=(*GMAIL_HEADERS, "content-type"))
    assert header_mode_plan(attackers).status == "rejected"


@pytest.mark.fast
@pytest.mark.parametrize(
    ("to", "dmarc", "status"),
    [
        ("garden@club.example", "pass", "posted"),
        ("friends@example.org", "pass", "rejected"),  # a signed mail replayed to the mailbox
        ("friends@example.org", "none", "posted"),  # no DMARC: as any mail of such a domain
    ],
)
def test_under_header_mode_a_mail_sent_elsewhere_is_not_the_signers(to, dmarc, status):
    from dataclasses import replace

    from tests.mail.test_mail_in_fast import World, mail, plan_of, posts_box

    raw = (
        f"Authentication-Results: {AUTHSERV}; dkim=pass; dmarc={dmarc}\n".encode()
        + mail().replace(b"To: inbox@community.example", f"To: {to}".encode())
    )
    box = replace(posts_box(), email_address="garden@club.example")

    plan = plan_of(World(), raw, box, authserv_id=AUTHSERV)

    assert plan.status == status
    if status == "rejected":
        assert plan.reason == (
            "sender not verified: the mail was sent to other recipients, not to "
            f"garden@club.example, so the DMARC result of {AUTHSERV} is about a mail meant for them"
        )
