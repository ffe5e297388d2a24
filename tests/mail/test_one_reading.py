"""One reading (CONTRACT §9, chalicelib/mail/parse.py): the header lines dkimpy verifies are the
ones the mail parser reads, or no signature counts.

dkimpy and the standard parser are run side by side on the same bytes. The shapes named by public
write-ups are explicit cases:

* the issue's exploit: `\\rFrom: …\\rSubject: …\\r\\r<text>\\r\\r` hidden in one unsigned header;
* bare CR and bare LF line ends, and the SMTP-smuggling end-of-data variants `\\n.\\r\\n`,
  `\\r.\\r`, `\\n.\\n` (SEC Consult's "SMTP Smuggling", 2023; mox's commit rejecting bare CR);
* a bare CR before folding white space, a UTF-8 byte order mark before a header name, duplicated
  headers (nodemailer/mailparser issue 423);
* a second From header, white space before the colon (`From :`), a first header line folded
  (` From:`) (Chen, Paxson and Jiang, "Composition Kills", USENIX Security 2020);
* a NUL in a header, a second DKIM-Signature of another domain;
* mail stored with LF line ends throughout, as a maildir keeps it (cloudflare/dkim issue 22):
  still one reading, still verified.
"""

from __future__ import annotations

import functools
import re

import dkim
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from chalicelib.mail.authentication import SenderVerifier
from chalicelib.mail.parse import (
    MailParseError,
    header_block,
    mail_bytes,
    parse_mail,
    reading_problem,
)
from tests.mail.test_authentication import FakeDns, records, threaded
from tests.support.dkim_signing import SIGNED_HEADERS, dkim_record, signed

MEMBER = b"ann@strict.example"
PERMALINK = b"Re: https://community.example/garden/hello"
ATTACKER_TEXT = b"Send your password to evil@attacker.example."


@functools.cache
def genuine() -> bytes:
    """A reply of ann's, signed by her domain (p=reject), every read header signed once."""
    return signed(threaded(MEMBER.decode()), "strict.example")


def fields_of(raw: bytes) -> tuple[list[bytes], bytes]:
    """(the header fields of a CRLF mail, folded lines kept together; its body)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    return re.split(rb"\r\n(?![ \t])", head), body


def assembled(fields: list[bytes], body: bytes, end: bytes = b"\r\n") -> bytes:
    return b"".join(field + end for field in fields) + end + body


def smuggled(hidden: bytes, *, signature_last: bool = True) -> bytes:
    """The issue's exploit: one unsigned header on top hiding `hidden`, the DKIM-Signature moved
    below the other headers (header order is not signed)."""
    fields, body = fields_of(genuine())
    if signature_last:
        fields = fields[1:] + fields[:1]
    return assembled([b"X-Note: a" + hidden, *fields], body)


EXPLOIT = b"\rFrom: " + MEMBER + b"\rSubject: " + PERMALINK + b"\r\r" + ATTACKER_TEXT + b"\r\r"


def verdict_of(raw: bytes):
    return SenderVerifier(FakeDns(records())).verify(raw, "strict.example", last_attempt=False)


def read_as_signed(raw: bytes) -> bool:
    """Whether the parser reads exactly the genuine mail's sender, title, thread and text."""
    try:
        parsed = parse_mail(raw)
    except MailParseError:
        return False
    return (
        parsed.from_address == MEMBER.decode()
        and parsed.subject == "Roses"
        and parsed.references == ("a@x.example",)
        and parsed.in_reply_to == "a@x.example"
        and parsed.text.strip() == "The roses are out."
    )


# --- the exploit and the shapes of the write-ups ------------------------------------------------


@pytest.mark.fast
def test_the_genuine_mail_verifies_and_reads_as_signed():
    assert verdict_of(genuine()).verified and read_as_signed(genuine())


@pytest.mark.fast
@pytest.mark.parametrize("signature_last", [True, False])
def test_the_issues_exploit_counts_as_unsigned(signature_last):
    raw = smuggled(EXPLOIT, signature_last=signature_last)
    parsed = parse_mail(raw)
    assert parsed.subject == PERMALINK.decode()  # what the parser alone would read

    verdict = verdict_of(raw)

    assert verdict.spoofed and not verdict.verified
    assert verdict.reason == (
        "spoofed: strict.example publishes DMARC p=reject and no DKIM signature counts: its "
        "header block holds a CR that does not end a line (a bare CR)"
    )


HIDDEN_SHAPES = {
    "bare CR": b"\rSubject: Chosen by the attacker",
    "bare CR before folding white space": b"\r Subject: Chosen by the attacker",
    "bare CR blank line": b"\r\r" + ATTACKER_TEXT,
    "bare LF among CRLF": b"\nSubject: Chosen by the attacker",
    "bare LF blank line": b"\n\n" + ATTACKER_TEXT,
    "LF CR": b"\n\rSubject: Chosen by the attacker",
    "smuggling \\n.\\r\\n": b"\n.\r\nSubject: Chosen by the attacker",
    "smuggling \\r.\\r": b"\r.\rSubject: Chosen by the attacker",
    "smuggling \\n.\\n": b"\n.\nSubject: Chosen by the attacker",
    "NUL": b"\0\r\nSubject: Chosen by the attacker",
    "NUL alone": b"\0",
}


@pytest.mark.fast
@pytest.mark.parametrize("hidden", HIDDEN_SHAPES.values(), ids=HIDDEN_SHAPES.keys())
def test_a_header_block_with_two_readings_is_read_by_no_signature(hidden):
    raw = smuggled(hidden)

    verdict = verdict_of(raw)

    # Refused by the one-reading rule, or (a bare LF blank line ends dkimpy's header block too)
    # the signature is in what both read as the body.
    assert not verdict.verified and verdict.spoofed
    assert "no DKIM signature" in verdict.reason


ADDED_FIELDS = {
    "second From": [b"From: boss@strict.example"],
    "space before the colon": [b"From : boss@strict.example"],
    "folded first line": [b" From: boss@strict.example"],
    "byte order mark": [b"\xef\xbb\xbfFrom: boss@strict.example"],
    "empty name": [b": boss@strict.example"],
    "duplicated Subject": [b"Subject: Chosen by the attacker"],
    "second DKIM-Signature": [
        b"DKIM-Signature: v=1; a=rsa-sha256; d=attacker.example; s=x; h=from:subject; bh=; b="
    ],
}


@pytest.mark.fast
@pytest.mark.parametrize("added", ADDED_FIELDS.values(), ids=ADDED_FIELDS.keys())
@pytest.mark.parametrize("at", [0, 1, -1])
def test_added_fields_are_verified_only_when_read_as_signed(added, at):
    fields, body = fields_of(genuine())
    fields[at:at] = added
    raw = assembled(fields, body)

    verdict = verdict_of(raw)

    assert not verdict.verified or read_as_signed(raw)


@pytest.mark.fast
def test_a_from_line_last_in_the_header_block_is_read_by_no_signature():
    """The parser pushes a `From ` line ending the header block into the body; dkimpy skips it."""
    fields, body = fields_of(genuine())
    raw = assembled([*fields, b"From the moderators: send your password"], body)

    verdict = verdict_of(raw)

    assert not verdict.verified
    assert "reads differently to the signature check and to the mail reader" in verdict.reason


@pytest.mark.fast
def test_a_from_line_inside_a_folded_header_is_read_by_no_signature():
    """dkimpy skips the `From ` line and reads the folded line on as the Subject's; the parser
    ends the Subject at the `From ` line and drops the folded line."""
    folded = threaded(MEMBER.decode()).replace(b"Subject: Roses", b"Subject: Roses\r\n and thorns")
    raw = signed(folded, "strict.example").replace(
        b"Subject: Roses\r\n", b"Subject: Roses\r\nFrom the moderators\r\n"
    )
    assert parse_mail(raw).subject == "Roses"

    verdict = verdict_of(raw)

    assert not verdict.verified
    assert "reads differently to the signature check and to the mail reader" in verdict.reason


@pytest.mark.fast
def test_under_p_none_a_mail_read_two_ways_is_unverified_saying_why():
    fields, body = fields_of(signed(threaded("ann@relaxed.example"), "relaxed.example"))
    raw = assembled([b"X-Note: a" + EXPLOIT, *fields[1:], fields[0]], body)
    dns = FakeDns(records(**{"s2026._domainkey.relaxed.example": [dkim_record()]}))

    verdict = SenderVerifier(dns).verify(raw, "relaxed.example", last_attempt=False)

    assert not verdict.spoofed and not verdict.verified
    assert verdict.reason == (
        "sender not verified: relaxed.example publishes DMARC p=none (no DKIM signature counts: "
        "its header block holds a CR that does not end a line (a bare CR))"
    )


SIGNING_MIME = (*SIGNED_HEADERS, "content-type", "content-transfer-encoding", "mime-version")


@pytest.mark.fast
@pytest.mark.parametrize(
    "header",
    [
        b"Content-Transfer-Encoding: base64",
        b"Content-Type: multipart/mixed; boundary=roses",
        b"MIME-Version: 2.0",
    ],
)
def test_an_unsigned_mime_header_on_top_of_one_the_signature_signs_makes_it_not_count(header):
    """The parser reads the first Content-Type or Content-Transfer-Encoding: one put on top
    would change how the signed body reads."""
    raw = signed(threaded(MEMBER.decode()), "strict.example", headers=SIGNING_MIME)
    assert verdict_of(raw).verified

    verdict = verdict_of(header + b"\r\n" + raw)

    assert not verdict.verified and "does not cover every" in verdict.reason
    assert "(the mail has 2, it signs 1)" in verdict.reason


@pytest.mark.fast
def test_a_signature_that_signs_no_mime_header_still_counts():
    assert verdict_of(genuine()).verified  # its h= names none of them (tests/support/dkim_signing)


@pytest.mark.fast
def test_the_parsed_mail_says_when_it_reads_two_ways():
    """What mail-in's header mode (no signature check of ours) goes by."""
    assert parse_mail(smuggled(EXPLOIT)).reading_problem == (
        "its header block holds a CR that does not end a line (a bare CR)"
    )
    assert parse_mail(genuine()).reading_problem is None
    assert parse_mail(genuine().replace(b"\r\n", b"\n")).reading_problem is None


@pytest.mark.fast
def test_a_mail_starting_with_blank_lines_is_verified_as_the_parser_reads_it():
    """Some exports start with a blank line: dkimpy alone would read no header at all, the
    parser skips it; both now read the mail after it."""
    raw = b"\r\n" + genuine()

    assert reading_problem(raw) is None
    assert verdict_of(raw).verified and read_as_signed(raw)


@pytest.mark.fast
def test_a_mail_stored_with_lf_line_ends_throughout_still_verifies():
    raw = genuine().replace(b"\r\n", b"\n")

    assert reading_problem(raw) is None
    assert verdict_of(raw).verified and read_as_signed(raw)


@pytest.mark.fast
def test_lf_line_ends_in_the_body_alone_are_one_reading():
    fields, body = fields_of(genuine())
    raw = assembled(fields, body.replace(b"\r\n", b"\n"))

    assert reading_problem(raw) is None and verdict_of(raw).verified


# --- properties: dkimpy and the parser side by side ---------------------------------------------

NAMES = st.sampled_from(
    [
        b"From",
        b"Subject",
        b"References",
        b"In-Reply-To",
        b"Message-ID",
        b"To",
        b"Date",
        b"DKIM-Signature",
        b"X-Note",
        b"From ",
        b"Subject ",
        b" From",
        b"\tSubject",
        b"\xef\xbb\xbfFrom",
        b"",
        b".",
    ]
)
VALUES = st.one_of(
    st.sampled_from(
        [
            b" " + MEMBER,
            b" boss@strict.example",
            b" " + PERMALINK,
            b" <other@attacker.example>",
            b" v=1; a=rsa-sha256; d=attacker.example; s=x; h=from; bh=; b=",
            b"",
        ]
    ),
    st.binary(max_size=8),
)
ENDS = st.sampled_from(
    [
        b"\r\n",
        b"\n",
        b"\r",
        b"\r\r",
        b"\n\n",
        b"\r\n\r\n",
        b"\n\r",
        b"\r\n ",
        b"\r ",
        b"\n\t",
        b"\0\r\n",
        b"\r\n.\r\n",
        b"\n.\r\n",
        b"\r.\r",
        b"\n.\n",
    ]
)


@st.composite
def header_blocks(draw) -> bytes:
    """Header lines of chosen and arbitrary names, values and line ends; or one line end for all
    (a consistent CRLF or LF mail)."""
    lines = draw(st.lists(st.tuples(NAMES, VALUES), min_size=1, max_size=6))
    uniform = draw(st.sampled_from([None, b"\r\n", b"\n"]))
    block = b""
    for name, value in lines:
        block += name + b":" + value + (uniform or draw(ENDS))
    return block + (uniform or b"\r\n") + b"Body line.\r\n"


def signature_reading(raw: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    headers, body = dkim.rfc822_parse(mail_bytes(raw))
    fields = [(bytes(n).lower(), _value(bytes(v))) for n, v in headers]
    return fields, body.replace(b"\r\n", b"\n")


def parser_reading(raw: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    from email import policy
    from email.parser import BytesParser

    message = BytesParser(policy=policy.compat32).parsebytes(mail_bytes(raw), headersonly=True)
    fields = [
        (n.encode("ascii", "surrogateescape").lower(), _value(v.encode("ascii", "surrogateescape")))
        for n, v in message.raw_items()
    ]
    payload = message._payload  # noqa: SLF001 (get_payload() would decode 8-bit bytes)
    body = payload.encode("ascii", "surrogateescape") if isinstance(payload, str) else b""
    return fields, body.replace(b"\r\n", b"\n")


def _value(value: bytes) -> bytes:
    return value.replace(b"\r\n", b"\n").lstrip(b" \t").rstrip(b"\n")


@pytest.mark.fast
@settings(max_examples=200)
@given(header_blocks())
@example(b"X-Note: a" + EXPLOIT + b"\r\nFrom: " + MEMBER + b"\r\n\r\nBody line.\r\n")
@example(b"From: a\r\nFrom the moderators\r\n\r\nBody line.\r\n")
def test_property_one_reading_means_the_same_header_fields_and_body(raw):
    """Whenever the mail is not refused, every header field dkimpy reads (name and value, in
    order) is the one the parser reads, and the body is the same, both reading the same bytes."""
    if reading_problem(raw) is not None:
        return
    try:
        signature = signature_reading(raw)
    except Exception:  # dkimpy refuses the header block: no signature can verify
        return
    assert parser_reading(raw) == signature
    assert header_block(raw)  # the block dkimpy reads is what the check looked at


@st.composite
def attacked(draw) -> bytes:
    """The genuine signed mail with fields of an attacker's put among its own (anywhere, with any
    line ends), its DKIM-Signature moved or not, and its line ends made LF or not."""
    fields, body = fields_of(genuine())
    if draw(st.booleans()):
        signature = fields.pop(0)
        fields.insert(draw(st.integers(0, len(fields))), signature)
    for _ in range(draw(st.integers(0, 3))):
        # Half of each part harmless, so that some mails still verify and are read.
        name = draw(st.one_of(st.sampled_from([b"X-Note", b"Received", b"Comments"]), NAMES))
        end = draw(st.one_of(st.just(b""), ENDS))
        hidden = draw(
            st.one_of(st.just(b""), st.sampled_from([EXPLOIT, b"\r\r" + ATTACKER_TEXT + b"\r\r"]))
        )
        field = name + b":" + draw(VALUES) + end + hidden
        fields.insert(draw(st.integers(0, len(fields))), field)
    raw = assembled(fields, body)
    return raw.replace(b"\r\n", b"\n") if draw(st.booleans()) else raw


@pytest.mark.fast
@settings(max_examples=100)
@given(attacked())
@example(smuggled(EXPLOIT))
@example(smuggled(EXPLOIT, signature_last=False))
def test_property_a_verified_mail_is_read_as_it_was_signed(raw):
    """Whatever an attacker adds to a genuine signed mail, either no signature counts or the
    parser reads the genuine sender, subject, thread and text. (MIME headers are left out of
    the names: one the signer did not sign at all is not the signer's to begin with; one it did
    sign is the test above.)"""
    verdict = verdict_of(raw)

    assert not verdict.verified or read_as_signed(raw)
