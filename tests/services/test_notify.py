"""Notifications of new posts and comments: who is told, once, and how (SES in moto)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from chalicelib import deps
from chalicelib.domain.announcements import Announcement, CommentCreated, PostCreated, Recorded
from chalicelib.jobs.outbox import subscribers_of_batch
from chalicelib.jobs.outbox import tell as tell_subscribers
from chalicelib.settings import get_settings
from tests.mail.conftest import dovecot, mailbox  # noqa: F401 - fixtures for the mailed post
from tests.support.mail_messages import email_message
from tests.support.notify import (
    DIGEST,
    INSTANT,
    ann_in_garden_and_photos,
    email_of,
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


def tell(announcement: Announcement) -> None:
    """Tell it to its subscribers as the outbox drain composes them (jobs/outbox.py)."""
    tell_subscribers(
        subscribers_of_batch([announcement]), Recorded(str(uuid.uuid4()), announcement)
    )


@pytest.fixture
def world(community):
    c = ann_in_garden_and_photos(community)
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
    from chalicelib.store.notifications import ITEM, DigestRecord

    return list(DigestRecord.query(user_id, DigestRecord.sk.startswith(ITEM)))


def mail_post(c, box, subject: str) -> str:
    """Mail a post from Ann into the garden's email-to-post mailbox; answers the new post id."""
    from chalicelib.store.posts import PostRecord

    message = email_message(
        "ann@example.org",
        subject,
        "The roses are out.\n\nCome and see them.",
        sent_on=datetime(2026, 3, 1, 9, 0, tzinfo=UTC),
    )
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


def test_with_replies_by_email_instant_mail_answers_to_the_comment_mailbox(
    world, kms_key, private_mail_hosts
):
    """The email-to-comment mailbox's emailAddress set (and the mailbox enabled): the instant
    email's Reply-To is that address, the group's own address is in its footer."""
    from chalicelib.schemas.connectors import MailboxSettingsUpdate

    if "email_address" not in MailboxSettingsUpdate.model_fields:
        pytest.skip("the mailbox settings take emailAddress with the mail-at-scale branch")
    settings = {
        "serverName": "127.0.0.1",
        "serverPort": 110,
        "serverUsername": "comments",
        "serverPassword": "secret",
        "isEnabled": True,
        "isSSL": False,
        "deleteProcessed": False,
        "emailAddress": "comments@community.example",
    }
    deps.mailbox_settings_service().update_email_to_comment(
        MailboxSettingsUpdate.model_validate(settings), world.ann
    )
    subscribe(world.group_fan, "group", world.garden, 1, email=INSTANT)
    tell(PostCreated(world.hello, world.garden, world.ann))
    drain()
    [message] = sent_mail()
    # The address with the recipient's reply key (CONTRACT §9), which names them and the post.
    reply_to = message["Reply-To"].addresses[0]
    local, _, key = reply_to.username.partition("+")
    assert (local, reply_to.domain) == ("comments", "community.example")
    assert len(reply_to.username) <= 64 and key == key.lower()
    keyed = deps.reply_keys().read([reply_to.addr_spec.upper()])  # an MTA may change its case
    assert keyed is not None and (keyed.post_id, keyed.comment_id) == (world.hello, None)
    assert keyed.is_for(world.group_fan) and not keyed.is_for(world.ann)
    assert "To write to the group instead: garden@community.example" in text_of(message)
    assert str(message["References"]) == f"<post.{world.hello}@community.example>"


def test_our_notification_mailed_back_into_a_connector_is_ignored(world):
    from chalicelib.mail.parse import parse_mail

    subscribe(world.group_fan, "group", world.garden, 1, email=INSTANT)
    tell(PostCreated(world.hello, world.garden, world.ann))
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
    tell(CommentCreated(comment_id, c.hello, c.garden, c.group_fan, is_approved=True))
    messages = sent_mail()
    assert recipients(messages) == sorted([email_of(c, c.ann), email_of(c, c.double_fan)])
    assert messages[0]["Subject"] == "Re: [Garden] Hello"
    assert "https://community.example/garden/hello#900" in text_of(messages[0])
    assert "Lovely roses!" in text_of(messages[0])


def test_comment_awaiting_approval_tells_nobody(world):
    subscribe(world.double_fan, "group", world.garden, 2, email=INSTANT, red=True)
    report = deps.notify_service().handle(
        CommentCreated(901, world.hello, world.garden, world.ann, is_approved=False)
    )
    assert report.recipients == 0 and sent_mail() == []


def post_mail_from_group(c, address: str, name: str):
    """The one mail the group's fan gets of Ann's post once the garden's email is `address`
    under `name`."""
    set_group_email(group_record(c.garden), address, name)
    subscribe(c.group_fan, "group", c.garden, 1, email=INSTANT)
    deps.notify_service().handle(PostCreated(c.hello, c.garden, c.ann))
    [message] = sent_mail()
    return message


def test_a_group_never_sends_as_another_address_of_the_platform_domain(world):
    # Issue 24: a group administrator saved security@<platform domain>; the mail still comes from
    # the platform's one sender, under the group's name, the group's address only as Reply-To.
    message = post_mail_from_group(world, "security@community.example", "Security Team")
    assert message["From"].addresses[0].addr_spec == "noreply@community.example"
    assert message["From"].addresses[0].display_name == "Security Team"
    assert message["Reply-To"].addresses[0].addr_spec == "security@community.example"


def test_mail_sender_setting_is_the_from_address(world, monkeypatch):
    from chalicelib.settings import reload_settings

    c = world
    monkeypatch.setenv("AGORA_MAIL_SENDER", "agora@mail.community.example")
    reload_settings()
    verify_sender_domain("mail.community.example")
    message = post_mail_from_group(c, "club@elsewhere.example", "Garden Club")
    assert message["From"].addresses[0].addr_spec == "agora@mail.community.example"
    assert message["Reply-To"].addresses[0].addr_spec == "club@elsewhere.example"


def test_many_subscribers_fan_out_through_sqs(world):
    from agora_local.run import ensure_queue
    from chalicelib.aws import client
    from chalicelib.jobs.notify import drain_queue

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
    from chalicelib.services.notify.delivery import Recipient, chunk_body

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
    from chalicelib.services.notify.delivery import BatchReads

    c = world
    subscribe(c.group_fan, "group", c.garden, 1, email=INSTANT)
    event = PostCreated(post_id=c.hello, group_id=c.garden, author_id=c.ann)
    batch = deps.notify_service(reads=BatchReads())  # what the drain makes for one batch

    first = batch.recipients(event)
    dynamo_counter.reset()
    # A subscription stored during the batch (a mail poll) counts from the next one on.
    subscribe(c.alert_fan, "group", c.garden, 1, screen=True)
    again = batch.recipients(event)
    assert dynamo_counter.requests == {"UpdateItem": 1}  # the subscription only, no Query
    assert [r.user_id for r in first] == [r.user_id for r in again] == [c.group_fan]

    # Outside a batch (a request), each event reads the subscribers as they are now.
    dynamo_counter.reset()
    fresh = deps.notify_service().recipients(event)
    assert dynamo_counter.requests == {"Query": 2}  # the author's and the group's subscribers
    assert sorted(r.user_id for r in fresh) == sorted([c.group_fan, c.alert_fan])


# --- the rules, with fakes (no moto): who is told, once, and how -----------------------------------


class Fakes:
    """A private garden with members, a post and a comment by Ann, in memory."""

    def __init__(self) -> None:
        from types import SimpleNamespace

        from chalicelib.services.notify.delivery import NotifyService
        from tests.support.fakes import FakeUserRepository
        from tests.support.mail_fakes import (
            FakeAlerts,
            FakeDigests,
            FakeFanout,
            FakeMailComments,
            FakeMailer,
            FakeMailGroups,
            FakeMailPosts,
            FakeSubscriptions,
            NamedIdentities,
            add_user,
        )

        root = SimpleNamespace(id="root", slug="root", parent_id=None, access="public")
        self.garden = SimpleNamespace(
            id="g1",
            slug="garden",
            name="Garden",
            parent_id="root",
            access="private",
            thumb_url=None,
        )
        self.users = FakeUserRepository()
        for name in ("ann", "bob", "cy"):
            add_user(self.users, name, {"g1": "member"})
        add_user(self.users, "outsider", {})
        self.posts = FakeMailPosts()
        self.posts.add(
            id="p1",
            group_id="g1",
            slug="hello",
            title="Hello",
            content="<p>Hi</p>",
            author_id="ann",
            created_on=datetime(2026, 11, 1, tzinfo=UTC),
        )
        self.comments = FakeMailComments()
        self.comments.add(
            id=5,
            post_id="p1",
            content="<p>Nice</p>",
            author_id="ann",
            is_anonymous=False,
            is_approved=True,
            deleted_on=None,
            created_on=datetime(2026, 11, 2, tzinfo=UTC),
        )
        self.subscriptions = FakeSubscriptions()
        self.alerts, self.digests = FakeAlerts(), FakeDigests()
        self.mail, self.fanout = FakeMailer(), FakeFanout()
        self.service = NotifyService(
            notifications=self.subscriptions,
            users=self.users,
            groups=FakeMailGroups(root, self.garden),
            posts=self.posts,
            comments=self.comments,
            alerts=self.alerts,
            digests=self.digests,
            mail=self.mail,
            identities=NamedIdentities(),
            fanout=self.fanout,
            clock=lambda: datetime(2026, 11, 3, tzinfo=UTC),
        )


NEW_POST = PostCreated(post_id="p1", group_id="g1", author_id="ann")
NEW_COMMENT = CommentCreated(
    comment_id=5, post_id="p1", group_id="g1", author_id="ann", is_approved=True
)


@pytest.fixture
def fakes() -> Fakes:
    return Fakes()


def told(fakes: Fakes, event) -> dict[str, tuple[int, bool, bool, str]]:
    return {
        r.user_id: (r.email_alert_id, r.show_screen_alert, r.show_red_label, r.reason)
        for r in fakes.service.recipients(event)
    }


@pytest.mark.fast
def test_group_and_author_subscribers_are_told_of_a_new_post(fakes):
    fakes.subscriptions.subscribe("bob", ("group", "g1", 1), email=INSTANT)
    fakes.subscriptions.subscribe("cy", ("author", "ann", 8), screen=True)
    assert told(fakes, NEW_POST) == {
        "bob": (INSTANT, False, False, "All new group posts"),
        "cy": (0, True, False, "New posts by author"),
    }


@pytest.mark.fast
def test_the_author_is_never_told_of_their_own_post(fakes):
    fakes.subscriptions.subscribe("ann", ("group", "g1", 1), email=INSTANT, red=True)
    assert told(fakes, NEW_POST) == {}


@pytest.mark.fast
def test_a_user_matched_twice_is_told_once_with_instant_beating_the_digest(fakes):
    fakes.subscriptions.subscribe("bob", ("group", "g1", 1), email=DIGEST, screen=True)
    fakes.subscriptions.subscribe("bob", ("author", "ann", 8), email=INSTANT, red=True)
    [recipient] = fakes.service.recipients(NEW_POST)
    assert (recipient.email_alert_id, recipient.show_screen_alert, recipient.show_red_label) == (
        INSTANT,
        True,
        True,
    )
    # The reason names the subscription the email is sent for, which the unsubscribe link stops.
    assert recipient.reason == "New posts by author"
    assert recipient.subscription == "author#ann#8"


@pytest.mark.fast
def test_the_reason_follows_the_subscription_the_email_is_sent_for(fakes):
    """Following the author by digest (matched first) and the group instantly: the email is
    the group's, and so is the reason it gives."""
    fakes.subscriptions.subscribe("bob", ("author", "ann", 8), email=DIGEST)
    fakes.subscriptions.subscribe("bob", ("group", "g1", 1), email=INSTANT)
    [recipient] = fakes.service.recipients(NEW_POST)
    assert (recipient.email_alert_id, recipient.subscription, recipient.reason) == (
        INSTANT,
        "group#g1#1",
        "All new group posts",
    )


@pytest.mark.fast
def test_a_subscription_that_asks_for_nothing_tells_nobody(fakes):
    fakes.subscriptions.subscribe("bob", ("group", "g1", 1))
    assert told(fakes, NEW_POST) == {}


@pytest.mark.fast
def test_comment_subscribers_of_the_post_and_the_group_are_told(fakes):
    fakes.subscriptions.subscribe("bob", ("post", "p1", 3), "g1", email=DIGEST)
    fakes.subscriptions.subscribe("cy", ("group", "g1", 2), red=True)
    fakes.subscriptions.subscribe("bob", ("group", "g1", 1), email=INSTANT)  # posts only
    assert set(told(fakes, NEW_COMMENT)) == {"bob", "cy"}
    assert told(fakes, NEW_COMMENT)["bob"][0] == DIGEST


@pytest.mark.fast
def test_a_comment_awaiting_approval_tells_nobody(fakes):
    fakes.subscriptions.subscribe("bob", ("post", "p1", 3), "g1", email=INSTANT)
    waiting = CommentCreated(
        comment_id=5, post_id="p1", group_id="g1", author_id="ann", is_approved=False
    )
    assert told(fakes, waiting) == {} and fakes.subscriptions.queries == 0


@pytest.mark.fast
def test_other_events_have_no_recipients(fakes):
    from chalicelib.domain.announcements import CommentDeleted

    event = CommentDeleted(comment_id=5, post_id="p1", group_id="g1", actor_id="ann")
    assert fakes.service.recipients(event) == []


@pytest.mark.fast
def test_a_user_who_may_not_enter_the_group_is_skipped(fakes):
    fakes.subscriptions.subscribe("outsider", ("author", "ann", 8), email=INSTANT, red=True)
    report = fakes.service.handle(NEW_POST)
    assert (report.recipients, report.skipped, report.emailed, report.alerts) == (1, 1, 0, 0)
    assert fakes.mail.sent == [] and fakes.alerts.stored == {}


@pytest.mark.fast
def test_instant_email_alert_and_digest_each_go_where_asked(fakes):
    fakes.subscriptions.subscribe("bob", ("group", "g1", 1), email=INSTANT)
    fakes.subscriptions.subscribe("cy", ("group", "g1", 1), email=DIGEST, red=True)
    report = fakes.service.deliver(
        NEW_POST,
        [
            r if r.user_id != "bob" else dataclasses_replace(r, subscription="")
            for r in fakes.service.recipients(NEW_POST)
        ],
    )
    assert (report.emailed, report.queued, report.alerts) == (1, 1, 1)
    assert fakes.mail.sent == [("bob@example.org", "[Garden] Hello")]
    assert fakes.digests.queued[("cy", "post-p1")]["title"] == "Hello"
    assert fakes.alerts.stored[("cy", "post-p1")]["show_red_label"] is True


def dataclasses_replace(recipient, **changes):
    import dataclasses

    return dataclasses.replace(recipient, **changes)


@pytest.mark.fast
def test_a_suppressed_address_gets_no_instant_email(fakes):
    from chalicelib.services.notify.delivery import Recipient

    fakes.mail.suppressed.add("bob@example.org")
    report = fakes.service.deliver(NEW_POST, [Recipient("bob", email_alert_id=INSTANT)])
    assert report.emailed == 0 and fakes.mail.sent == [] and fakes.digests.claimed == {}


@pytest.mark.fast
def test_an_occurrence_is_emailed_once_however_often_it_is_delivered(fakes):
    from chalicelib.services.notify.delivery import Recipient

    recipient = Recipient("bob", email_alert_id=INSTANT)
    first = fakes.service.deliver(NEW_POST, [recipient])
    again = fakes.service.deliver(NEW_POST, [recipient])
    assert (first.emailed, again.emailed) == (1, 0)
    assert fakes.digests.claimed == {("bob", "post-p1"): "ses-1"}


@pytest.mark.fast
def test_a_failed_send_releases_its_claim_and_spares_the_others(fakes):
    from chalicelib.services.notify.delivery import Recipient

    fakes.mail.failing.add("bob@example.org")
    report = fakes.service.deliver(
        NEW_POST,
        [Recipient("bob", email_alert_id=INSTANT), Recipient("cy", email_alert_id=INSTANT)],
    )
    assert (report.failed, report.emailed) == (1, 1)
    assert fakes.digests.claimed == {("cy", "post-p1"): "ses-1"}  # bob's claim released


@pytest.mark.fast
def test_the_event_handler_raises_when_someone_was_not_told(fakes):
    from chalicelib.domain.announcements import Recorded
    from chalicelib.services.notify.delivery import NotificationsFailed

    fakes.subscriptions.subscribe("bob", ("group", "g1", 1), email=INSTANT)
    fakes.mail.failing.add("bob@example.org")
    with pytest.raises(NotificationsFailed):
        fakes.service(Recorded("item-1", NEW_POST))


@pytest.mark.fast
def test_a_gone_or_unapproved_comment_tells_nobody_at_delivery(fakes):
    from chalicelib.services.notify.delivery import Recipient

    fakes.comments.rows[5].values["deleted_on"] = datetime(2026, 11, 3, tzinfo=UTC)
    report = fakes.service.deliver(NEW_COMMENT, [Recipient("bob", show_screen_alert=True)])
    assert report.skipped == 1 and fakes.alerts.stored == {}


@pytest.mark.fast
def test_a_comment_alert_names_the_comment_and_its_author(fakes):
    from chalicelib.services.notify.delivery import Recipient

    fakes.service.deliver(NEW_COMMENT, [Recipient("bob", show_screen_alert=True, reason="r")])
    alert = fakes.alerts.stored[("bob", "comment-5")]
    assert alert["kind"] == "newComment" and alert["refs"]["commentId"] == 5
    assert alert["refs"]["title"] == "New comment on: Hello"
    assert alert["refs"]["author"]["alias"] == "Ann"


@pytest.mark.fast
def test_many_recipients_are_fanned_out_in_chunks(fakes):
    from chalicelib.services.notify.delivery import parse_chunk

    for user in ("bob", "cy"):
        fakes.subscriptions.subscribe(user, ("group", "g1", 1), email=DIGEST)
    fakes.service.inline_limit, fakes.service.chunk_size = 1, 1
    report = fakes.service.handle(NEW_POST)
    assert (report.recipients, report.fanned_out) == (2, 2)
    chunks = [parse_chunk(body) for body in fakes.fanout.bodies]
    assert [event for event, _ in chunks] == [NEW_POST, NEW_POST]
    assert sorted(r.user_id for _, rs in chunks for r in rs) == ["bob", "cy"]
    assert fakes.digests.queued == {}  # told by the chunks' deliveries, not here


@pytest.mark.fast
def test_a_batch_reads_each_subscriber_list_once_and_uses_the_posts_it_was_given(fakes):
    import dataclasses

    from chalicelib.services.notify.delivery import BatchReads, Recipient

    fakes.subscriptions.subscribe("bob", ("group", "g1", 1), screen=True)
    prefetched = fakes.posts.rows["p1"]
    batch = dataclasses.replace(fakes.service, reads=BatchReads({"p1": prefetched}))
    fakes.posts.rows.clear()  # the table would not be read again
    for _ in range(3):
        batch.recipients(NEW_POST)
    assert fakes.subscriptions.queries == 2  # the author's list and the group's, once each
    report = batch.deliver(NEW_POST, [Recipient("bob", show_screen_alert=True)])
    assert report.alerts == 1
    assert fakes.service.deliver(NEW_POST, [Recipient("cy", show_screen_alert=True)]).skipped == 1


@pytest.mark.fast
def test_recipients_merge_keeps_the_stronger_email_and_either_flag():
    from chalicelib.services.notify.delivery import Recipient

    digest = Recipient("u", email_alert_id=DIGEST, show_red_label=True, subscription="a")
    instant = Recipient("u", email_alert_id=INSTANT, show_screen_alert=True, subscription="b")
    for merged in (digest.merged(instant), instant.merged(digest)):
        assert (merged.email_alert_id, merged.subscription) == (INSTANT, "b")
        assert merged.show_red_label and merged.show_screen_alert


@pytest.mark.fast
def test_a_chunk_carries_the_event_and_its_recipients():
    from chalicelib.services.notify.delivery import Recipient, chunk_body, parse_chunk

    recipients_of_chunk = [Recipient("bob", email_alert_id=INSTANT, reason="All new group posts")]
    assert parse_chunk(chunk_body(NEW_COMMENT, recipients_of_chunk)) == (
        NEW_COMMENT,
        recipients_of_chunk,
    )


def _delivery_lines(capsys) -> dict[str, str]:
    """user -> what the log says of them: the reason not sent, `sent <messageId>`, or `queued`
    (for the daily digest: queued is not "not sent")."""
    import json

    found = {}
    for line in capsys.readouterr().err.splitlines():
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        if entry.get("message") == "notification not sent":
            assert entry["post"] == "p1"
            found[entry["user"]] = entry["reason"]
        elif entry.get("message") == "notification sent":
            found[entry["user"]] = f"sent {entry['messageId']}"
        elif entry.get("message") == "notification queued for the daily digest":
            assert entry["post"] == "p1"
            found[entry["user"]] = "queued"
    return found


def test_each_recipient_not_emailed_is_logged_with_its_reason(fakes, capsys):
    """Issue 57: "why did member X not get the notification of post Y" was not answerable:
    skipped recipients were not logged. Each recipient of a post is now in deliver-
    notifications' log with its post: the SES message id it was sent as, or why not
    (docs/deploy.md shows the query)."""
    from chalicelib.services.notify.delivery import Recipient
    from tests.support.mail_fakes import add_user

    add_user(fakes.users, "dan", {"g1": "member"})
    fakes.mail.suppressed.add("dan@example.org")
    capsys.readouterr()
    recipients = [
        Recipient("bob", email_alert_id=INSTANT),
        Recipient("cy", email_alert_id=DIGEST),
        Recipient("dan", email_alert_id=INSTANT),
        Recipient("outsider", email_alert_id=INSTANT),
        Recipient("gone", email_alert_id=INSTANT),
        Recipient("ann", show_screen_alert=True),
    ]
    fakes.service.deliver(NEW_POST, recipients)
    assert _delivery_lines(capsys) == {
        "bob": "sent ses-1",
        "cy": "queued",
        "dan": "address suppressed (bounce, complaint)",
        "outsider": "may not enter the group",
        "gone": "no such user",
        "ann": "no email wanted (alert only)",
    }
    fakes.service.deliver(NEW_POST, recipients[:1])
    assert _delivery_lines(capsys) == {"bob": "already sent (claimed before)"}
    # The post gone since (deleted, or hidden): nobody is told, and each says so.
    del fakes.posts.rows["p1"]
    fakes.service.deliver(NEW_POST, recipients[:2])
    gone = "the post or comment is gone or hidden"
    assert _delivery_lines(capsys) == {"bob": gone, "cy": gone}


class CountingUsers:
    """The fakes' users, each read written down: `get_many` with the ids asked, `get` with one."""

    def __init__(self, users) -> None:
        self.users = users
        self.reads: list[tuple[str, object]] = []

    def get(self, user_id: str):
        self.reads.append(("get", user_id))
        return self.users.get(user_id)

    def get_many(self, user_ids: set[str]):
        self.reads.append(("get_many", set(user_ids)))
        return self.users.get_many(user_ids)


@pytest.mark.fast
def test_the_author_an_email_names_is_read_with_its_recipients(fakes):
    """The people an event's emails are about are read once: the recipients and the author in
    one request (a BatchGetItem), not the author again on their own (a GetItem per event)."""
    from dataclasses import replace

    from chalicelib.services.notify.delivery import Recipient

    counting = CountingUsers(fakes.users)
    service = replace(fakes.service, users=counting)
    report = service.deliver(NEW_COMMENT, [Recipient("bob", email_alert_id=INSTANT)])
    assert report.emailed == 1
    assert counting.reads == [("get_many", {"bob", "ann"})]
    assert service.occurrence(NEW_COMMENT, {}).author_name == "Ann"  # not read: asked alone
    assert counting.reads[-1] == ("get", "ann")
