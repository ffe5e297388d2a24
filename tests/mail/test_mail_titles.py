"""A mailed subject is one line (CONTRACT §8): each line break in it (CR, LF, NEL, U+2028, U+2029,
VT, FF) becomes a space, so a post title made from mail holds to the API's one-line rule, and the
emails about that post can be built (issue 47: a title holding U+2028 made every one fail)."""

from __future__ import annotations

import base64

import pytest

from chalicelib import deps
from chalicelib.mail.parse import headers_of, parse_mail
from tests.support.mail_fakes import FakePop3, fake_server_mailbox
from tests.support.notify import sent_mail, subscribe, verify_sender_domain
from tests.support.outbox import drain

BREAKS = {
    "CR": "\r",
    "LF": "\n",
    "CRLF": "\r\n",
    "NEL": "\x85",
    "U+2028": "\u2028",
    "U+2029": "\u2029",
    "VT": "\v",
    "FF": "\f",
}


def mail_titled(subject: str, sender: str = "ann@example.org") -> bytes:
    """A mail whose Subject is an encoded word (the only way a break reaches a decoded subject)."""
    word = base64.b64encode(subject.encode()).decode()
    return (
        f"From: {sender}\r\nTo: garden@community.example\r\nSubject: =?utf-8?b?{word}?=\r\n"
        "Message-ID: <titled@mail.example>\r\n\r\nThe roses are out.\r\n"
    ).encode()


@pytest.mark.fast
@pytest.mark.parametrize("line_break", BREAKS.values(), ids=BREAKS.keys())
def test_each_line_break_in_a_mailed_subject_becomes_a_space(line_break):
    raw = mail_titled(f"Roses{line_break}in bloom")

    assert parse_mail(raw).subject == "Roses in bloom"
    assert headers_of(raw).subject == "Roses in bloom"


@pytest.mark.fast
def test_a_sender_name_is_one_line_too():
    word = base64.b64encode("Ann\u2028Admin".encode()).decode()
    raw = mail_titled("Roses").replace(
        b"From: ann@example.org", f"From: =?utf-8?b?{word}?= <ann@example.org>".encode()
    )

    assert parse_mail(raw).from_name == "Ann Admin"


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


@pytest.mark.fast
@pytest.mark.parametrize("control", list(BIDI), ids=[f"U+{ord(c):04X}" for c in BIDI])
def test_direction_controls_are_removed_from_a_mailed_subject_and_sender_name(control):
    """A subject holding U+202E shows its words backwards ("Invoice\u202efdp.exe" reads
    "Invoiceexe.pdf"): the title reads as it says."""
    word = base64.b64encode(f"Ann{control} Admin".encode()).decode()
    raw = mail_titled(f"Invoice{control}fdp.exe").replace(
        b"From: ann@example.org", f"From: =?utf-8?b?{word}?= <ann@example.org>".encode()
    )

    parsed = parse_mail(raw)

    assert (parsed.subject, parsed.from_name) == ("Invoicefdp.exe", "Ann Admin")
    assert headers_of(raw).subject == "Invoicefdp.exe"


# The breaks a header value can hold (CR and LF end the header line itself).
IN_VALUE = {name: value for name, value in BREAKS.items() if value not in ("\r", "\n", "\r\n")}


@pytest.mark.fast
@pytest.mark.parametrize("line_break", IN_VALUE.values(), ids=IN_VALUE.keys())
def test_a_message_id_is_stored_with_its_line_breaks_made_spaces(line_break):
    """Every header value stored from mail, the Message-ID too (its log entry, the dedup key)."""
    raw = (
        "From: ann@example.org\r\nTo: garden@community.example\r\nSubject: Roses\r\n"
        f"Message-ID: <a{line_break}b@mail.example>\r\nIn-Reply-To: <c{line_break}d@x.example>\r\n"
        "\r\nThe roses are out.\r\n"
    ).encode()

    parsed = parse_mail(raw)

    assert parsed.message_id == headers_of(raw).message_id == "a b@mail.example"
    assert parsed.in_reply_to == "c d@x.example"


def test_a_mailed_u2028_subject_makes_a_one_line_title_whose_notification_goes_out(community):
    from chalicelib.store.posts import PostRecord

    c = community
    garden = c.group("garden")
    c.user("ann", {garden: "member"}, email="ann@example.org")
    fan = c.user("fan", {garden: "member"})
    c.load()
    verify_sender_domain()
    subscribe(fan, "group", garden, 1, email=1)  # instant email of new posts
    box = fake_server_mailbox(garden)
    maildrop = FakePop3({"u1": mail_titled("Roses\u2028in bloom")})

    result = deps.mail_ingestor(open_mailbox=lambda _: maildrop).poll(box, lambda: False)

    assert result.posted == 1
    titles = [post.title for post in PostRecord.by_group.query(garden) if post.source == "email"]
    assert titles == ["Roses in bloom"]
    assert drain() == 1
    assert [message["Subject"] for message in sent_mail()] == ["[Garden] Roses in bloom"]
