"""Every mail of the shared corpus goes through parsing and ingestion to a sensible outcome."""

from __future__ import annotations

import pytest

from chalicelib import deps
from tests.support import mail_corpus_files

# Senders the community knows (members of the group the mailbox posts to). The others are
# unknown on purpose: random.name@bar.ru must be rejected as an unknown sender.
MEMBERS = [
    "discourse@bar.com",
    "walter.white@googlemail.com",
    "bilbo@proton.me",
    "finn@adventuretime.ooo",
    "jake@adventuretime.ooo",
    "existing@bar.com",
    "one@foo.com",
    "xxxxxxxxx.xxxxxxx@gmail.com",
    "ba@bar.com",
    "aaron@breakingbad.com",
    "evildad@darthvader.ca",
    "group@example.com",
    "some@one.com",
]

EXPECTED: dict[str, tuple[str, str]] = {}  # filled below: file → (status, reason fragment)


def expect(status: str, fragment: str, *names: str) -> None:
    for name in names:
        EXPECTED[name] = (status, fragment)


expect(
    "ignored",
    "auto-reply",
    "auto_generated_header.eml",
    "auto_generated_precedence.eml",
    "auto_generated_subject.eml",
    "auto_reply.eml",
    "bottom_reply.eml",
    "mailman_1.eml",
)
expect(
    "ignored",
    "bounce",
    "bounced_email.eml",
    "bounced_email_multiple_status_codes.eml",
    "hard_bounce_via_verp.eml",
)
expect("rejected", "spoofed", "dmarc_fail.eml")
expect("rejected", "spam", "spam_x_spam_flag.eml")
expect("rejected", "unknown sender", "encoded_display_name.eml")
expect("rejected", "no valid sender", "too_short.eml")
# CONTRACT §9: never an empty post.
expect("rejected", "nothing to post: the mail has no text", "empty.eml")
# Issue 14: a From the standard parser cannot read is not guessed from the raw header text.
expect("rejected", "the From header is malformed", "invalid_from.eml")
expect(
    "posted",
    "attachment",
    "attached_eml_file.eml",
    "attached_txt_file.eml",
    "inline_image.eml",
    "encoded_filename.eml",
)
expect(
    "posted",
    "",
    "android_gmail.eml",
    "base64_encoded_body.eml",
    "big5.eml",
    "boundary.eml",
    "chinese_reply.eml",
    "dutch.eml",
    "email_reply_1.eml",
    "encoding_undefined_conversion.eml",
    "exchange_html_reply.eml",
    "forwarded_email_1.eml",
    "from_the_future.eml",
    "gmail_html_reply.eml",
    "gmail_web.eml",
    "hebrew.eml",
    "html_only.eml",
    "inline_mixed_replies.eml",
    "inline_reply.eml",
    "ios_default.eml",
    "iphone_signature.eml",
    "long_embedded_email_headers.eml",
    "missing_message_id.eml",
    "multiline_wrote.eml",
    "multipart.eml",
    "text_reply.eml",
)


@pytest.fixture
def group_mailbox(community, mailbox, dovecot):
    garden = community.group("garden")
    for address in MEMBERS:
        community.user(address.split("@")[0].replace(".", "-"), {garden: "member"}, email=address)
    community.load()
    return mailbox.connector(garden)


@pytest.mark.parametrize("path", mail_corpus_files(), ids=lambda path: path.name)
def test_corpus_mail_lands_in_its_expected_outcome(path, corpus_dir, mailbox, group_mailbox):
    from chalicelib.store.mail import MailRecord
    from chalicelib.store.posts import PostRecord

    mailbox.deliver(path.read_bytes())
    result = deps.mail_ingestor(authserv_id="example.com").poll(group_mailbox, lambda: False)
    assert result.seen == 1 and result.failed == 0
    [entry] = list(MailRecord.received.query(group_mailbox.key))
    status, fragment = EXPECTED[path.name]
    assert entry.status == status, entry.reason
    assert fragment in entry.reason
    posts = list(PostRecord.by_group.query(group_mailbox.group_id))
    assert len(posts) == (1 if status == "posted" else 0)
    for post in posts:
        assert post.source == "email" and post.id == entry.post_id
        assert "<script" not in post.content and "javascript:" not in post.content
    assert mailbox.count() == 0


def test_the_corpus_is_all_listed():
    from tests.support import mail_corpus_dir

    if not mail_corpus_dir().is_dir():
        pytest.skip("mail corpus absent (shared/ is not next to the repository)")
    assert {path.name for path in mail_corpus_files()} == set(EXPECTED)
