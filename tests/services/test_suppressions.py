"""Bounces and complaints: SES → SNS → SQS → the `ses-feedback` function suppresses the address;
nothing is sent to it until an administrator clears it (moto for SES, SNS and SQS)."""

from __future__ import annotations

import json

import pytest

from chalicelib import deps
from chalicelib.domain.announcements import PostCreated
from chalicelib.jobs.base import Deadline
from chalicelib.jobs.digests import send_daily_digests
from chalicelib.jobs.ses_feedback import handle_from_queue
from chalicelib.services.suppressions import reported_addresses
from chalicelib.settings import get_settings
from tests.support.notify import (
    DIGEST,
    INSTANT,
    recipients,
    sent_mail,
    subscribe,
    verify_sender_domain,
)


@pytest.fixture
def world(community):
    c = community
    c.garden = c.group("garden")
    c.ann = c.user("ann", {c.garden: "administrator"})
    c.fan = c.user("fan", {c.garden: "member"}, email="Fan@Example.org")
    c.other = c.user("other", {c.garden: "member"})
    c.stranger = c.user("stranger")
    c.hello = c.post(c.garden, c.ann, title="Hello", slug="hello")
    c.load()
    verify_sender_domain()
    subscribe(c.fan, "group", c.garden, 1, email=INSTANT)
    subscribe(c.other, "group", c.garden, 1, email=INSTANT)
    return c


def bounce(address: str, bounce_type: str = "Permanent", action: str = "failed") -> dict:
    """An SES bounce notification as SES documents it (notification-contents)."""
    return {
        "notificationType": "Bounce",
        "bounce": {
            "bounceType": bounce_type,
            "bounceSubType": "General",
            "bouncedRecipients": [
                {
                    "emailAddress": address,
                    "action": action,
                    "status": "5.1.1",
                    "diagnosticCode": "smtp; 550 5.1.1 user unknown",
                }
            ],
            "timestamp": "2026-03-01T10:00:00.000Z",
            "feedbackId": "0100018e-bounce",
        },
        "mail": {"messageId": "0100018e-sent", "destination": [address]},
    }


def test_a_notification_not_shaped_as_ses_shapes_it_suppresses_only_its_well_formed_recipients():
    hostile = bounce("fan@example.org")
    hostile["bounce"]["bouncedRecipients"] += ["other@example.org", None, {"emailAddress": 7}]
    assert [r.address for r in reported_addresses("Bounce", hostile)] == ["fan@example.org"]
    assert reported_addresses("Bounce", {"bounce": "Permanent"}) == []
    complaint = {"complaint": {"complainedRecipients": "fan@example.org"}}
    assert reported_addresses("Complaint", complaint) == []


def through_the_queue(client, notification: dict) -> dict:
    """Publish on an SNS topic subscribed by the feedback queue, then run the SQS function on
    what the queue holds, through app.py's wiring."""
    from chalicelib.aws import client as aws

    sqs, sns = aws("sqs"), aws("sns")
    queue_url = sqs.create_queue(QueueName=get_settings().ses_feedback_queue)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    topic = sns.create_topic(Name="agora-test-ses-feedback")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    sns.publish(TopicArn=topic, Message=json.dumps(notification))
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    event = client.events.generate_sqs_event(
        message_bodies=[m["Body"] for m in messages], queue_name=get_settings().ses_feedback_queue
    )
    return client.lambda_.invoke("ses-feedback", event).payload


def sns_envelope(notification: dict) -> dict:
    """SNS's envelope around a message, as an SQS subscription without raw delivery gets it."""
    return {
        "Type": "Notification",
        "MessageId": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
        "TopicArn": "arn:aws:sns:us-east-1:123456789012:agora-test-ses-feedback",
        "Message": json.dumps(notification),
        "Timestamp": "2026-03-01T10:00:01.000Z",
        "SignatureVersion": "1",
        "Signature": "EXAMPLE",
        "SigningCertURL": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService.pem",
        "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
    }


def notifications_of(api, c, user_id: str) -> dict:
    status, body = api.get(
        f"/api/v1/en_US/user/{user_id}/notifications?groupId={c.garden}", c.users[0]["id"]
    )
    assert status == 200, body
    return body["object"]


def test_hard_bounce_through_the_queue_suppresses_and_nothing_is_sent_to_it(api, client, world):
    c = world
    # The partial batch response: nothing to give back to the queue.
    assert through_the_queue(client, bounce("fan@example.ORG")) == {"batchItemFailures": []}

    deps.notify_service().handle(PostCreated(c.hello, c.garden, c.ann))
    assert recipients(sent_mail()) == ["other@example.org"]

    # Nor a digest.
    subscribe(c.fan, "group", c.garden, 1, email=DIGEST)
    deps.notify_service().handle(PostCreated(c.hello, c.garden, c.other))
    assert send_daily_digests(Deadline.unbounded()) == 0
    assert recipients(sent_mail()) == ["other@example.org"]

    [warning] = notifications_of(api, c, c.fan)["accessWarnings"]
    assert (warning["key"], warning["code"]) == ("userEmail", "EMAIL_SUPPRESSED")
    assert notifications_of(api, c, c.other)["accessWarnings"] == []


def test_an_administrator_clears_the_suppression_and_mail_flows_again(api, world):
    c = world
    handle_from_queue([json.dumps(bounce("fan@example.org"))])
    path = f"/api/v1/en_US/user/{c.fan}/email-suppression"
    assert api.delete(path, c.stranger)[0] == 403
    assert api.delete(path)[0] == 401
    status, body = api.delete(path, c.ann)  # administrator of a group the fan is a member of
    assert status == 200 and body["object"]["cleared"] is True
    assert api.delete(path, c.ann)[1]["object"]["cleared"] is False
    assert notifications_of(api, c, c.fan)["accessWarnings"] == []
    deps.notify_service().handle(PostCreated(c.hello, c.garden, c.ann))
    assert recipients(sent_mail()) == ["Fan@Example.org", "other@example.org"]


def test_complaint_suppresses_transient_and_delayed_bounces_do_not(world):
    from chalicelib.store.sending import SuppressionRepository

    complaint = {
        "notificationType": "Complaint",
        "complaint": {
            "complainedRecipients": [{"emailAddress": "other@example.org"}],
            "complaintFeedbackType": "abuse",
            "feedbackId": "0100018e-complaint",
        },
    }
    # Configuration-set events say `eventType`; SNS envelopes wrap the JSON in `Message`.
    wrapped = json.dumps(sns_envelope(complaint))
    transient = json.dumps(bounce("fan@example.org", bounce_type="Transient"))
    delayed = json.dumps(bounce("fan@example.org", action="delayed"))
    event_form = json.dumps(
        {**bounce("x@example.org"), "notificationType": None, "eventType": "Bounce"}
    )
    report = handle_from_queue([wrapped, transient, delayed, "not json", "[1]", event_form])
    assert report == {"suppressed": 2, "ignored": 2}
    repository = SuppressionRepository()
    assert repository.get("OTHER@example.org").reason == "complaint"
    assert repository.get("x@example.org").reason == "bounce"
    assert repository.get("fan@example.org") is None


def test_a_forged_sns_envelope_is_dropped_not_trusted(world):
    """`Type: Notification` without what SNS always sends (topic, id, signature) is no envelope."""
    from chalicelib.store.sending import SuppressionRepository

    forged = json.dumps({"Type": "Notification", "Message": json.dumps(bounce("x@example.org"))})
    assert handle_from_queue([forged]) == {"suppressed": 0, "ignored": 1}
    assert SuppressionRepository().get("x@example.org") is None


def test_only_the_record_that_failed_goes_back_to_the_queue(client, world):
    """Partial batch response: a suppression that cannot be stored fails its record alone."""
    from chalicelib.jobs.ses_feedback import handle_sqs_event

    class FlakyStore:
        def __init__(self) -> None:
            self.recorded: list[str] = []

        def record(self, notification: dict) -> list[str]:
            [recipient] = notification["bounce"]["bouncedRecipients"]
            if recipient["emailAddress"] == "b@example.org":
                raise RuntimeError("DynamoDB refused the write")
            self.recorded.append(recipient["emailAddress"])
            return [recipient["emailAddress"]]

    bodies = [json.dumps(bounce(a)) for a in ("a@example.org", "b@example.org", "c@example.org")]
    event = client.events.generate_sqs_event(
        message_bodies=bodies + ["not json"], queue_name=get_settings().ses_feedback_queue
    )
    event = event if isinstance(event, dict) else event.to_dict()
    store = FlakyStore()
    answer = handle_sqs_event(event, service=store)
    failed_id = event["Records"][1]["messageId"]
    assert answer == {"batchItemFailures": [{"itemIdentifier": failed_id}]}
    assert store.recorded == ["a@example.org", "c@example.org"]
