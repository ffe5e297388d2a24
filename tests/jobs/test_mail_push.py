"""Mail in by push (CONTRACT §13): a pushed mail goes through the same pipeline as a polled one,
and SES's receipt event (the raw mail in S3) reaches it through the `receive-mail` function."""

from __future__ import annotations

import pytest

from chalicelib import deps
from chalicelib.domain.mailboxes import SYSTEM_SCOPE, MailStatus
from chalicelib.jobs import mail_push
from tests.fixtures import auth
from tests.support.mail_messages import email_message

DOMAIN = "in.example.org"
BUCKET = "agora-test-inbound"


@pytest.fixture
def world(community, kms_key, monkeypatch):
    from chalicelib.settings import reload_settings

    monkeypatch.setenv("AGORA_MAIL_INBOUND_DOMAIN", DOMAIN)
    monkeypatch.setenv("AGORA_MAIL_INBOUND_BUCKET", BUCKET)
    reload_settings()
    c = community
    c.garden = c.group("garden")
    c.quiet = c.group("quiet")
    c.ann = c.user("ann", {c.garden: "member", c.quiet: "member"}, email="ann@example.org")
    c.hello = c.post(c.garden, c.ann, title="Hello", slug="hello")
    c.load()
    enable(c.garden)
    yield c
    monkeypatch.delenv("AGORA_MAIL_INBOUND_DOMAIN")
    monkeypatch.delenv("AGORA_MAIL_INBOUND_BUCKET")
    reload_settings()


def enable(scope: str, **fields: object) -> None:
    """A push-only connector, saved as the API saves it."""
    from chalicelib.schemas.connectors import MailboxSettingsUpdate

    service = deps.mailbox_settings_service()
    update = MailboxSettingsUpdate.model_validate({"isEnabled": True, **fields})
    if scope == SYSTEM_SCOPE:
        service.update_email_to_comment(update, "tester")
    else:
        service.update_email_to_post(deps.groups().get(scope), update, "tester")


def raw_mail(subject: str = "Pushed news", body: str = "Fresh from the door.", **kw) -> bytes:
    return email_message("ann@example.org", subject, body, to=f"garden@{DOMAIN}", **kw).as_bytes()


def posts_of(group_id: str) -> list:
    page = deps.posts().page_newest_first(group_id, limit=100, after=None, text=None)
    return [p for p in page if p.source == "email"]


def log_of(client, world, group_id: str) -> list[dict]:
    path = f"/api/v1/en_US/connector/email-to-post/{group_id}/log"
    response = client.http.get(path, headers=auth(world.users[0]["id"]))
    import json

    return json.loads(response.body)["object"]["entries"]


def test_a_pushed_mail_becomes_its_post_logged_via_push(world, client):
    lines = mail_push.deliver(raw_mail(), [f"Garden@{DOMAIN.upper()}"])
    assert len(lines) == 1 and "posted 1" in lines[0]
    [post] = posts_of(world.garden)
    assert post.title == "Pushed news" and post.author_id == world.ann
    [entry] = log_of(client, world, world.garden)
    assert entry["status"] == "posted" and entry["via"] == "push"
    assert entry["post"]["id"] == post.id


def test_the_same_mail_pushed_twice_is_one_post(world):
    raw = raw_mail()
    mail_push.deliver(raw, [f"garden@{DOMAIN}"])
    again = mail_push.deliver(raw, [f"garden@{DOMAIN}"])
    assert "skipped 1" in again[0]
    assert len(posts_of(world.garden)) == 1


def test_a_mail_to_a_group_and_the_same_group_again_is_one_post(world):
    mail_push.deliver(raw_mail(), [f"garden@{DOMAIN}", f"GARDEN@{DOMAIN}"])
    assert len(posts_of(world.garden)) == 1


@pytest.mark.parametrize(
    "address",
    [
        f"nobody@{DOMAIN}",  # no such group
        f"quiet@{DOMAIN}",  # its connector is not enabled
        "garden@elsewhere.example",  # not the inbound domain
        "garden",  # no domain at all
    ],
)
def test_only_agora_s_own_addresses_are_known(world, address):
    assert mail_push.recipient_known(address) is False
    assert mail_push.deliver(raw_mail(), [address]) == []
    assert posts_of(world.garden) == [] and posts_of(world.quiet) == []


def test_the_comments_address_and_its_key_forms_are_known(world):
    assert mail_push.recipient_known(f"replies@{DOMAIN}") is False
    enable(SYSTEM_SCOPE, emailAddress=f"replies@{DOMAIN}")
    assert mail_push.recipient_known(f"replies@{DOMAIN}") is True
    assert mail_push.recipient_known(f"Replies+abc.def@{DOMAIN}") is True
    assert mail_push.recipient_known(f"repliesx@{DOMAIN}") is False


def test_a_pushed_reply_with_a_permalink_becomes_a_comment(world):
    enable(SYSTEM_SCOPE, emailAddress=f"replies@{DOMAIN}")
    raw = email_message(
        "ann@example.org",
        "Re: https://community.example/garden/hello",
        "Well said.",
        to=f"replies@{DOMAIN}",
    ).as_bytes()
    [line] = mail_push.deliver(raw, [f"replies@{DOMAIN}"])
    assert "commented 1" in line
    entry = next(iter(deps.mail().page_newest_first("comment#system", limit=5, after=None)))
    assert entry.status == MailStatus.COMMENTED and entry.via == "push" and entry.comment_id
    [comment] = deps.comments().visible_page(world.hello, limit=10, after=None)
    assert comment.id == entry.comment_id and comment.author_id == world.ann


def test_an_oversized_pushed_mail_is_rejected_with_its_headers(world):
    ingestor = deps.mail_ingestor(max_bytes=2000)
    raw = raw_mail(body="x" * 5000)
    [line] = mail_push.deliver(raw, [f"garden@{DOMAIN}"], ingestor=ingestor)
    assert "rejected 1" in line
    [entry] = deps.mail().page_newest_first(f"post#{world.garden}", limit=5, after=None)
    assert entry.status == MailStatus.REJECTED and entry.via == "push"
    assert entry.subject == "Pushed news" and "larger than 2000 bytes" in (entry.reason or "")
    assert posts_of(world.garden) == []
