"""trim_reply: quoted mail, reply headers and signatures go; the sender's own text stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from chalicelib.mail.parse import parse_mail
from chalicelib.mail.replies import trim_reply

pytestmark = pytest.mark.fast  # pure: parsed values and files, no AWS, no server

CASES = {
    "gmail": (
        "Sounds good, see you there.\n\n"
        "On Mon, Jan 6, 2025 at 10:00 AM Ann Example <ann@example.com> wrote:\n"
        "> Shall we meet at 10?\n> Ann\n",
        "Sounds good, see you there.",
    ),
    "gmail_wrapped_over_two_lines": (
        "Thanks!\n\nOn 24 Jul 2013, at 15:58, walter via Discourse <info@discourse.org>\n"
        "wrote:\n\n   walter  July 24\n\nYou look great today Walter.\n",
        "Thanks!",
    ),
    "dutch": (
        "Dit is een antwoord.\n\nOp 18 juli 2013 10:23 schreef Sander Datema het volgende:\n\n"
        "Dit is de originele post.",
        "Dit is een antwoord.",
    ),
    "outlook_original_message": (
        "I agree.\n\n-----Original Message-----\nFrom: Ann\nSent: Monday\nTo: Bob\n\nold text\n",
        "I agree.",
    ),
    "outlook_header_block": (
        "I agree with the plan.\n\n________________________________\n"
        "From: Ann Example <ann@example.com>\nSent: Monday, January 6, 2025 10:00 AM\n"
        "To: Bob <bob@example.com>\nSubject: Plan\n\nold text\n",
        "I agree with the plan.",
    ),
    "outlook_header_block_without_rule": (
        "Fine by me.\r\n\r\nFrom: Ann <ann@example.com>\r\nSent: Monday\r\nTo: Bob\r\n\r\nold\r\n",
        "Fine by me.",
    ),
    "inline_quotes": (
        "> earlier point\n> more\n\nMy answer here.\n\nAnn wrote:\n> second point\n\nSecond.\n",
        "My answer here.\n\nSecond.",
    ),
    "signature": (
        "Hello all,\n\n- first item\n- second item\n\nThanks, I will check it.\n\n-- \n"
        "Bob Example\nExample Corp\n",
        "Hello all,\n\n- first item\n- second item\n\nThanks, I will check it.",
    ),
    "mobile_signature": (
        "This is not the signature you're looking for.\n\nSent from my iPhone\n",
        "This is not the signature you're looking for.",
    ),
    "indentation_is_kept": (
        "Try this:\n\n    make test\n\nOn Mon, Jan 6, 2025 Ann <ann@example.com> wrote:\n> x\n",
        "Try this:\n\n    make test",
    ),
    "sent_from_my_in_a_sentence_stays": (
        "Sent from my phone, the form fails.\nIt says error 3.\n",
        "Sent from my phone, the form fails.\nIt says error 3.",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_trim_reply(name: str) -> None:
    text, expected = CASES[name]

    assert trim_reply(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "> only quoted\n> text\n",
        "On Mon, Jan 6, 2025 Ann <ann@example.com> wrote:\n> all of it is quote\n",
        "-- \nonly a signature\n",
    ],
)
def test_text_that_is_all_quote_is_kept_untrimmed(text: str) -> None:
    assert trim_reply(text) == text.strip()


CORPUS_REPLIES = {
    "multiline_wrote.eml": "Thanks!",
    "dutch.eml": "Dit is een antwoord in het Nederlands.",
    "boundary.eml": "I'll look into it, thanks!",
    "iphone_signature.eml": "This is not the signature you're looking for.",
    "multipart.eml": (
        "So presumably all the quoted garbage and my (proper) signature will get\n"
        "stripped from my reply?"
    ),
    "inline_mixed_replies.eml": "And this is *my* reply :+1:\n\nAnd this is **another** reply.",
    "html_only.eml": (
        "The EC2 instance - I've seen that there tends to be odd and unrecommended settings "
        "on the Bitnami installs that I've checked out."
    ),
}


@pytest.mark.parametrize("name", sorted(CORPUS_REPLIES))
def test_trim_reply_on_corpus_mails(corpus_dir: Path, name: str) -> None:
    parsed = parse_mail((corpus_dir / name).read_bytes())

    assert trim_reply(parsed.text) == CORPUS_REPLIES[name]


def test_bottom_posted_reply_keeps_the_answer_below_the_quote(corpus_dir: Path) -> None:
    parsed = parse_mail((corpus_dir / "inline_reply.eml").read_bytes())

    trimmed = trim_reply(parsed.text)

    assert trimmed.startswith("The quick brown fox jumps over the lazy dog.")
    assert "wrote:" not in trimmed and "\n>" not in trimmed
