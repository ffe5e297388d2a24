"""The daily digest: content per digest type, one per user per day, no item ever sent twice."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError

from chalicelib import deps
from chalicelib.aws import client
from chalicelib.domain.announcements import CommentCreated, PostCreated
from chalicelib.jobs.base import Deadline
from chalicelib.jobs.digests import send_daily_digests
from tests.support import notify
from tests.support.emf import value
from tests.support.notify import DIGEST, email_of

DAY_ONE = datetime(2026, 3, 2, 6, 0, tzinfo=UTC)


@pytest.fixture
def world(community):
    c = notify.ann_in_garden_and_photos(community)
    c.sam = c.user("sam", {c.photos: "member"})  # summary digest (the default)
    c.fay = c.user("fay")  # full digest
    c.hello = c.post(c.garden, c.ann, title="Hello", slug="hello", content="<p>Roses today</p>")
    c.tulips = c.post(c.garden, c.ann, title="Tulips", slug="tulips", content="<p>Red ones</p>")
    c.pier = c.post(c.photos, c.ann, title="Pier", slug="pier", content="<p>Private view</p>")
    c.first = c.comment(c.hello, c.sam, content="<p>Lovely!</p>", isApproved=True)
    c.load()
    notify.verify_sender_domain()
    notify.set_group_email(notify.group_record(c.root), "hello@community.example", "Home Community")
    notify.set_disclaimer(notify.group_record(c.root), "<p>You get this as a member of Home.</p>")
    for user in (c.sam, c.fay):
        notify.subscribe(user, "group", c.garden, 1, email=DIGEST)
        notify.subscribe(user, "group", c.garden, 2, email=DIGEST)
        notify.subscribe(user, "author", c.ann, 8, email=DIGEST)
    from chalicelib.store.notifications import NotificationRepository

    NotificationRepository().set_digest_type(c.fay, 2, DAY_ONE)
    return c


def publish(event, when: datetime) -> None:
    deps.notify_service(clock=lambda: when).handle(event)


@contextmanager
def ses_refusing(address: str) -> Iterator[None]:
    """SES (a botocore hook on our client) refuses, as throttled, every mail to `address`."""
    refused = address.encode()

    def refuse(params, **_):
        if refused in params["RawMessage"]["Data"]:
            raise ClientError(
                {"Error": {"Code": "Throttling", "Message": "Maximum sending rate exceeded."}},
                "SendRawEmail",
            )

    ses = client("ses")
    ses.meta.events.register("provide-client-params.ses.SendRawEmail", refuse)
    try:
        yield
    finally:
        ses.meta.events.unregister("provide-client-params.ses.SendRawEmail", refuse)


def digests_scheduled(world, lambda_client) -> dict:
    """Ann's post Hello told to the digests, and the daily schedule's event for send-digests."""
    publish(PostCreated(world.hello, world.garden, world.ann), datetime.now(UTC))
    return lambda_client.events.generate_cw_event(
        source="aws.events",
        detail_type="Scheduled Event",
        detail={},
        resources=["arn:aws:events:us-east-1:123456789012:rule/send-digests"],
    )


def run(now: datetime) -> int:
    return send_daily_digests(Deadline.unbounded(), now=now)


def by_recipient(c, messages):
    return {m["To"].addresses[0].addr_spec: m for m in messages}


def test_summary_lists_titles_and_links_full_adds_content(world):
    c = world
    night = DAY_ONE - timedelta(hours=5)
    publish(PostCreated(c.hello, c.garden, c.ann), night)
    publish(PostCreated(c.tulips, c.garden, c.ann), night + timedelta(minutes=1))
    publish(CommentCreated(c.first, c.hello, c.garden, c.sam, is_approved=True), night)

    assert run(DAY_ONE) == 2
    mail = by_recipient(c, notify.sent_mail())
    summary, full = mail[email_of(c, c.sam)], mail[email_of(c, c.fay)]
    assert summary["Subject"] == "Summary Daily digest for 2026-03-02: 2 new items"
    assert full["Subject"] == "Full Daily digest for 2026-03-02: 3 new items"
    for message in (summary, full):
        assert message["Auto-Submitted"] == "auto-generated"
        assert message["From"].addresses[0].addr_spec == "noreply@community.example"
        assert message["Reply-To"].addresses[0].addr_spec == "hello@community.example"
        text = notify.text_of(message)
        assert "Hello" in text and "https://community.example/garden/hello" in text
        assert "Tulips" in text and "https://community.example/garden/tulips" in text
        assert text.rstrip().endswith("You get this as a member of Home.")
    # Sam wrote the comment: not in Sam's digest. Only the full digest carries content.
    assert "#1" not in notify.text_of(summary) and "Roses today" not in notify.text_of(summary)
    assert "Roses today" in notify.text_of(full) and "<p>Red ones</p>" in notify.html_of(full)
    assert "New comment on: Hello" in notify.text_of(full) and "Lovely!" in notify.text_of(full)


def test_one_digest_per_user_per_day_and_no_item_twice_across_runs(world):
    c = world
    publish(PostCreated(c.hello, c.garden, c.ann), DAY_ONE - timedelta(hours=1))
    assert run(DAY_ONE) == 2
    assert run(DAY_ONE + timedelta(hours=3)) == 0  # the same day again: nothing more
    assert len(notify.sent_mail()) == 2

    # Something new the same day waits for tomorrow's digest, which has only the new item.
    publish(PostCreated(c.tulips, c.garden, c.ann), DAY_ONE + timedelta(hours=4))
    assert run(DAY_ONE + timedelta(hours=5)) == 0
    assert run(DAY_ONE + timedelta(days=1)) == 2
    second_day = notify.sent_mail()[2:]
    assert notify.recipients(second_day) == sorted([email_of(c, c.sam), email_of(c, c.fay)])
    for message in second_day:
        assert "Tulips" in notify.text_of(message) and "Hello" not in notify.text_of(message)
    assert run(DAY_ONE + timedelta(days=2)) == 0
    assert len(notify.sent_mail()) == 4


def test_an_event_delivered_twice_is_listed_once(world):
    c = world
    event = PostCreated(c.hello, c.garden, c.ann)
    publish(event, DAY_ONE - timedelta(hours=2))
    publish(event, DAY_ONE - timedelta(hours=1))
    assert run(DAY_ONE) == 2
    for message in notify.sent_mail():
        assert notify.text_of(message).count("https://community.example/garden/hello") == 1


def test_items_of_a_group_the_user_may_no_longer_enter_are_left_out(world):
    c = world
    notify.subscribe(c.fay, "author", c.ann, 8, email=DIGEST)
    publish(PostCreated(c.pier, c.photos, c.ann), DAY_ONE - timedelta(hours=1))
    # Fay is no member of the private group: nothing is queued, nothing sent.
    assert run(DAY_ONE) == 1
    [message] = notify.sent_mail()
    assert message["To"].addresses[0].addr_spec == email_of(c, c.sam)
    assert "Pier" in notify.text_of(message)


def test_a_digest_ses_refuses_is_sent_by_the_next_run(world):
    from chalicelib.aws import client

    c = world
    publish(PostCreated(c.hello, c.garden, c.ann), DAY_ONE - timedelta(hours=1))
    client("ses").delete_identity(Identity="community.example")
    assert run(DAY_ONE) == 0 and notify.sent_mail() == []
    notify.verify_sender_domain()
    assert run(DAY_ONE + timedelta(hours=1)) == 2
    assert len(notify.sent_mail()) == 2


def queued_bodies(queue_name: str) -> list[str]:
    """Take every message off the queue (as the SQS trigger would), answering their bodies."""
    from chalicelib.aws import client

    sqs = client("sqs")
    url = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
    bodies = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        for message in messages:
            bodies.append(message["Body"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return bodies


def test_schedule_queues_batches_the_worker_sends_once_and_the_cli_sends_in_process(
    world, client, capsys
):
    """Through app.py: the daily schedule queues the day's recipients; the digest queue's
    function sends them; the same batch delivered again sends nothing more."""
    from agora_local.run import ensure_queue
    from chalicelib.cli import main
    from chalicelib.settings import get_settings

    queue = get_settings().digest_queue
    ensure_queue(queue)
    event = digests_scheduled(world, client)
    assert client.lambda_.invoke("send-digests", event).payload == {"recipients": 2, "batches": 1}
    assert notify.sent_mail() == []  # queued, not sent
    [body] = queued_bodies(queue)
    batch = client.events.generate_sqs_event(message_bodies=[body], queue_name=queue)
    for _ in range(2):  # SQS delivers at least once
        response = client.lambda_.invoke("deliver-digests", batch)
        assert response.payload == {"batchItemFailures": []}
    assert notify.recipients(notify.sent_mail()) == sorted(
        [email_of(world, world.sam), email_of(world, world.fay)]
    )
    assert main(["send-digests"]) == 0
    assert capsys.readouterr().out.strip() == "sent 0 digest(s)"


def test_a_digest_that_fails_for_one_user_is_counted_the_others_sent_and_the_cli_exits_1(
    world, capsys, monkeypatch
):
    """SES refuses one address (a botocore hook): that user's digest fails and waits, the other
    is sent, the failure is one line and a DigestsFailed metric, and the CLI exits 1; once SES
    takes it again the next run sends it and exits 0."""
    import json

    from chalicelib.cli import main

    publish(PostCreated(world.hello, world.garden, world.ann), datetime.now(UTC))
    refused = email_of(world, world.sam)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-SendDigests")  # EMF lines
    capsys.readouterr()
    with ses_refusing(refused):
        assert main(["send-digests"]) == 1
    out, err = capsys.readouterr()
    assert "sent 1 digest(s), 1 failed" in out
    [failure] = [line for line in err.splitlines() if not line.startswith("{")]
    assert failure.startswith(f"digest of user {world.sam} failed: ") and "Throttling" in failure
    metrics = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [value(m, "DigestsFailed") for m in metrics if "DigestsFailed" in m] == [1]
    assert [
        value(m, "DigestRunsStoppedEarly") for m in metrics if "DigestRunsStoppedEarly" in m
    ] == [0]
    assert notify.recipients(notify.sent_mail()) == [email_of(world, world.fay)]

    assert main(["send-digests"]) == 0
    assert notify.recipients(notify.sent_mail()) == sorted([email_of(world, world.fay), refused])


def test_a_run_that_reaches_its_deadline_is_counted_as_stopped_early(world, capsys, monkeypatch):
    import json

    from chalicelib.jobs.digests import run_daily_digests

    publish(PostCreated(world.hello, world.garden, world.ann), DAY_ONE)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-SendDigests")
    capsys.readouterr()
    run = run_daily_digests(Deadline(lambda: 0, margin_ms=0), now=DAY_ONE)
    assert run.stopped_early and run.sent == 0
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "_aws" in line]
    assert [
        value(m, "DigestRunsStoppedEarly") for m in metrics if "DigestRunsStoppedEarly" in m
    ] == [1]
    assert run_daily_digests(Deadline.unbounded(), now=DAY_ONE).sent == 2  # the next run
