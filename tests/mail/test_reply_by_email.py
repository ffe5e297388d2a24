"""Replies by email (CONTRACT §11): a mail to the email-to-comment mailbox whose `In-Reply-To`
or `References` names one of Agora's own ids is a comment on that post (a reply to that
comment), by every rule of mail in. With fakes; tests/mail/test_make_run_mail.py does it once
against `make run` and Dovecot."""

from __future__ import annotations

import email
from email.message import EmailMessage
from email.policy import default as default_policy

import pytest

from chalicelib.mail.threads import ThreadTarget, read_id, reply_targets
from tests.mail.test_mail_in_fast import BASE, World, comments_box, mail, plan_of
from tests.mail.test_outgoing import REPLIES, instant_mails
from tests.support.mail_fakes import FakeMaildrop
from tests.support.replies import gmail_reply, thunderbird_reply

pytestmark = pytest.mark.fast

HOST = "community.example"
SES_ID = "<0100018c-aaaa@email.amazonses.com>"


@pytest.fixture
def world() -> World:
    return World()


def notification(kind: str = "instant post") -> EmailMessage:
    """A real instant email about post p1 (its comment: 5), with the Message-ID SES writes."""
    message = email.message_from_bytes(instant_mails(REPLIES)[kind], policy=default_policy)
    assert isinstance(message, EmailMessage)
    message["Message-ID"] = SES_ID
    return message


def threaded(*references: str, in_reply_to: str = SES_ID, **options: object) -> bytes:
    headers = {"In-Reply-To": in_reply_to, "References": " ".join([*references, SES_ID])}
    return mail(
        subject="Re: [Garden] Hello", headers=headers, **options
    )  # no permalink in the subject


# --- our ids ---------------------------------------------------------------------------------------


def test_our_ids_name_a_post_or_a_comment_on_our_host_only():
    assert read_id(f"<post.p1@{HOST}>", HOST) == ThreadTarget("p1")
    assert read_id(f"comment.7.post.p1@{HOST.upper()}", HOST) == ThreadTarget("p1", 7)
    for other in (
        "<post.p1@elsewhere.example>",
        SES_ID,
        "<post.@x>",
        f"<comment.x.post.p1@{HOST}>",
    ):
        assert read_id(other, HOST) is None


def test_the_nearest_id_comes_first_in_reply_to_then_references_from_the_last():
    found = reply_targets(
        f"post.p2@{HOST}", [f"post.p1@{HOST}", f"comment.7.post.p1@{HOST}", "x@y"], HOST
    )
    assert found == [ThreadTarget("p2"), ThreadTarget("p1", 7), ThreadTarget("p1")]


# --- what a reply becomes --------------------------------------------------------------------------


@pytest.mark.parametrize("client", [thunderbird_reply, gmail_reply])
def test_a_reply_to_a_post_notification_comments_on_the_post_without_the_quote(world, client):
    raw = client(notification(), "ann@example.org", "Count me in for Friday.", REPLIES)
    plan = plan_of(world, raw, comments_box())
    assert (plan.status, plan.post.id, plan.parent_comment_id) == ("commented", "p1", 0)
    assert plan.content == "<p>Count me in for Friday.</p>"


def test_a_reply_to_a_comment_notification_answers_that_comment(world):
    plan = plan_of(
        world, threaded(f"<post.p1@{HOST}>", f"<comment.7.post.p1@{HOST}>"), comments_box()
    )
    assert (plan.status, plan.post.id, plan.parent_comment_id) == ("commented", "p1", 7)


def test_in_reply_to_alone_is_enough(world):
    raw = mail(subject="Re: hello", headers={"In-Reply-To": f"<comment.7.post.p1@{HOST}>"})
    plan = plan_of(world, raw, comments_box())
    assert (plan.status, plan.parent_comment_id) == ("commented", 7)


def test_a_reply_to_a_deleted_comment_goes_to_its_post(world):
    world.first_comment.values["is_deleted"] = True
    plan = plan_of(
        world, threaded(f"<post.p1@{HOST}>", f"<comment.7.post.p1@{HOST}>"), comments_box()
    )
    assert (plan.status, plan.post.id, plan.parent_comment_id) == ("commented", "p1", 0)


def test_a_comment_id_under_another_post_is_not_that_comment(world):
    world.posts.add(id="p2", group_id="g1", slug="other", title="Other")
    plan = plan_of(world, threaded(f"<comment.7.post.p2@{HOST}>"), comments_box())
    assert plan.status == "rejected"


def test_ids_of_another_host_or_of_a_post_that_is_gone_name_nothing(world):
    for references in ("<post.p1@elsewhere.example>", f"<post.gone@{HOST}>"):
        plan = plan_of(world, threaded(references), comments_box())
        assert (plan.status, plan.reason) == (
            "rejected",
            "the subject names no existing post or comment",
        )


def test_the_headers_win_over_a_permalink_in_the_subject(world):
    world.posts.add(id="p2", group_id="g1", slug="other", title="Other")
    raw = mail(
        subject=f"Re: {BASE}/garden/other",
        headers={"References": f"<post.p1@{HOST}>", "In-Reply-To": f"<post.p1@{HOST}>"},
    )
    assert plan_of(world, raw, comments_box()).post.id == "p1"


def test_the_subject_permalink_still_works_when_the_headers_name_nothing_of_ours(world):
    raw = mail(subject=f"Re: {BASE}/garden/hello#7", headers={"References": SES_ID})
    plan = plan_of(world, raw, comments_box())
    assert (plan.status, plan.parent_comment_id) == ("commented", 7)


# --- by every rule of mail in ----------------------------------------------------------------------


def test_approval_follows_the_role_of_the_sender(world):
    references = f"<post.p1@{HOST}>"
    member = plan_of(world, threaded(references, sender="ann@example.org"), comments_box())
    moderator = plan_of(world, threaded(references, sender="mod@example.org"), comments_box())
    assert (member.is_approved, moderator.is_approved) == (False, True)


@pytest.mark.parametrize(
    ("sender", "reason"),
    [
        ("stranger@example.org", "unknown sender stranger@example.org"),
        ("rita@example.org", "rita@example.org may not comment in group garden"),
    ],
)
def test_unknown_senders_and_senders_without_permission_are_rejected(world, sender, reason):
    plan = plan_of(world, threaded(f"<post.p1@{HOST}>", sender=sender), comments_box())
    assert (plan.status, plan.reason) == ("rejected", reason)


def test_an_automatic_reply_to_a_notification_is_ignored(world):
    raw = mail(
        subject="Re: [Garden] Hello",
        headers={"References": f"<post.p1@{HOST}>", "Auto-Submitted": "auto-replied"},
    )
    assert plan_of(world, raw, comments_box()).status == "ignored"


def test_the_same_reply_delivered_twice_is_one_comment(world):
    raw = thunderbird_reply(notification(), "mod@example.org", "Lovely, see you.", REPLIES)
    result = world.poll(FakeMaildrop(raw, raw), comments_box())
    again = world.poll(FakeMaildrop(raw), comments_box())
    assert (result.commented, result.skipped, again.commented, again.skipped) == (1, 1, 0, 1)
    assert [c.content for c in world.comments.rows.values() if c.id != 7] == [
        "<p>Lovely, see you.</p>"
    ]
