"""The mail-in rules as pure functions: plain ParsedMail values and records, no server, no store."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from chalicelib.auth import Caller
from chalicelib.mail.parse import AuthenticationResult, ParsedMail
from chalicelib.services.mail_in import rules as mail_rules

pytestmark = pytest.mark.fast  # pure: parsed values and files, no AWS, no server

BASE = "https://community.example"
PERMISSIONS = {
    "post": ["member", "moderator", "administrator"],
    "comment": ["member", "moderator", "administrator"],
    "commentWithoutApproval": ["moderator", "administrator"],
}
GARDEN = SimpleNamespace(id="g1", slug="garden", access="private", permissions=PERMISSIONS)
POST = SimpleNamespace(id="p1", slug="hello")
ANN = SimpleNamespace(id="u-ann", alias="Ann", memberships={"g1": "member"})
MOD = SimpleNamespace(id="u-mod", alias="Mod", memberships={"g1": "moderator"})
RITA = SimpleNamespace(id="u-rita", alias="Rita", memberships={})


def parsed(**changes) -> ParsedMail:
    base = ParsedMail(
        message_id="m1@mail.example",
        content_hash="0" * 64,
        size=100,
        from_address="ann@example.org",
        from_name="Ann",
        sender_problem=None,
        to_addresses=("garden@community.example",),
        subject="Seed swap",
        date=None,
        in_reply_to=None,
        references=(),
        text="Bring seeds.",
        html="<p>Bring seeds.</p>",
        attachments=(),
        is_auto_reply=False,
        auto_reason=None,
        is_bounce=False,
        bounce_reason=None,
        is_spam=False,
        authentication_results=(),
        list_id=None,
    )
    return dataclasses.replace(base, **changes)


def caller(user) -> Caller:
    return Caller.of(user, "root")


def test_a_members_mail_becomes_a_post_titled_by_its_subject():
    plan = mail_rules.plan_post(parsed(), ANN, caller(ANN), GARDEN)
    assert (plan.status, plan.title, plan.content, plan.author) == (
        "posted",
        "Seed swap",
        "<p>Bring seeds.</p>",
        ANN,
    )


@pytest.mark.parametrize(
    ("changes", "status", "reason"),
    [
        ({"is_bounce": True, "bounce_reason": "empty return path"}, "ignored", "bounce"),
        ({"is_auto_reply": True, "auto_reason": "Auto-Submitted: x"}, "ignored", "auto-reply"),
        ({"is_spam": True}, "rejected", "marked as spam"),
        (
            {"from_address": None, "sender_problem": "the From header names 2 addresses, not one"},
            "rejected",
            "no valid sender address: the From header names 2 addresses",
        ),
        (
            {"authentication_results": (AuthenticationResult("mx.community.example", "fail"),)},
            "rejected",
            "spoofed: DMARC failed at mx.community.example",
        ),
    ],
)
def test_screening(changes, status, reason):
    plan = mail_rules.screen(parsed(**changes), "mx.community.example")
    assert plan is not None and plan.status == status and plan.reason.startswith(reason)


def test_dmarc_is_only_checked_when_the_operator_names_the_receiving_server():
    forged = parsed(authentication_results=(AuthenticationResult("mx.community.example", "fail"),))
    assert mail_rules.screen(forged, None) is None


def test_a_dmarc_fail_written_lower_down_by_the_sender_does_not_count():
    results = (
        AuthenticationResult("mx.community.example", "pass"),
        AuthenticationResult("mx.community.example", "fail"),
    )
    assert mail_rules.screen(parsed(authentication_results=results), "mx.community.example") is None


def test_outsiders_and_vanished_groups_are_rejected():
    assert (
        "may not post in group garden"
        in mail_rules.plan_post(parsed(), RITA, caller(RITA), GARDEN).reason
    )
    assert mail_rules.plan_post(parsed(), ANN, caller(ANN), None).reason == (
        "the mailbox's group no longer exists"
    )


def test_comment_approval_follows_the_role():
    target = (GARDEN, POST, 7)
    member = mail_rules.plan_comment(parsed(text="Nice"), ANN, caller(ANN), target)
    moderator = mail_rules.plan_comment(parsed(text="Nice"), MOD, caller(MOD), target)
    assert (member.status, member.is_approved, member.parent_comment_id) == ("commented", False, 7)
    assert moderator.is_approved is True
    assert mail_rules.plan_comment(parsed(), ANN, caller(ANN), None).status == "rejected"


def test_attachments_are_noted():
    from chalicelib.mail.parse import Attachment

    mail = parsed(attachments=(Attachment("a.pdf", "application/pdf", 10),))
    assert mail_rules.plan_post(mail, ANN, caller(ANN), GARDEN).notes == [
        "1 attachment(s) not imported: a.pdf"
    ]


def test_permalinks_in_a_subject():
    subject = (
        f"Re: Fwd: see {BASE}/Garden/Hello#12 and {BASE}/garden/other/ and https://x.example/a/b"
    )
    assert mail_rules.permalink_candidates(subject, BASE + "/") == [
        mail_rules.Permalink("garden", "hello", 12),
        mail_rules.Permalink("garden", "other", None),
    ]


def test_content_too_large_for_an_item_is_cut_with_a_visible_note():
    huge = "<p>" + "é" * 200_000 + "</p><p>tail</p>"
    plan = mail_rules.plan_post(parsed(html=huge), ANN, caller(ANN), GARDEN)
    assert len(plan.content.encode()) <= mail_rules.MAX_CONTENT_BYTES
    assert plan.content.endswith(f"<p>{mail_rules.TRUNCATED_NOTE}</p>")
    assert plan.content.startswith("<p>éé") and "tail" not in plan.content
    assert "content truncated" in plan.notes[-1]


def test_a_cut_never_leaves_half_a_tag():
    markup = "<p>" + "a" * 99 + '<a href="https://example.org/' + "x" * 500 + '">link</a></p>'
    fitted, truncated = mail_rules.fit_html(markup, 300)
    assert truncated and "<a" not in fitted and "href" not in fitted


def test_under_header_mode_a_mail_read_two_ways_is_not_the_senders():
    """CONTRACT §9: a header block read two ways is the signer's only with AGORA_MAIL_AUTH=off;
    the receiving server's DMARC pass was about its own reading."""
    problem = "its header block holds a CR that does not end a line (a bare CR)"
    two_ways = parsed(reading_problem=problem)

    plan = mail_rules.screen(two_ways, "mx.community.example")

    assert plan is not None and plan.status == "rejected"
    assert plan.reason == (
        f"sender not verified: {problem}, so the DMARC result of mx.community.example may be "
        "about another reading of it"
    )
    assert mail_rules.screen(two_ways, None) is None  # AGORA_MAIL_AUTH=off: read as it is
    assert mail_rules.screen(parsed(), "mx.community.example") is None
