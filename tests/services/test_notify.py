"""Notifications of new posts and comments: who is told, once, and how (SES in moto)."""

from __future__ import annotations

from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

import pytest

from chalicelib import deps
from chalicelib.services.domain_events import CommentCreated, PostCreated
from chalicelib.settings import get_settings
from tests.mail.conftest import dovecot, mailbox  # noqa: F401 - fixtures for the mailed post
from tests.support.notify import (
    group_record,
    html_of,
    recipients,
    sent_mail,
    set_disclaimer,
    set_group_email,
    subscribe,
    text_of,
    verify_sender_domain,
)
from tests.support.outbox import drain

INSTANT, DIGEST = 1, 2


@pytest.fixture
def world(community):
    c = community
    c.garden = c.group("garden")
    c.photos = c.group("photos", access="private")
    c.ann = c.user("ann", {c.garden: "member", c.photos: "member"})
    c.group_fan = c.user("group-fan", {c.garden: "member"})
    c.author_fan = c.user("author-fan")
    c.double_fan = c.user("double-fan", {c.garden: "member", c.photos: "member"})
    c.digest_fan = c.user("digest-fan")
    c.alert_fan = c.user("alert-fan")
    c.outsider = c.user("outsider")
    c.hello = c.post(c.garden, c.ann, title="Hello", slug="hello")
    c.pier = c.post(c.photos, c.ann, title="Pier", slug="pier")
    c.load()
    verify_sender_domain()
    set_group_email(group_record(c.garden), "garden@community.example", "Garden Club")
    set_disclaimer(group_record(c.garden), "<p>Sent by the <b>Garden Club</b>.</p>")
    return c


def subscribe_everyone(c) -> None:
    subscribe(c.group_fan, "group", c.garden, 1, email=INSTANT)
    subscribe(c.author_fan, "author", c.ann, 8, email=INSTANT)
    subscribe(c.double_fan, "group", c.garden, 1, email=DIGEST)
    subscribe(c.double_fan, "author", c.ann, 8, email=INSTANT, red=True)
    subscribe(c.digest_fan, "group", c.garden, 1, email=DIGEST)
    subscribe(c.alert_fan, "group", c.garden, 1, screen=True, red=True)
    subscribe(c.ann, "group", c.garden, 1, email=INSTANT, red=True)  # the author herself


def alerts_of(user_id: str):
    from chalicelib.store.alerts import ALERT, AlertRecord

    return list(AlertRecord.query(user_id, AlertRecord.sk.startswith(ALERT)))


def digest_items_of(user_id: str):
    from chalicelib.store.digests import ITEM, DigestRecord

    return list(DigestRecord.query(user_id, DigestRecord.sk.startswith(ITEM)))


def email_of(c, user_id: str) -> str:
    return next(u["email"] for u in c.users if u["id"] == user_id)


def mail_post(c, box, subject: str) -> str:
    """Mail a post from Ann into the garden's email-to-post mailbox; answers the new post id."""
    from chalicelib.store.posts import PostRecord

    message = EmailMessage()
    message["From"] = "ann@example.org"
    message["To"] = "garden@community.example"
    message["Subject"] = subject
    message["Date"] = format_datetime(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    message["Message-ID"] = make_msgid(domain="mail.example")
    message.set_content("The roses are out.\n\nCome and see them.")
    box.deliver(message.as_bytes())
    config = box.connector(c.garden)
    result = deps.mail_ingestor().poll(config, lambda: False)
    assert result.posted == 1, result.line()
    [post] = [p for p in PostRecord.by_group.query(c.garden) if p.title == subject]
    return post.id


def test_mailed_post_notifies_each_subscriber_once_and_never_the_author(world, mailbox):  # noqa: F811
    c = world
    subscribe_everyone(c)
    post_id = mail_post(c, mailbox, "Roses in bloom")
    assert sent_mail() == []  # told by the outbox drain, not by the poll
    drain()

    messages = sent_mail()
    # Group fan and author fan by email; the double fan once (instant wins over the digest).
    assert recipients(messages) == sorted(
        email_of(c, u) for u in (c.group_fan, c.author_fan, c.double_fan)
    )
    assert email_of(c, c.ann) not in recipients(messages)
    message = messages[0]
    assert message["From"].addresses[0].addr_spec == "noreply@community.example"
    assert message["From"].addresses[0].display_name == "Garden Club"
    assert message["Reply-To"].addresses[0].addr_spec == "garden@community.example"
    assert message["Auto-Submitted"] == "auto-generated"
    assert message["Subject"] == "[Garden] Roses in bloom"
    url = "https://community.example/garden/roses-in-bloom"
    assert url in text_of(message) and f'href="{url}"' in html_of(message)
    assert text_of(message).rstrip().endswith("Sent by the Garden Club.")
    assert "<b>Garden Club</b>" in html_of(message)
    # The digest fan gets a digest item, the alert fan an alert; the double fan both kinds once.
    assert [i.occurrence_id for i in digest_items_of(c.digest_fan)] == [f"post-{post_id}"]
    assert digest_items_of(c.double_fan) == []
    assert [a.alert_id for a in alerts_of(c.alert_fan)] == [f"post-{post_id}"]
    assert [a.alert_id for a in alerts_of(c.double_fan)] == [f"post-{post_id}"]
    assert alerts_of(c.ann) == [] and alerts_of(c.group_fan) == []


def test_our_notification_mailed_back_into_a_connector_is_ignored(world):
    from chalicelib.mail.parse import parse_mail

    subscribe(world.group_fan, "group", world.garden, 1, email=INSTANT)
    deps.domain_events().publish(PostCreated(world.hello, world.garden, world.ann))
    [message] = sent_mail()
    parsed = parse_mail(message.as_bytes())
    assert parsed.is_auto_reply is True


def test_the_same_event_twice_tells_each_user_once(world):
    c = world
    subscribe_everyone(c)
    event = PostCreated(post_id=c.hello, group_id=c.garden, author_id=c.ann)
    service = deps.notify_service()
    first = service.handle(event)
    second = service.handle(event)
    assert (first.emailed, first.queued, first.alerts) == (3, 1, 2)
    assert (second.emailed, second.queued, second.alerts) == (0, 0, 0)
    assert len(sent_mail()) == 3
    assert len(digest_items_of(c.digest_fan)) == 1 and len(alerts_of(c.alert_fan)) == 1


def test_users_who_may_not_enter_a_private_group_are_not_told(world):
    c = world
    subscribe(c.outsider, "author", c.ann, 8, email=INSTANT, red=True)
    subscribe(c.double_fan, "author", c.ann, 8, email=INSTANT)
    # Subscribed while a member, no longer one: the stored subscription is not enough.
    subscribe(c.group_fan, "group", c.photos, 1, email=INSTANT)
    report = deps.notify_service().handle(PostCreated(c.pier, c.photos, c.ann))
    assert recipients(sent_mail()) == [email_of(c, c.double_fan)]
    assert report.skipped == 2
    assert alerts_of(c.outsider) == []


def test_comment_notifies_post_and_group_subscribers_once(world):
    from chalicelib.store.comments import CommentRepository

    c = world
    comment_id = 900
    CommentRepository().insert(
        id=comment_id,
        post_id=c.hello,
        group_id=c.garden,
        author_id=c.group_fan,
        content="<p>Lovely roses!</p>",
        created_on=datetime(2026, 3, 1, 10, 0, tzinfo=UTC),
        is_approved=True,
    )
    subscribe(c.ann, "post", c.hello, 3, email=INSTANT, group_id=c.garden)
    subscribe(c.double_fan, "post", c.hello, 3, email=INSTANT, group_id=c.garden)
    subscribe(c.double_fan, "group", c.garden, 2, email=INSTANT)
    subscribe(c.group_fan, "group", c.garden, 2, email=INSTANT)  # the comment's author
    subscribe(c.alert_fan, "group", c.garden, 1, email=INSTANT)  # posts only, not comments
    deps.domain_events().publish(
        CommentCreated(comment_id, c.hello, c.garden, c.group_fan, is_approved=True)
    )
    messages = sent_mail()
    assert recipients(messages) == sorted([email_of(c, c.ann), email_of(c, c.double_fan)])
    assert messages[0]["Subject"] == "[Garden] New comment on: Hello"
    assert "https://community.example/garden/hello#900" in text_of(messages[0])
    assert "Lovely roses!" in text_of(messages[0])


def test_comment_awaiting_approval_tells_nobody(world):
    subscribe(world.double_fan, "group", world.garden, 2, email=INSTANT, red=True)
    report = deps.notify_service().handle(
        CommentCreated(901, world.hello, world.garden, world.ann, is_approved=False)
    )
    assert report.recipients == 0 and sent_mail() == []


def test_a_group_never_sends_as_another_address_of_the_platform_domain(world):
    # Issue 24: a group administrator saved security@<platform domain>; the mail still comes from
    # the platform's one sender, under the group's name, the group's address only as Reply-To.
    c = world
    set_group_email(group_record(c.garden), "security@community.example", "Security Team")
    subscribe(c.group_fan, "group", c.garden, 1, email=INSTANT)
    deps.notify_service().handle(PostCreated(c.hello, c.garden, c.ann))
    [message] = sent_mail()
    assert message["From"].addresses[0].addr_spec == "noreply@community.example"
    assert message["From"].addresses[0].display_name == "Security Team"
    assert message["Reply-To"].addresses[0].addr_spec == "security@community.example"


def test_mail_sender_setting_is_the_from_address(world, monkeypatch):
    from chalicelib.settings import reload_settings

    c = world
    monkeypatch.setenv("AGORA_MAIL_SENDER", "agora@mail.community.example")
    reload_settings()
    verify_sender_domain("mail.community.example")
    set_group_email(group_record(c.garden), "club@elsewhere.example", "Garden Club")
    subscribe(c.group_fan, "group", c.garden, 1, email=INSTANT)
    deps.notify_service().handle(PostCreated(c.hello, c.garden, c.ann))
    [message] = sent_mail()
    assert message["From"].addresses[0].addr_spec == "agora@mail.community.example"
    assert message["Reply-To"].addresses[0].addr_spec == "club@elsewhere.example"


def test_many_subscribers_fan_out_through_sqs(world):
    from chalicelib.aws import client
    from chalicelib.jobs.notify import drain_queue
    from chalicelib.local import ensure_queue

    c = world
    ensure_queue(get_settings().notify_queue)
    fans = [c.group_fan, c.author_fan, c.digest_fan, c.alert_fan, c.outsider]
    for fan in fans:
        subscribe(fan, "group", c.garden, 1, email=INSTANT)
    report = deps.notify_service(inline_limit=2, chunk_size=2).handle(
        PostCreated(c.hello, c.garden, c.ann)
    )
    assert (report.recipients, report.fanned_out, report.emailed) == (5, 3, 0)
    assert sent_mail() == []
    assert drain_queue() == 3
    assert recipients(sent_mail()) == sorted(email_of(c, fan) for fan in fans)
    url = client("sqs").get_queue_url(QueueName=get_settings().notify_queue)["QueueUrl"]
    assert client("sqs").receive_message(QueueUrl=url).get("Messages", []) == []


def test_sqs_function_delivers_a_chunk_through_app_wiring(world, client):
    from chalicelib.services.notify import Recipient, chunk_body

    body = chunk_body(
        PostCreated(world.hello, world.garden, world.ann),
        [Recipient(world.group_fan, email_alert_id=INSTANT, reason="All new group posts")],
    )
    event = client.events.generate_sqs_event(
        message_bodies=[body], queue_name=get_settings().notify_queue
    )
    response = client.lambda_.invoke("deliver-notifications", event)
    assert response.payload == {"batchItemFailures": []}
    assert recipients(sent_mail()) == [email_of(world, world.group_fan)]


def test_a_batch_reads_subscribers_once_and_outside_one_every_event_reads_them(
    world, dynamo_counter
):
    from chalicelib.services import domain_events

    c = world
    subscribe(c.group_fan, "group", c.garden, 1, email=INSTANT)
    event = PostCreated(post_id=c.hello, group_id=c.garden, author_id=c.ann)
    service = deps.notify_service()

    with domain_events.batch():
        first = service.recipients(event)
        dynamo_counter.reset()
        # A subscription stored during the batch (a mail poll) counts from the next one on.
        subscribe(c.alert_fan, "group", c.garden, 1, screen=True)
        with domain_events.batch():  # nested: the same batch
            again = service.recipients(event)
        assert dynamo_counter.requests == {"UpdateItem": 1}  # the subscription only, no Query
    assert [r.user_id for r in first] == [r.user_id for r in again] == [c.group_fan]

    # Outside a batch (a request), each event reads the subscribers as they are now.
    dynamo_counter.reset()
    fresh = service.recipients(event)
    assert dynamo_counter.requests == {"Query": 2}  # the author's and the group's subscribers
    assert sorted(r.user_id for r in fresh) == sorted([c.group_fan, c.alert_fan])
