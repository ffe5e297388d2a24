"""parse_mail on the Discourse corpus (read in place from shared/) and on our own mails."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from chalicelib.mail.parse import MailParseError, ParsedMail, content_hash, dmarc_failed, parse_mail
from tests.mail.conftest import message_bytes
from tests.support import mail_corpus_files

pytestmark = pytest.mark.fast  # pure: parsed values and files, no AWS, no server


def parse_corpus(corpus_dir: Path, name: str) -> ParsedMail:
    return parse_mail((corpus_dir / name).read_bytes())


@pytest.mark.parametrize(
    "path",
    mail_corpus_files()
    or [pytest.param(None, marks=pytest.mark.skip(reason="mail corpus (shared/) not found"))],
    ids=lambda path: path.name if path else "no-corpus",
)
def test_every_corpus_mail_parses(path: Path) -> None:
    parsed = parse_mail(path.read_bytes())

    assert len(parsed.content_hash) == 64
    assert isinstance(parsed.text, str)
    assert "<script" not in parsed.html.lower()


AUTO_REPLIES = {
    "auto_reply.eml",
    "auto_generated_header.eml",
    "auto_generated_precedence.eml",
    "auto_generated_subject.eml",
    "mailman_1.eml",
}
BOUNCES = {
    "bounced_email.eml",
    "bounced_email_multiple_status_codes.eml",
    "hard_bounce_via_verp.eml",
}
SPAM = {"spam_x_spam_flag.eml"}
PERSONAL = {"text_reply.eml", "gmail_web.eml", "html_only.eml", "dmarc_fail.eml"}
# file: (is_auto_reply, is_bounce, is_spam)
CLASSIFICATION = {
    name: (name in AUTO_REPLIES, name in BOUNCES, name in SPAM)
    for name in AUTO_REPLIES | BOUNCES | SPAM | PERSONAL
}


@pytest.mark.parametrize("name", sorted(CLASSIFICATION))
def test_corpus_classification(corpus_dir: Path, name: str) -> None:
    parsed = parse_corpus(corpus_dir, name)

    assert (parsed.is_auto_reply, parsed.is_bounce, parsed.is_spam) == CLASSIFICATION[name]
    assert (parsed.auto_reason is not None) == parsed.is_auto_reply
    assert (parsed.bounce_reason is not None) == parsed.is_bounce


def test_precedence_list_is_reported_as_mailing_list(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "auto_generated_precedence.eml")

    assert parsed.auto_reason is not None and "mailing-list" in parsed.auto_reason


def test_dmarc_fail_counts_for_the_configured_authserv_id_only(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "dmarc_fail.eml")

    assert dmarc_failed(parsed, "example.com")
    assert dmarc_failed(parsed, "EXAMPLE.com")
    assert not dmarc_failed(parsed, "mx.community.example")


def test_real_dmarc_pass_is_not_undone_by_a_forged_fail_below() -> None:
    parsed = parse_mail(message_bytes("forged_auth_results.eml"))

    assert [result.authserv_id for result in parsed.authentication_results] == [
        "mx.community.example",
        "mx.community.example",
        "other.example",
    ]
    assert parsed.authentication_results[0].dmarc == "pass"
    assert not dmarc_failed(parsed, "mx.community.example")
    assert dmarc_failed(parsed, "other.example")  # a different, untrusted id says nothing to us


def test_real_dmarc_fail_is_not_hidden_by_a_forged_pass_below() -> None:
    parsed = parse_mail(message_bytes("real_dmarc_fail_forged_pass.eml"))

    assert dmarc_failed(parsed, "mx.community.example")


def test_missing_message_id_is_none_and_hash_identifies_the_mail(corpus_dir: Path) -> None:
    raw = (corpus_dir / "missing_message_id.eml").read_bytes()

    parsed = parse_mail(raw)

    assert parsed.message_id is None
    assert parsed.dedup_key == f"sha256:{parsed.content_hash}"
    assert parse_mail(raw.replace(b"\n", b"\r\n")).content_hash == parsed.content_hash


def test_message_id_loses_its_angle_brackets(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "text_reply.eml")

    assert parsed.message_id == "15@foo.bar.mail"
    assert parsed.dedup_key == "message-id:15@foo.bar.mail"


def test_big5_label_over_utf8_bytes_decodes_to_chinese(corpus_dir: Path) -> None:
    assert parse_corpus(corpus_dir, "chinese_reply.eml").text == "您好！ 你今天好吗？"


def test_real_big5_decodes_to_chinese(corpus_dir: Path) -> None:
    assert parse_corpus(corpus_dir, "big5.eml").text == "媽！我上電視了！"


def test_encoded_display_name_is_decoded(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "encoded_display_name.eml")

    assert parsed.from_name == "Случайная  Имя"
    assert parsed.from_address == "random.name@bar.ru"
    assert parsed.text == "Будьте здоровы!"


def test_a_from_the_standard_parser_cannot_read_has_no_sender(corpus_dir: Path) -> None:
    # Issue 14: the address is never dug out of the raw header text (a display name could
    # carry anyone's address), so an unreadable From means no sender.
    parsed = parse_corpus(corpus_dir, "invalid_from.eml")

    assert parsed.from_address is None
    assert parsed.sender_problem == "the From header is malformed"


def test_leading_blank_line_before_headers_is_tolerated(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "hebrew.eml")

    assert parsed.from_address == "walter.white@googlemail.com"
    assert parsed.text == "שלום"


def test_mbox_from_line_and_encoded_attachment_name(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "encoded_filename.eml")

    assert parsed.from_address == "xxxxxxxxx.xxxxxxx@gmail.com"
    assert [(a.filename, a.content_type) for a in parsed.attachments] == [
        ("This is a test.pdf", "application/pdf")
    ]


def test_multipart_without_boundaries_reads_as_text(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "dutch.eml")

    assert parsed.text.startswith("Dit is een antwoord in het Nederlands.")


def test_attachment_declared_before_the_body_is_not_the_body(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "attached_txt_file.eml")

    assert parsed.text == "Please find some text file attached."
    assert [a.filename for a in parsed.attachments] == ["text.txt"]


def test_attached_mail_is_not_opened(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "attached_eml_file.eml")

    assert parsed.text == "Please find the eml file attached."
    assert [a.content_type for a in parsed.attachments] == ["message/rfc822"]


def test_html_only_corpus_mail_gives_sanitised_html_and_text(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "html_only.eml")

    assert parsed.html.startswith("<div>The EC2 instance")
    assert "style=" not in parsed.html and "data-blackberry" not in parsed.html
    assert parsed.text.startswith("The EC2 instance - I've seen")


def test_date_is_aware_utc(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "text_reply.eml")

    assert parsed.date == datetime(2016, 1, 14, 23, 12, 43, tzinfo=UTC)


def test_folded_subject_is_unfolded(corpus_dir: Path) -> None:
    parsed = parse_corpus(corpus_dir, "html_only.eml")

    assert parsed.subject == (
        'Re: [Discourse Meta] [PM] re: Regarding your post in "Site Customization not working"'
    )


# --- our own mails ---------------------------------------------------------------------------


def test_hostile_html_never_survives() -> None:
    parsed = parse_mail(message_bytes("html_only_hostile.eml"))

    lowered = parsed.html.lower()
    for dangerous in ("<script", "onclick", "onerror", "onload", "javascript:", "<iframe", "alert"):
        assert dangerous not in lowered
    assert "<b>friends</b>" in parsed.html
    assert 'href="https://example.org/page"' in parsed.html
    assert "Title text" not in parsed.html and "display: none" not in parsed.html
    assert "Hello friends, see the report" in parsed.text
    assert "alert" not in parsed.text


def test_plain_text_markup_becomes_escaped_paragraphs() -> None:
    parsed = parse_mail(message_bytes("plain_with_markup.eml"))

    assert parsed.html == (
        "<p>Please bring &lt;b&gt;snacks&lt;/b&gt; &amp; drinks.<br>"
        "&lt;script&gt;alert(1)&lt;/script&gt;</p><p>See you there.</p>"
    )
    assert parsed.text.startswith("Please bring <b>snacks</b> & drinks.")


def test_address_is_lowercased_and_encoded_subject_decoded() -> None:
    parsed = parse_mail(message_bytes("plain_with_markup.eml"))

    assert parsed.from_address == "ann.example@example.com"
    assert parsed.from_name == "Ann Example"
    assert parsed.subject == "Café meeting next week"
    assert parsed.date == datetime(2025, 1, 7, 8, 30, tzinfo=UTC)


def test_latin1_label_over_windows_1252_bytes() -> None:
    parsed = parse_mail(message_bytes("windows1252_labelled_latin1.eml"))

    assert parsed.text == "It’s “quoted” and costs € 5, café."


def test_x_autoreply_and_subject_prefix_are_auto_replies() -> None:
    parsed = parse_mail(message_bytes("vacation_reply.eml"))

    assert parsed.is_auto_reply and parsed.auto_reason == "X-Autoreply header"
    subject_only = parse_mail(b"From: a@example.com\nSubject: Out of Office: back Monday\n\nAway\n")
    assert subject_only.is_auto_reply


@pytest.mark.parametrize(
    "headers",
    [
        b"Auto-Submitted: no\nSubject: Hello\n",
        b"Subject: Out of office party on Friday\n",
        b"Precedence: first-class\nSubject: Hello\n",
    ],
)
def test_ordinary_mail_is_not_an_auto_reply(headers: bytes) -> None:
    parsed = parse_mail(b"From: a@example.com\n" + headers + b"\nHi all\n")

    assert not parsed.is_auto_reply and not parsed.is_bounce


def test_empty_return_path_is_a_bounce() -> None:
    parsed = parse_mail(b"Return-Path: <>\nFrom: someone@example.com\nSubject: x\n\nbody\n")

    assert parsed.is_bounce and parsed.bounce_reason == "empty return path"


def test_unknown_charset_does_not_crash() -> None:
    raw = (
        b"From: a@example.com\nContent-Type: text/plain; charset=x-no-such-charset\n"
        b"Content-Transfer-Encoding: 8bit\n\nnot in any charset\xff\xfe\n"
    )

    parsed = parse_mail(raw)

    assert parsed.from_address == "a@example.com"
    assert parsed.text.startswith("not in any charset")


def test_text_in_broken_base64_is_a_parse_error() -> None:
    # Issue 14: a body that cannot be decoded is rejected, never posted as raw text.
    raw = (
        b"From: a@example.com\nContent-Type: text/plain; charset=x-no-such-charset\n"
        b"Content-Transfer-Encoding: base64\n\n!!not base64 at all\xff\xfe\n"
    )

    with pytest.raises(MailParseError, match="cannot be decoded"):
        parse_mail(raw)


@pytest.mark.parametrize("raw", [b"", b"\n\n\n", b"\x00\x01\x02 not a mail"])
def test_input_without_headers_is_a_parse_error(raw: bytes) -> None:
    with pytest.raises(MailParseError):
        parse_mail(raw)


def test_content_hash_ignores_line_ends_and_final_newline() -> None:
    assert content_hash(b"a\nb\n") == content_hash(b"a\r\nb") == content_hash(b"a\r\nb\r\n")
    assert content_hash(b"a\nb\n") != content_hash(b"a\nc\n")


# --- hostile senders and structures (issue 14) ---------------------------------------------


@pytest.mark.parametrize(
    ("from_header", "problem"),
    [
        (b'"<root-admin@example.org>" <"a b"@evil.example>', "not a plain name@domain"),
        (b'"<root-admin@example.org>" <attacker@[127.0.0.1]>', "not a plain name@domain"),
        (b"root-admin@example.org <attacker@evil.example>", "malformed"),
        (b"ann@example.org, root-admin@example.org", "names 2 addresses"),
        (b"Root Admin", "malformed"),
    ],
)
def test_a_display_name_never_decides_who_sent_a_mail(from_header, problem):
    parsed = parse_mail(b"From: " + from_header + b"\r\nSubject: x\r\n\r\nbody\r\n")

    assert parsed.from_address is None and problem in parsed.sender_problem


@pytest.mark.parametrize(
    "from_header", [b'"ann"@agora.example', b'Ann <"ann"@agora.example>', b"ANN@agora.example"]
)
def test_needless_quotes_around_a_plain_local_part_are_the_same_mailbox(from_header):
    # README: quoting a plain local part changes nothing (RFC 5322 3.4.1), so it is accepted as
    # that address; only a local part that is not plain once unquoted ("a b") is rejected.
    parsed = parse_mail(b"From: " + from_header + b"\r\nSubject: x\r\n\r\nbody\r\n")

    assert parsed.from_address == "ann@agora.example"


def test_two_from_headers_are_no_sender():
    parsed = parse_mail(b"From: ann@example.org\r\nFrom: root-admin@example.org\r\n\r\nx\r\n")

    assert parsed.from_address is None and "more than one From" in parsed.sender_problem


def nested_multiparts(levels: int) -> bytes:
    return (
        b"From: ann@example.org\r\n"
        + b"".join(
            b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
            for i in range(levels)
        )
        + b"Content-Type: text/plain\r\n\r\nhi\r\n"
    )


def many_parts(count: int) -> bytes:
    parts = b"".join(b"--b\r\nContent-Type: text/plain\r\n\r\npart\r\n" for _ in range(count))
    return (
        b'From: ann@example.org\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n'
        + parts
        + b"--b--\r\n"
    )


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        # A parse error, not a RecursionError.
        (nested_multiparts(2000), "nested deeper than 20"),
        (many_parts(600), "more than 200 MIME parts"),
        (
            b"From: ann@example.org\r\nContent-Type: multipart/mixed\r\n\r\n--x\r\n"
            b"Content-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!\r\n"
            b"--x--\r\n",
            "without a boundary",
        ),
    ],
    ids=["deeply nested multiparts", "too many parts", "raw MIME without a boundary"],
)
def test_mime_the_parser_will_not_walk_is_a_parse_error(raw, problem):
    with pytest.raises(MailParseError, match=problem):
        parse_mail(raw)


def test_control_characters_are_removed_from_every_text_field():
    raw = (
        b"From: Ann <ann@example.org>\r\nX-Junk: \x00\x01\r\nSubject: =?utf-8?q?Hello=01world?=\x00\x1b\r\n\r\n"
        b"tab\there\r\nNUL\x00 BEL\x07 VT\x0b end\r\n"
    )

    parsed = parse_mail(raw)

    assert parsed.subject == "Helloworld"
    assert (parsed.from_address, parsed.from_name) == ("ann@example.org", "Ann")
    assert parsed.text == "tab\there\nNUL BEL VT end"


def test_control_characters_in_the_from_header_make_it_malformed():
    parsed = parse_mail(b"From: Ann\x00 <ann@example.org>\r\n\r\nx\r\n")

    assert parsed.from_address is None and parsed.sender_problem == "the From header is malformed"


@pytest.mark.parametrize(
    "raw",
    [
        b"From: ann@example.org\r\nTo: " + b"x@y.example, " * 20_000 + b"\r\n\r\nx\r\n",
        b"From: ann@example.org\r\nSubject: " + b"=?utf-8?q?abc?= " * 50_000 + b"\r\n\r\nx\r\n",
        b"From: ann@example.org\r\nContent-Type: text/plain; " + b"a=b; " * 20_000 + b"\r\n\r\nx",
    ],
    ids=["20,000 recipients", "50,000 encoded words", "20,000 parameters"],
)
def test_headers_the_standard_parser_is_slow_on_are_cut_or_refused(raw):
    # Each took the standard parser from 12 to 28 seconds (the bench measures the time now).
    try:
        parsed = parse_mail(raw)
    except MailParseError as error:
        assert "longer than 4000 characters" in str(error)
    else:
        assert parsed.from_address == "ann@example.org" and len(parsed.subject) <= 8000
