"""The mail Agora sends, read raw as mail clients and mailbox providers read it (CONTRACT §11):
every kind is built by the real `OutgoingMail` (SES replaced by a capturing mailer), parsed with
Python's `email` default policy, and scored by SpamAssassin's local rules."""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import tempfile
from email.message import EmailMessage
from email.policy import default as default_policy
from email.utils import format_datetime, make_msgid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from chalicelib.domain.letters import Letter
from chalicelib.mail.outgoing import Identity, OutgoingMail
from tests.services.test_notify import NEW_COMMENT, NEW_POST, Fakes
from tests.support.mail_messages import SENT_ON
from tests.support.notify import DIGEST, INSTANT

HOST = "community.example"  # AGORA_BASE_URL's host in tests
GROUP_ADDRESS = "garden@community.example"
REPLIES = "comments@community.example"
CONTENT = (
    "<p>We meet on Friday morning.</p><p>Second paragraph: bring <a "
    'href="https://seeds.example/list">the seed list</a>.</p>'
    "<ul><li>Tomatoes</li><li>Runner beans</li></ul>"
)


class CapturingSes:
    """SES as OutgoingMail calls it: the raw bytes it would send."""

    def __init__(self) -> None:
        self.raw: list[bytes] = []

    def send(self, message: EmailMessage) -> str:
        self.raw.append(message.as_bytes())
        return f"ses-{len(self.raw)}"


def identity(name: str = "Garden Club") -> Identity:
    return Identity(name, GROUP_ADDRESS, "<p>Sent by the <b>Garden Club</b>.</p>")


class GardenIdentities:
    """The services' identity look-up: every group goes under the Garden Club's identity;
    replies by email go to `reply_address` ("": they are off)."""

    def __init__(self, reply_address: str = "") -> None:
        self._reply_address = reply_address

    def of(self, group: object) -> Identity:
        return identity()

    def reply_address(self) -> str:
        return self._reply_address


def outgoing() -> tuple[OutgoingMail, CapturingSes]:
    ses = CapturingSes()
    mail = OutgoingMail(
        ses,
        "noreply@community.example",
        site_host=HOST,
    )
    return mail, ses


def test_a_suppressed_address_is_read_once_and_never_written_to():
    """The services ask before they claim a send and `send` makes sure: the suppression list is
    read once per address, not once for each (one GetItem per instant email, not two)."""
    from chalicelib.mail.outgoing import AddressSuppressed

    asked: list[str] = []

    def listed(address: str) -> bool:
        asked.append(address)
        return address == "gone@example.org"

    ses = CapturingSes()
    mail = OutgoingMail(ses, "noreply@community.example", listed, site_host=HOST)
    group = Fakes().garden
    for to in ("gone@example.org", "bob@example.org"):
        letter = Letter(("Bob", to), "Hello", "Hi", "<p>Hi</p>", identity=identity())
        if mail.is_suppressed(to):
            with pytest.raises(AddressSuppressed):
                mail.send(group, letter)
        else:
            mail.send(group, letter)
    assert asked == ["gone@example.org", "bob@example.org"]
    assert len(ses.raw) == 1


def instant_mails(reply_address: str = "") -> dict[str, bytes]:
    """Bob follows the group's posts and comments instantly and Ann (the author) by digest: the
    instant email of Ann's post and of her comment."""
    fakes = Fakes()
    fakes.posts.rows["p1"].values["content"] = CONTENT
    mail, ses = outgoing()
    fakes.service.mail = mail
    fakes.service.identities = GardenIdentities(reply_address)
    fakes.subscriptions.subscribe("bob", ("author", "ann", 8), email=DIGEST)
    fakes.subscriptions.subscribe("bob", ("group", "g1", 1), email=INSTANT)
    fakes.subscriptions.subscribe("bob", ("group", "g1", 2), email=INSTANT)
    assert fakes.service.handle(NEW_POST).emailed == 1
    assert fakes.service.handle(NEW_COMMENT).emailed == 1
    return {"instant post": ses.raw[0], "instant comment": ses.raw[1]}


def digest_mails(reply_address: str = "") -> dict[str, bytes]:
    from chalicelib.services.notify.digests import FULL, SUMMARY, DigestEntry, digest_email
    from chalicelib.services.notify.emails import DIGEST as DIGEST_SUBSCRIPTION
    from chalicelib.services.notify.emails import unsubscribe_url

    entries = [
        DigestEntry(
            item={
                "kind": "newPost",
                "groupId": "g1",
                "groupName": "Garden",
                "postId": "p1",
                "commentId": None,
                "title": "Hello",
                "url": f"https://{HOST}/garden/hello",
                "author": "Ann",
                "occurredOn": "2026-11-01T09:00:00Z",
                "reason": "All new group posts",
            },
            content_html=CONTENT,
        ),
        DigestEntry(
            item={
                "kind": "newComment",
                "groupId": "g1",
                "groupName": "Garden",
                "postId": "p1",
                "commentId": 5,
                "title": "New comment on: Hello",
                "url": f"https://{HOST}/garden/hello#5",
                "author": "Cy",
                "occurredOn": "2026-11-01T10:00:00Z",
                "reason": "All new group comments",
            },
            content_html="<p>Lovely!</p>",
        ),
    ]
    mail, ses = outgoing()
    garden = Fakes().garden
    link = unsubscribe_url("bob", DIGEST_SUBSCRIPTION, SENT_ON)
    for type_id in (SUMMARY, FULL):
        subject, text, body_html = digest_email(entries, type_id, "2026-11-02")
        letter = Letter(
            ("Bob", "bob@example.org"),
            subject,
            text,
            body_html,
            link,
            reply_address=reply_address,
            identity=identity(),
        )
        mail.send(garden, letter)
    return {"summary digest": ses.raw[0], "full digest": ses.raw[1]}


def mailbox_failure_mails() -> dict[str, bytes]:
    """The email that tells administrators their mailbox keeps failing (the third failed poll
    in a row)."""
    from types import SimpleNamespace

    from chalicelib.domain.announcements import MailboxFailing
    from chalicelib.services.mailbox_alerts import failing_letter

    event = MailboxFailing(
        mailbox="post#g1",
        group_id="g1",
        reason="login",
        message="the server refused the user name or password",
        failures=3,
        next_poll_on="2026-11-02T12:30:00Z",
    )
    mail, ses = outgoing()
    ann = SimpleNamespace(id="ann", alias="Ann", email="ann@example.org")
    mail.send(Fakes().garden, failing_letter(ann, Fakes().garden, event, identity()))
    return {"mailbox failure": ses.raw[0]}


def rejection_notice_mails() -> dict[str, bytes]:
    """The notice a proven sender gets when a mail of theirs is not posted (CONTRACT §9)."""
    from chalicelib.domain.announcements import RejectionNoticeDue
    from chalicelib.services.mail_in.rejections import rejection_letter

    event = RejectionNoticeDue(
        mailbox="post#g1",
        group_id="g1",
        log_entry_id="e1",
        to="sam@example.org",
        subject="Seed swap on Saturday?",
        message_id="<CAB-sam-1@mail.example.org>",
        reason="unknown sender",
        day="2026-11-02",
    )
    mail, ses = outgoing()
    mail.send(Fakes().garden, rejection_letter(event, "the group Garden", identity()))
    return {"rejection notice": ses.raw[0]}


def parsed(raw: bytes) -> EmailMessage:
    message = email.message_from_bytes(raw, policy=default_policy)
    assert isinstance(message, EmailMessage)
    return message


def raw_header(raw: bytes, name: str) -> str:
    """The header as it travels: its lines unfolded, nothing decoded."""
    head = raw.split(b"\n\n", 1)[0].decode("ascii")
    match = re.search(rf"^{name}: (.*(?:\n[ \t].*)*)", head, re.MULTILINE)
    assert match is not None, f"no {name} in\n{head}"
    return re.sub(r"\r?\n[ \t]", " ", match.group(1)).strip()


def text_of(message: EmailMessage) -> str:
    body = message.get_body(preferencelist=("plain",))
    assert body is not None
    return str(body.get_content())


def every_kind() -> dict[str, bytes]:
    return {
        **instant_mails(REPLIES),
        **digest_mails(),
        **mailbox_failure_mails(),
        **rejection_notice_mails(),
    }


@pytest.mark.fast
def test_every_kind_of_mail_reads_back_with_the_default_policy():
    """Headers decode to words (no encoded word left over), the body is text and HTML, and
    the text part keeps paragraphs apart."""
    for kind, raw in every_kind().items():
        assert raw.isascii(), kind  # 7-bit, as SES asks of raw messages
        message = parsed(raw)
        assert message.get_content_type() == "multipart/alternative", kind
        for name, value in message.items():
            assert "=?" not in str(value), (kind, name)
        assert "\n\n" in text_of(message).split("\n-- \n")[0], kind
        assert message.get_body(preferencelist=("html",)) is not None, kind


# --- headers as the RFCs write them ----------------------------------------------------------------


@pytest.mark.fast
def test_list_unsubscribe_is_a_plain_https_url_never_encoded_words():
    for kind, raw in {**instant_mails(), **digest_mails()}.items():
        value = raw_header(raw, "List-Unsubscribe")
        assert value.startswith(f"<https://{HOST}/api/v1/en_US/unsubscribe?token="), kind
        assert value.endswith(">") and "=?" not in value and " " not in value, kind
        assert raw_header(raw, "List-Unsubscribe-Post") == "List-Unsubscribe=One-Click", kind
        assert str(parsed(raw)["List-Unsubscribe"]) == value


@pytest.mark.fast
def test_every_mail_about_one_post_names_it_in_references():
    mails = instant_mails()
    post, comment = parsed(mails["instant post"]), parsed(mails["instant comment"])
    assert raw_header(mails["instant post"], "References") == f"<post.p1@{HOST}>"
    assert "In-Reply-To" not in post
    assert raw_header(mails["instant comment"], "References") == (
        f"<post.p1@{HOST}> <comment.5.post.p1@{HOST}>"
    )
    assert raw_header(mails["instant comment"], "In-Reply-To") == f"<post.p1@{HOST}>"
    # Gmail threads by subject too: the comment's is the post's, answered.
    assert (post["Subject"], comment["Subject"]) == ("[Garden] Hello", "Re: [Garden] Hello")


@pytest.mark.fast
def test_list_id_names_the_group_and_headers_decode_with_a_name_that_is_not_ascii():
    mail, ses = outgoing()
    title = "Semillas " + "muy largas " * 12
    group = Fakes().garden
    letter = Letter(
        ("Zoë", "zoe@example.org"), title, "", "<p>Hola</p>", identity=identity("Jardín, Club & Co")
    )
    mail.send(group, letter)
    [raw] = ses.raw
    assert raw.isascii()
    message = parsed(raw)
    assert message["Subject"] == title
    assert message["List-Id"] == f"Jardín, Club & Co <garden.{HOST}>"
    assert message["From"].addresses[0].display_name == "Jardín, Club & Co"
    assert message["To"].addresses[0].display_name == "Zoë"


# --- bodies worth reading --------------------------------------------------------------------------


@pytest.mark.fast
def test_the_text_part_keeps_paragraphs_lists_and_links():
    for kind, raw in {**instant_mails(), **digest_mails()}.items():
        if kind in ("instant comment", "summary digest"):
            continue  # the comment's own text; the summary lists titles only
        # (The full digest indents each item's content under its title.)
        text = "\n".join(line.strip() for line in text_of(parsed(raw)).splitlines())
        assert "We meet on Friday morning.\n\nSecond paragraph" in text, kind
        assert "[the seed list](https://seeds.example/list)" in text, kind
        assert re.search(r"^[*+] Tomatoes\n[*+] Runner beans$", text, re.MULTILINE), kind


@pytest.mark.fast
def test_the_html_part_is_a_whole_page_with_inline_styles():
    message = parsed(instant_mails()["instant post"])
    body = message.get_body(preferencelist=("html",))
    assert body is not None
    page = str(body.get_content())
    assert page.startswith("<!DOCTYPE html>") and "<style" not in page
    assert 'style="' in page and CONTENT in page


@pytest.mark.fast
def test_the_reason_names_the_subscription_the_unsubscribe_link_ends():
    """Bob follows the group instantly and the author by digest: the post's instant email was
    sent for the group subscription, and says so."""
    from chalicelib.services.notify.emails import read_token

    raw = instant_mails()["instant post"]
    text = " ".join(text_of(parsed(raw)).split())
    assert "because of your subscription: All new group posts in Garden." in text
    assert "author" not in text.lower()
    url = raw_header(raw, "List-Unsubscribe").strip("<>")
    [token] = parse_qs(urlsplit(url).query)["token"]
    # Read when the fakes' clock sent it (the link lasts 60 days from then).
    assert read_token(token, Fakes().service.clock()) == ("bob", "group#g1#1")


@pytest.mark.fast
def test_an_unsubscribe_link_lasts_sixty_days_by_the_clock_of_the_service_that_reads_it():
    """The link is read at the service's clock, as it was made at it: a link made years from the
    machine's clock reads as any other (PyJWT's own clock is not asked)."""
    from datetime import UTC, datetime, timedelta

    from chalicelib.errors import ValidationFailed
    from chalicelib.services.notify.emails import issue_token, read_token

    issued = datetime(2041, 5, 1, 9, 30, tzinfo=UTC)
    token = issue_token("bob", "digest", issued)
    assert read_token(token, issued + timedelta(days=60, seconds=-1)) == ("bob", "digest")
    for later in (timedelta(days=60), timedelta(days=400)):
        with pytest.raises(ValidationFailed) as refused:
            read_token(token, issued + later)
        assert refused.value.errors[0].message == "the unsubscribe link has expired"


@pytest.mark.fast
def test_the_footer_is_under_a_signature_line_with_the_disclaimer():
    text = text_of(parsed(instant_mails()["instant post"]))
    content, footer = text.split("\n-- \n")
    assert "Friday morning" in content and "Unsubscribe" not in content
    assert "Unsubscribe" in footer and "Sent by the Garden Club." in footer


# --- replies by email ------------------------------------------------------------------------------


@pytest.mark.fast
def test_with_replies_by_email_instant_mail_answers_to_the_comment_mailbox():
    for kind, raw in instant_mails(REPLIES).items():
        message = parsed(raw)
        assert message["Reply-To"].addresses[0].addr_spec == REPLIES, kind
        footer = " ".join(text_of(message).split("\n-- \n")[1].split())
        assert (
            f"Reply to this email to comment. To write to the group instead: {GROUP_ADDRESS}"
            in footer
        ), kind
    # A digest is about many posts: its replies still go to the group.
    for kind, raw in digest_mails(REPLIES).items():
        message = parsed(raw)
        assert message["Reply-To"].addresses[0].addr_spec == GROUP_ADDRESS, kind
        assert "Reply to this email" not in text_of(message) and "References" not in message


@pytest.mark.fast
def test_without_replies_by_email_the_group_address_is_the_reply_to():
    for kind, raw in instant_mails().items():
        message = parsed(raw)
        assert message["Reply-To"].addresses[0].addr_spec == GROUP_ADDRESS, kind
        assert "Reply to this email" not in text_of(message), kind


# --- scored as mailbox providers score it ----------------------------------------------------------

SPAMASSASSIN = shutil.which("spamassassin")
MAX_SCORE = 2.0


@pytest.fixture(scope="module")
def spam_scores() -> dict[str, tuple[float, str]]:
    """Every kind of mail Agora sends, with Date and Message-ID added as SES adds them, scored
    by one `spamassassin -L` run over all of them (loading its rules takes seconds)."""
    import mailbox

    if SPAMASSASSIN is None:
        # `make test` installs it (Debian `spamassassin`): in CI its absence is a broken setup.
        if os.environ.get("CI"):
            pytest.fail("spamassassin is required in CI")
        pytest.skip("needs spamassassin (make spamassassin installs it)")
    mails = every_kind()
    with tempfile.TemporaryDirectory() as folder:
        box = mailbox.mbox(Path(folder) / "sent.mbox")
        for raw in mails.values():
            message = email.message_from_bytes(raw)
            message["Date"] = format_datetime(SENT_ON)
            message["Message-ID"] = make_msgid(domain="email.amazonses.com")
            box.add(message)
        box.flush()
        scored = subprocess.run(
            # -L: local rules only (no network tests); Bayes off, so that no run learns from
            # the last and the score is the rules' alone.
            [
                SPAMASSASSIN,
                "-L",
                "-t",
                "--cf=use_bayes 0",
                "--cf=bayes_auto_learn 0",
                "--mbox",
                str(Path(folder) / "sent.mbox"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        ).stdout
    statuses = re.findall(r"^X-Spam-Status: (.*(?:\n[ \t].*)*)", scored, re.MULTILINE)
    assert len(statuses) == len(mails), scored
    results = {}
    for kind, status in zip(mails, statuses, strict=True):
        status = " ".join(status.split())
        score = re.search(r"score=(-?[\d.]+)", status)
        assert score is not None, status
        results[kind] = (float(score.group(1)), status)
    return results


@pytest.mark.parametrize(
    "kind",
    [
        "instant post",
        "instant comment",
        "summary digest",
        "full digest",
        "mailbox failure",
        "rejection notice",
    ],
)
def test_spamassassin_scores_each_kind_of_mail_at_most_2(spam_scores, kind):
    if kind == "mailbox failure" and kind not in spam_scores:
        pytest.skip("the mailbox-failure email is not part of this branch yet")
    score, status = spam_scores[kind]
    assert score <= MAX_SCORE, status
