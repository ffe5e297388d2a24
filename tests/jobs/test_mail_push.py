"""Mail in by push (CONTRACT §13): a pushed mail goes through the same pipeline as a polled one,
and SES's receipt event (the raw mail in S3) reaches it through the `receive-mail` function."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from chalicelib import deps
from chalicelib.domain.mailboxes import SYSTEM_SCOPE, MailStatus
from chalicelib.jobs import mail_push
from tests.fixtures import auth
from tests.infra.test_privileges import recorder  # noqa: F401 (the fixture: every AWS call recorded)
from tests.support.mail_messages import email_message, ses_event

DOMAIN = "in.example.org"
# The stage's bucket as the stack names it (infra/inbound.py): its policy grants it by name.
BUCKET = "agora-dev-inbound-mail-123456789012-us-east-1"


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
    [line] = mail_push.deliver(
        raw, [f"garden@{DOMAIN}"], parts=replace(mail_push.composed(), ingestor=lambda: ingestor)
    )
    assert "rejected 1" in line
    [entry] = deps.mail().page_newest_first(f"post#{world.garden}", limit=5, after=None)
    assert entry.status == MailStatus.REJECTED and entry.via == "push"
    assert entry.subject == "Pushed news" and "larger than 2000 bytes" in (entry.reason or "")
    assert posts_of(world.garden) == []


# --- AWS: SES receiving, the raw mail in S3 ------------------------------------------------------


def stored_in_s3(message_id: str, raw: bytes) -> None:
    from chalicelib.aws import client

    s3 = client("s3")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key=f"inbound/{message_id}", Body=raw)


def test_the_receive_function_turns_an_ses_receipt_into_one_post(world, client):
    raw = raw_mail()
    stored_in_s3("o3vrnil0e2ic28trm7dfhrc2v0cnbfvqbq1c5g01", raw)
    event = ses_event("o3vrnil0e2ic28trm7dfhrc2v0cnbfvqbq1c5g01", [f"garden@{DOMAIN}"])
    first = client.lambda_.invoke("receive-mail", event).payload
    assert "posted 1" in first
    # SES delivers again (a retried invocation): the same mail, one post.
    again = client.lambda_.invoke("receive-mail", event).payload
    assert "skipped 1" in again
    [post] = posts_of(world.garden)
    assert post.created_on == datetime(2026, 11, 1, 12, 0, 5, tzinfo=UTC)
    [entry] = log_of(client, world, world.garden)
    assert entry["via"] == "push" and entry["status"] == "posted"


def test_the_verdict_function_stops_mail_for_no_address_of_agora_s(world, client):
    known = ses_event("a1", [f"nobody@{DOMAIN}", f"garden@{DOMAIN}"])
    unknown = ses_event("a2", [f"nobody@{DOMAIN}", f"quiet@{DOMAIN}"])
    assert client.lambda_.invoke("mail-verdict", known).payload == {"disposition": "CONTINUE"}
    assert client.lambda_.invoke("mail-verdict", unknown).payload == {"disposition": "STOP_RULE"}


def test_receive_mail_stays_within_its_grant(world, client, recorder):  # noqa: F811
    from tests.infra.test_privileges import assert_granted, declared_tables

    stored_in_s3("m1", raw_mail())
    recorder.calls.clear()
    assert (
        "posted 1"
        in client.lambda_.invoke("receive-mail", ses_event("m1", [f"garden@{DOMAIN}"])).payload
    )
    assert_granted("receive-mail", recorder)
    assert ("s3:GetObject", f"arn:aws:s3:::{BUCKET}/inbound/m1") in recorder.calls
    # A post: every table granted but those only a comment writes (its id's counter, itself)
    # and the suppressions, read only to tell a rejected mail's sender why.
    not_for_a_post = {"agora-dev-comments", "agora-dev-counters", "agora-dev-email-suppressions"}
    assert recorder.tables() == declared_tables("receive-mail") - not_for_a_post
    stored_in_s3("m3", raw_mail().replace(b"ann@example.org", b"stranger@example.net"))
    recorder.calls.clear()
    told = client.lambda_.invoke("receive-mail", ses_event("m3", [f"garden@{DOMAIN}"])).payload
    assert "rejected 1" in told
    assert_granted("receive-mail", recorder)
    assert "agora-dev-email-suppressions" in recorder.tables()
    recorder.calls.clear()
    client.lambda_.invoke("mail-verdict", ses_event("m2", [f"garden@{DOMAIN}"]))
    assert_granted("mail-verdict", recorder)
    assert recorder.tables() == declared_tables("mail-verdict")


def test_the_stack_receives_for_its_inbound_domain_only_into_its_bucket():
    """The packaged template's SES receiving (infra/inbound.py): a rule for the parameter's
    domain whose actions are, in order, the verdict, the encrypted bucket, the function."""
    from tests.infra.test_privileges import template  # the committed infra/<stage>.yaml, read back

    resources = template("prod")["Resources"]
    rule = resources["InboundReceiptRule"]
    assert rule["Condition"] == "ReceivesMail"
    assert rule["Properties"]["Rule"]["Recipients"] == [{"Ref": "MailInboundDomain"}]
    kinds = [next(iter(action)) for action in rule["Properties"]["Rule"]["Actions"]]
    assert kinds == ["LambdaAction", "S3Action", "LambdaAction"]
    verdict, stored, receive = rule["Properties"]["Rule"]["Actions"]
    assert verdict["LambdaAction"]["InvocationType"] == "RequestResponse"
    assert stored["S3Action"]["ObjectKeyPrefix"] == "inbound/"
    assert receive["LambdaAction"]["InvocationType"] == "Event"
    bucket = resources["InboundMailBucket"]["Properties"]
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ] == {"SSEAlgorithm": "AES256"}
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    [expiry] = bucket["LifecycleConfiguration"]["Rules"]
    assert expiry["ExpirationInDays"] == 14 and expiry["Prefix"] == "inbound/"
    statements = resources["InboundMailBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert statements[0]["Principal"] == {"Service": "ses.amazonaws.com"}
    assert statements[0]["Action"] == "s3:PutObject"
    assert "InboundMailDeadLettersAlarm" in resources and "ReceiveMailErrorsAlarm" in resources
