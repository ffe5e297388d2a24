"""Domain events on the EventBridge bus (AGORA_EVENT_BUS): every kind reaches a rule's SQS target
in moto, and an API call still succeeds when the bus refuses (a botocore hook injects the failure)."""

from __future__ import annotations

import json
import logging
import secrets

import pytest

from chalicelib import deps
from chalicelib.services.mail_in.ingest import Mailbox
from tests.mail.conftest import dovecot  # noqa: F401 - the mail-in half of the kinds
from tests.support.mail_messages import email_message
from tests.support.notify import verify_sender_domain
from tests.support.outbox import drain

BUS = "agora-test-events"
EVENT = "/api/v1/en_US/event"
COMMENT = "/api/v1/en_US/comment/post"
KINDS = {
    "Post Created",
    "Comment Created",
    "Comment Approved",
    "Comment Deleted",
    "Comment Purged",
    "Event Created",
    "Event Updated",
    "Event Moved",
    "Event Deleted",
    "Mail Rejected",
}


@pytest.fixture
def bus(aws, monkeypatch):
    """The bus, and a rule sending everything from Agora to a queue; answers a reader of it."""
    from chalicelib.aws import client
    from chalicelib.settings import reload_settings

    monkeypatch.setenv("AGORA_EVENT_BUS", BUS)
    reload_settings()
    events, sqs = client("events"), client("sqs")
    events.create_event_bus(Name=BUS)
    queue_url = sqs.create_queue(QueueName="org-systems")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    events.put_rule(Name="to-org", EventBusName=BUS, EventPattern=json.dumps({"source": ["agora"]}))
    events.put_targets(Rule="to-org", EventBusName=BUS, Targets=[{"Id": "queue", "Arn": queue_arn}])

    def received() -> list[dict]:
        found = []
        while True:
            batch = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get(
                "Messages", []
            )
            if not batch:
                return found
            for message in batch:
                found.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])

    yield received
    monkeypatch.delenv("AGORA_EVENT_BUS")
    reload_settings()


@pytest.fixture
def world(community, bus):
    c = community
    c.garden = c.group("garden")
    c.ann = c.user("ann", {c.garden: "moderator"})
    c.hello = c.post(c.garden, c.ann, title="Hello", slug="hello")
    c.waiting = c.comment(c.hello, c.ann, isApproved=False)
    c.load()
    verify_sender_domain()
    return c


def message(sender: str, subject: str) -> bytes:
    return email_message(sender, subject, "Hello there", to="inbox@community.example").as_bytes()


def poll(server, kind: str, group_id: str | None, *mails: bytes) -> None:
    user, password = f"box{secrets.token_hex(4)}", secrets.token_urlsafe(12)
    server.add_user(user, password)
    for raw in mails:
        server.deliver(user, raw)
    config = Mailbox(
        scope=group_id if kind == "post" else "system",
        kind="emailToPost" if kind == "post" else "emailToComment",
        server_name="127.0.0.1",
        server_port=server.pop3_port,
        server_username=user,
        password=password,
        is_ssl=False,
        delete_processed=True,
    )
    deps.mail_ingestor().poll(config, lambda: False)


@pytest.mark.slow
def test_every_kind_of_domain_event_reaches_the_bus(
    api,
    world,
    bus,
    dovecot,  # noqa: F811
    private_mail_hosts,
):
    c = world
    poll(
        dovecot,
        "post",
        c.garden,
        message("ann@example.org", "Roses"),
        message("stranger@example.org", "Buy now"),
    )
    poll(
        dovecot,
        "comment",
        None,
        message("ann@example.org", "Re: https://community.example/garden/hello"),
    )
    assert api.post(f"{COMMENT}/{c.waiting}/approve", c.ann)[0] == 200
    assert api.delete(f"{COMMENT}/{c.waiting}", c.ann)[0] == 200
    assert api.post(f"{COMMENT}/{c.waiting}/purge", c.ann)[0] == 200
    body = {
        "groupId": c.garden,
        "title": "Fair",
        "startDate": "2026-12-01T10:00:00Z",
        "endDate": "2026-12-01T12:00:00Z",
    }
    status, created = api.post(EVENT, c.ann, body)
    event_id = created["object"]["id"]
    assert api.put(f"{EVENT}/{event_id}", c.ann, {**body, "title": "Big fair"})[0] == 200
    move = {
        "startDate": "2026-12-02T10:00:00Z",
        "calendarStartDate": "2026-12-01T00:00:00Z",
        "calendarEndDate": "2027-01-01T00:00:00Z",
    }
    assert api.put(f"{EVENT}/{event_id}/calendar", c.ann, move)[0] == 200
    assert api.delete(f"{EVENT}/{event_id}", c.ann)[0] == 200
    assert bus() == []  # nothing leaves before the outbox is drained
    drain()

    events = bus()
    by_kind: dict[str, list[dict]] = {}
    ids = set()
    for event in events:
        assert event["source"] == "agora"
        ids.add(event["detail"].pop("domainEventId"))
        by_kind.setdefault(event["detail-type"], []).append(event["detail"])
    assert len(ids) == len(events)  # one id per event, each its outbox item's
    assert set(by_kind) == KINDS
    [post] = by_kind["Post Created"]
    assert post["schemaVersion"] == 1 and post["groupId"] == c.garden and post["authorId"] == c.ann
    [comment] = by_kind["Comment Created"]
    assert comment["postId"] == c.hello and comment["isApproved"] is True
    for kind in ("Comment Approved", "Comment Deleted", "Comment Purged"):
        assert by_kind[kind] == [
            {
                "schemaVersion": 1,
                "commentId": c.waiting,
                "postId": c.hello,
                "groupId": c.garden,
                "actorId": c.ann,
            }
        ]
    [rejected] = by_kind["Mail Rejected"]
    assert rejected["mailbox"] == f"post#{c.garden}" and "unknown sender" in rejected["reason"]
    assert [e["title"] for e in by_kind["Event Updated"]] == ["Big fair"]
    [move] = by_kind["Event Moved"]
    assert (move["eventId"], move["startDate"]) == (event_id, "2026-12-02T10:00:00Z")
    assert by_kind["Event Deleted"] == [
        {"schemaVersion": 1, "eventId": event_id, "groupId": c.garden, "actorId": c.ann}
    ]


def test_api_call_never_calls_the_bus_and_a_refused_event_waits_for_the_next_drain(
    api, world, bus, caplog
):
    from botocore.awsrequest import AWSResponse

    from chalicelib.aws import client

    calls = []

    def refuse(**kwargs):
        calls.append(kwargs["model"].name)
        response = AWSResponse("https://events.example", 500, {}, None)
        return response, {
            "Error": {"Code": "InternalException", "Message": "the bus is down"},
            "ResponseMetadata": {"HTTPStatusCode": 500},
        }

    events_client = client("events")
    events_client.meta.events.register_first("before-call.events.PutEvents", refuse)
    # Agora's loggers do not propagate to the root logger, where caplog listens: it listens on
    # theirs.
    agora_logger = logging.getLogger("chalicelib")
    agora_logger.addHandler(caplog.handler)
    try:
        status, body = api.post(
            EVENT,
            world.ann,
            {
                "groupId": world.garden,
                "title": "Fair",
                "startDate": "2026-12-01T10:00:00Z",
                "endDate": "2026-12-01T12:00:00Z",
            },
        )
        assert calls == []  # the call only wrote the event and its outbox item
        assert drain() == 0  # refused: the record stays for the next drain
    finally:
        events_client.meta.events.unregister("before-call.events.PutEvents", refuse)
        agora_logger.removeHandler(caplog.handler)
    assert status == 200 and body["success"] is True
    assert api.get(f"{EVENT}/{body['object']['id']}", world.ann)[0] == 200
    assert calls == ["PutEvents"] * 3  # retried a bounded number of times per drain
    assert bus() == []
    assert any(r.getMessage() == "domain events not delivered" for r in caplog.records)

    assert drain() == 1  # the bus is back
    [event] = bus()
    assert event["detail-type"] == "Event Created"
    assert event["detail"]["eventId"] == body["object"]["id"]
    assert drain() == 0 and bus() == []  # told once it is delivered


def test_partially_failed_entries_are_retried_and_nothing_is_sent_without_a_bus():
    from chalicelib.domain.announcements import EventDeleted, Recorded
    from chalicelib.services.event_bus import EventBusPublisher

    sent: list[list[str]] = []

    def flaky(entries):
        sent.append([e["Detail"] for e in entries])
        first = len(sent) == 1
        return {
            "FailedEntryCount": 1 if first else 0,
            "Entries": [
                {"ErrorCode": "ThrottlingException"} if first and i == 1 else {"EventId": "x"}
                for i in range(len(entries))
            ],
        }

    events = [
        Recorded(str(n), EventDeleted(event_id=n, group_id="g", actor_id="a")) for n in range(12)
    ]
    EventBusPublisher("bus", send=flaky, sleep=lambda _: None).publish_all(events)
    assert [len(batch) for batch in sent] == [10, 1, 2]  # 10 per PutEvents; the failed one again
    assert '"eventId": 1' in sent[1][0]
    EventBusPublisher("", send=flaky).publish_all(events)
    assert len(sent) == 3
