"""A mailbox full of hostile and malformed mail, on a real Dovecot (issue 14's "Must show").

Every message gets exactly one final log entry, the good mail gets through, the mailbox ends
empty, nothing is posted as anyone but its true sender, and the group's RSS feed still parses.
"""

from __future__ import annotations

import base64
import random
from email.message import EmailMessage
from email.utils import make_msgid

import feedparser
import pytest

from chalicelib import deps
from tests.fixtures import auth
from tests.support.mail_messages import email_message

pytestmark = pytest.mark.slow

CONTROL = "".join(chr(code) for code in range(32) if chr(code) not in "\t\n\r")


def plain(sender: str, subject: str, body: str, **headers: str) -> bytes:
    return email_message(sender, subject, body, headers=headers).as_bytes()


def raw_mail(from_header: bytes, subject: bytes, body: bytes, extra: bytes = b"") -> bytes:
    return (
        b"From: "
        + from_header
        + b"\r\nTo: garden@community.example\r\nSubject: "
        + subject
        + b"\r\nMessage-ID: "
        + make_msgid(domain="mail.example").encode()
        + b"\r\n"
        + extra
        + b"\r\n"
        + body
    )


def nested_multiparts(levels: int) -> bytes:
    opening = b"".join(
        b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
        for i in range(levels)
    )
    closing = b"".join(b"--b%d--\r\n" % i for i in reversed(range(levels)))
    return (
        b"From: ann@example.org\r\nSubject: Nested\r\nMessage-ID: <nested@mail.example>\r\n"
        b"MIME-Version: 1.0\r\n"
        + opening
        + b"Content-Type: text/plain\r\n\r\ndeep down\r\n"
        + closing
    )


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + random.Random(25).randbytes(5000)


def forwarded_only(sender: str, subject: str, forwarded_text: str) -> bytes:
    inner = EmailMessage()
    inner["From"] = "secretary@club.example"
    inner["Subject"] = "Minutes"
    inner.set_content(forwarded_text)
    message = EmailMessage()
    message["From"] = sender
    message["Subject"] = subject
    message["Message-ID"] = make_msgid(domain="mail.example")
    message.make_mixed()
    message.add_attachment(inner)
    return message.as_bytes()


HOSTILE: dict[str, bytes] = {
    "long line": plain("ann@example.org", "Long line", "x" * 3000 + "\nend\n"),
    "megabyte line": raw_mail(b"ann@example.org", b"Megabyte line", b"y" * 1_000_000 + b"\r\n"),
    "nested": nested_multiparts(2000),
    "random bytes": random.Random(14).randbytes(20_000).replace(b":", b";"),
    "control bytes": raw_mail(
        b"Ann <ann@example.org>",
        b"=?utf-8?q?Hello=01world?= \x07bell",
        b"NUL\x00 BEL\x07 ESC\x1b text\r\n",
        b"X-Junk: \x00\x01\x02\r\n",
    ),
    "600 KB": plain("ann@example.org", "Long text", ("word " * 15 + "\n") * 7700),
    "forged display name": raw_mail(
        b'"<root-admin@example.org>" <"a b"@evil.example>', b"Forged 1", b"I am root\r\n"
    ),
    "forged literal": raw_mail(
        b'"<root-admin@example.org>" <attacker@[127.0.0.1]>', b"Forged 2", b"I am root\r\n"
    ),
    "two senders": raw_mail(b"ann@example.org, root-admin@example.org", b"Two", b"both\r\n"),
    "no boundary": raw_mail(
        b"ann@example.org",
        b"No boundary",
        b"--x\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        b"!!!not base64!!!\r\n--x--\r\n",
        b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed\r\n",
    ),
    # Never an empty post, never a binary one (CONTRACT §9).
    "empty": raw_mail(b"ann@example.org", b"Empty", b"\r\n  \r\n"),
    "image as the mail": raw_mail(
        b"ann@example.org",
        b"Photo",
        base64.encodebytes(PNG),
        b"MIME-Version: 1.0\r\nContent-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n",
    ),
    "binary as text": raw_mail(
        b"ann@example.org",
        b"Binary text",
        PNG,
        b"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n",
    ),
    "forwarded only": forwarded_only("ann@example.org", "Fwd: Minutes", "Minutes of the meeting."),
}
GOOD = plain("ann@example.org", "Good news", "The roses are out.")


@pytest.fixture
def garden(community, mailbox, dovecot):
    c = community
    c.garden = c.group("garden")
    c.ann = c.user("ann", {c.garden: "member"}, email="ann@example.org")
    c.load()
    c.mailbox = mailbox
    c.config = mailbox.connector(c.garden)
    return c


def test_a_hostile_mailbox_is_emptied_and_only_true_senders_post(garden, client):
    from chalicelib.store.mail import MailRecord
    from chalicelib.store.posts import PostRecord

    assert len(HOSTILE["megabyte line"]) > 1_000_000
    for raw in HOSTILE.values():
        garden.mailbox.deliver(raw)
    garden.mailbox.deliver(GOOD)

    first = deps.mail_ingestor().poll(garden.config, lambda: False)
    second = deps.mail_ingestor().poll(garden.config, lambda: False)

    entries = [e for e in MailRecord.received.query(garden.config.key)]
    assert len(entries) == len(HOSTILE) + 1, [(e.subject, e.status, e.reason) for e in entries]
    assert {e.status for e in entries} <= {"posted", "rejected", "ignored"}
    by_subject = {e.subject: e for e in entries if e.subject}
    for subject in ("Forged 1", "Forged 2", "Two", "No boundary"):
        assert by_subject[subject].status == "rejected", subject
    assert "not a plain name@domain" in by_subject["Forged 1"].reason
    assert "not a plain name@domain" in by_subject["Forged 2"].reason
    assert "names 2 addresses" in by_subject["Two"].reason
    assert by_subject["No boundary"].reason.startswith("cannot be read:")
    assert by_subject["Good news"].status == "posted"
    nested = [e for e in entries if e.status == "rejected" and "nested deeper" in e.reason]
    assert len(nested) == 1
    # An unreadable mail's entry keeps the headers that could be read.
    assert (nested[0].message_id, nested[0].sender, nested[0].subject) == (
        "nested@mail.example",
        "ann@example.org",
        "Nested",
    )
    assert by_subject["No boundary"].message_id and by_subject["No boundary"].sender == (
        "ann@example.org"
    )
    assert "nothing to post: the mail has no text" in by_subject["Empty"].reason
    assert "image/png" in by_subject["Photo"].reason
    assert "binary data, not text" in by_subject["Binary text"].reason

    posts = [p for p in PostRecord.by_group.query(garden.garden)]
    assert {p.author_id for p in posts} == {garden.ann}  # nobody posted as anyone else
    titles = {p.title: p for p in posts}
    assert set(titles) == {
        "Good news",
        "Long line",
        "Megabyte line",
        "Helloworld bell",
        "Long text",
        "Fwd: Minutes",
    }
    for post in posts:
        assert not any(character in post.content + post.title for character in CONTROL)
        assert len(post.content.encode()) < 200_000
    assert "longer than this" in titles["Long text"].content
    assert "NUL BEL ESC text" in titles["Helloworld bell"].content
    assert "Minutes of the meeting." in titles["Fwd: Minutes"].content
    for post in posts:  # nothing empty, nothing binary
        assert post.content.strip() and "PNG" not in post.content and "\ufffd" not in post.content

    assert first.failed == 0 and second.seen == 0
    assert garden.mailbox.count() == 0

    response = client.http.get(f"/api/v1/en_US/feed/{garden.garden}", headers=auth(garden.ann))
    assert response.status_code == 200
    feed = feedparser.parse(response.body)
    assert feed.bozo == 0 and "Good news" in [e.title for e in feed.entries]
