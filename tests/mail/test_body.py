"""Never an empty post (CONTRACT §9): what counts as a mail's text, and what an unreadable mail's
log entry can still say about it. Pure parsing: no server, no store."""

from __future__ import annotations

import base64
import random
from email.message import EmailMessage

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.mail.parse import MailParseError, headers_of, looks_binary, parse_mail

pytestmark = pytest.mark.fast

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + random.Random(25).randbytes(3000)


def inner_mail(body: str = "The council meets on Friday.", html: str | None = None) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Council <council@town.example>"
    message["Subject"] = "Meeting"
    message["Date"] = "Mon, 2 Nov 2026 10:00:00 +0000"
    message.set_content(body)
    if html is not None:
        message.add_alternative(html, subtype="html")
    return message


def outer(own_text: str | None, forwarded: EmailMessage | None) -> bytes:
    message = EmailMessage()
    message["From"] = "ann@example.org"
    message["Subject"] = "Fwd: Meeting"
    message["Message-ID"] = "<fwd@example.org>"
    if own_text is not None:
        message.set_content(own_text)
    if forwarded is not None:
        if own_text is None:
            message.make_mixed()
        message.add_attachment(forwarded)
    return message.as_bytes()


def test_a_forwarded_only_mail_posts_the_forwarded_text() -> None:
    parsed = parse_mail(outer(None, inner_mail()))

    assert parsed.body_problem is None
    assert "The council meets on Friday." in parsed.text
    assert "Forwarded message" in parsed.text and "From: Council <council@town.example>" in (
        parsed.text
    )
    assert "The council meets on Friday." in parsed.html
    assert parsed.attachments == ()  # imported as the text, not listed as left out


def test_a_forwarded_html_only_mail_posts_its_sanitised_html() -> None:
    forwarded = EmailMessage()
    forwarded["From"] = "news@town.example"
    forwarded.set_content("<p>Road <b>closed</b></p><script>x()</script>", subtype="html")

    parsed = parse_mail(outer(None, forwarded))

    assert "Road closed" in parsed.text
    assert "<b>closed</b>" in parsed.html and "<script" not in parsed.html


def test_a_forward_beside_own_text_stays_an_attachment() -> None:
    parsed = parse_mail(outer("See below.", inner_mail()))

    assert parsed.text == "See below."
    assert [a.content_type for a in parsed.attachments] == ["message/rfc822"]


def test_a_forward_of_an_empty_mail_has_no_text() -> None:
    parsed = parse_mail(outer(None, inner_mail(body="")))

    assert parsed.body_problem is not None and "no text" in parsed.body_problem


@pytest.mark.parametrize("body", ["", "\n\n   \n"])
def test_an_empty_body_has_no_text(body: str) -> None:
    raw = b"From: ann@example.org\r\nSubject: Hello\r\n\r\n" + body.encode()

    assert parse_mail(raw).body_problem == "the mail has no text"


def test_attachments_alone_are_no_text() -> None:
    message = EmailMessage()
    message["From"] = "ann@example.org"
    message.make_mixed()
    message.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="a.pdf")

    problem = parse_mail(message.as_bytes()).body_problem

    assert problem == "the mail has no text, only attachments: a.pdf"


def test_an_image_sent_as_the_whole_mail_has_no_text() -> None:
    raw = (
        b"From: ann@example.org\r\nSubject: Photo\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + base64.encodebytes(PNG)
    )

    parsed = parse_mail(raw)

    assert parsed.text == "" and "image/png" in (parsed.body_problem or "")


@pytest.mark.parametrize("encoding", ["base64", "8bit"])
def test_binary_bytes_labelled_as_text_are_not_text(encoding: str) -> None:
    body = base64.encodebytes(PNG) if encoding == "base64" else PNG
    raw = (
        b"From: ann@example.org\r\nSubject: Photo\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=iso-8859-1\r\n"
        b"Content-Transfer-Encoding: " + encoding.encode() + b"\r\n\r\n" + body
    )

    parsed = parse_mail(raw)

    assert parsed.text == ""
    assert parsed.body_problem == "its text/plain part is binary data, not text"


def test_a_binary_part_beside_real_text_leaves_the_text() -> None:
    message = EmailMessage()
    message["From"] = "ann@example.org"
    message.set_content("Here it is.")
    message.add_attachment(PNG, maintype="text", subtype="plain")  # mislabelled attachment

    parsed = parse_mail(message.as_bytes())

    assert parsed.text == "Here it is." and parsed.body_problem is None


@pytest.mark.parametrize(
    "payload",
    [
        "Grüße aus Köln, 10 €".encode("windows-1252"),
        "日本語のテキスト".encode("iso-2022-jp"),  # escape sequences are text
        "中文".encode("big5") * 20,
        b"NUL\x00 BEL\x07 ESC\x1b text",  # valid UTF-8 with stray controls: text, cleaned later
        "Привет".encode("koi8-r"),
    ],
)
def test_text_in_legacy_charsets_is_text(payload: bytes) -> None:
    assert not looks_binary(payload)


@given(st.text(max_size=400))
@settings(max_examples=200, deadline=None)
def test_property_any_utf8_text_is_text(text: str) -> None:
    assert not looks_binary(text.encode("utf-8", "surrogatepass"))


@given(st.text(alphabet=st.characters(codec="latin-1", exclude_categories=["Cc"]), max_size=400))
@settings(max_examples=200, deadline=None)
def test_property_latin1_prose_is_text(text: str) -> None:
    assert not looks_binary(text.encode("latin-1"))


def nested(levels: int) -> bytes:
    opening = b"".join(
        b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
        for i in range(levels)
    )
    return (
        b"From: Ann <ann@example.org>\r\nSubject: Deep\r\nMessage-ID: <deep@example.org>\r\n"
        b"MIME-Version: 1.0\r\n" + opening + b"Content-Type: text/plain\r\n\r\nx\r\n"
    )


NO_BOUNDARY = (
    b"From: Ann <ANN@example.org>\r\nSubject: =?utf-8?q?Caf=C3=A9?=\r\n"
    b"Message-ID: <nob@example.org>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed\r\n\r\n"
    b"--x\r\nContent-Type: text/plain\r\n\r\nhello\r\n--x--\r\n"
)


@pytest.mark.parametrize("raw", [NO_BOUNDARY, nested(1500)], ids=["no boundary", "1500 deep"])
def test_an_unreadable_mail_keeps_its_readable_headers(raw: bytes) -> None:
    with pytest.raises(MailParseError):
        parse_mail(raw)

    headers = headers_of(raw)

    assert headers.message_id in ("nob@example.org", "deep@example.org")
    assert headers.from_address == "ann@example.org"
    assert headers.subject in ("Café", "Deep")


def test_headers_of_a_forged_sender_give_no_address() -> None:
    raw = b'From: "<root@example.org>" <"a b"@evil.example>\r\nSubject: x\r\n\r\n'

    assert headers_of(raw).from_address is None


@given(st.binary(max_size=3000))
@settings(max_examples=200, deadline=None)
def test_property_headers_of_never_raises(raw: bytes) -> None:
    headers = headers_of(raw)

    for value in (headers.message_id, headers.from_address, headers.subject):
        assert value is None or isinstance(value, str)
