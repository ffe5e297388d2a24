# ruff: noqa: F811 - `world`, the notification tests' fixture, is a parameter by design
"""SQS functions report partial batch failures (issue 23): one bad message is reported by its
messageId and delivered again alone; the others of its batch are done and not replayed."""

from __future__ import annotations

from chalicelib.domain.announcements import PostCreated
from chalicelib.services.notify.delivery import Recipient, chunk_body
from chalicelib.settings import get_settings
from tests.services.test_notify import INSTANT, email_of, world  # noqa: F401 - fixture
from tests.support.notify import recipients, sent_mail


def test_a_bad_chunk_is_the_only_failure_of_its_batch(world, client):
    good = chunk_body(
        PostCreated(world.hello, world.garden, world.ann),
        [Recipient(world.group_fan, email_alert_id=INSTANT, reason="All new group posts")],
    )
    event = client.events.generate_sqs_event(
        message_bodies=["{not a chunk", good], queue_name=get_settings().notify_queue
    )
    [bad_id, _] = [record["messageId"] for record in event["Records"]]
    response = client.lambda_.invoke("deliver-notifications", event)
    assert response.payload == {"batchItemFailures": [{"itemIdentifier": bad_id}]}
    assert recipients(sent_mail()) == [email_of(world, world.group_fan)]
