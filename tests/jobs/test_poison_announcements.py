"""An announcement whose email can never be built (issue 47: a mailed title holding U+2028, which
the email package refuses in a Subject) ends, once, in the notification dead-letter queue with its
reason, and the drain goes on; an AWS fault (a throttled SES) is still retried until it passes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib import deps
from chalicelib.domain.announcements import PostCreated
from tests.fixtures import empty_queues
from tests.jobs.test_outbox import fault
from tests.support.notify import garden_with_fans, load_with_fans_told_at_once, sent_mail
from tests.support.outbox import drain


@pytest.fixture
def world(community):
    c = garden_with_fans(community, ann="member", fans=3)
    c.poison = c.post(c.garden, c.ann, title="Broken\u2028title", slug="broken")
    c.fine = c.post(c.garden, c.ann, title="Fine title", slug="fine")
    return load_with_fans_told_at_once(c)


def dead_letters() -> list[dict[str, Any]]:
    from chalicelib.aws import client
    from chalicelib.settings import get_settings

    sqs = client("sqs")
    url = sqs.get_queue_url(QueueName=f"{get_settings().notify_queue}-dead")["QueueUrl"]
    found = []
    while True:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return found
        for message in messages:
            found.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


@pytest.fixture
def dead_letter_queue():
    from chalicelib.settings import get_settings

    empty_queues(f"{get_settings().notify_queue}-dead")


def test_an_announcement_that_cannot_be_built_is_dead_lettered_once_and_the_drain_goes_on(
    world, dead_letter_queue
):
    c = world
    deps.outbox().save([PostCreated(c.poison, c.garden, c.ann)])
    deps.outbox().save([PostCreated(c.fine, c.garden, c.ann)])

    assert drain() == 2  # both told: the poison one does not hold the next one back
    assert drain() == 0  # and nothing is told again

    (letter,) = dead_letters()
    assert letter["reason"].startswith("the email cannot be built: ValueError")
    assert letter["event"]["post_id"] == c.poison
    assert sorted(r["user_id"] for r in letter["recipients"]) == sorted(c.fans)
    subjects = [m["Subject"] for m in sent_mail()]
    assert subjects == ["[Garden] Fine title"] * 3

    # Told again (as a redelivery after another recipient's fault would), it is not sent again.
    assert deps.notify_service().handle(PostCreated(c.poison, c.garden, c.ann)).dead_lettered == 0
    assert dead_letters() == []


def test_a_throttled_ses_is_retried_until_it_sends(world, dead_letter_queue):
    from botocore.awsrequest import AWSResponse

    c = world

    def throttled(**_: Any) -> Any:
        return AWSResponse("https://ses.invalid", 400, {}, None), {
            "Error": {"Code": "Throttling", "Message": "Maximum sending rate exceeded."},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }

    deps.outbox().save([PostCreated(c.fine, c.garden, c.ann)])
    with fault("ses", "SendRawEmail", throttled):
        assert drain() == 0
        assert drain() == 0  # still there, still failing
    assert sent_mail() == [] and dead_letters() == []
    assert drain() == 1
    assert len(sent_mail()) == 3


def test_the_dead_letter_queue_is_the_one_the_stack_makes_for_the_notification_queue():
    from infra.build import stage_names

    for stage in ("dev", "prod"):
        names = stage_names(stage)
        assert names["notify_dead_letters"] == f"{names['notify_queue']}-dead"
