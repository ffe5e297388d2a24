"""The outbox (store/outbox.py) and its drain (jobs/outbox.py): a write and what must follow from
it are stored together, the API never waits on EventBridge or SES, and the drain delivers every
consequence, again after a failure or a crash: each notification email exactly once, each domain
event at least once under one stable `domainEventId`. AWS faults come from botocore hooks."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from chalicelib import deps
from chalicelib.domain.announcements import PostCreated
from tests.services.test_event_bus import BUS, bus  # noqa: F401 - the bus and a reader of it
from tests.support.notify import (
    email_of,
    garden_with_fans,
    load_with_fans_told_at_once,
    recipients,
    sent_mail,
)
from tests.support.outbox import drain

EVENT = "/api/v1/en_US/event"
COMMENT = "/api/v1/en_US/comment/post"
# A hook that hangs sleeps this long: an API call that waited on it could not answer sooner.
HANG_SECONDS = 5.0


@pytest.fixture
def world(community, bus):  # noqa: F811
    c = garden_with_fans(community, ann="moderator", fans=3)
    c.hello = c.post(c.garden, c.ann, title="Hello", slug="hello")
    c.waiting = c.comment(c.hello, c.ann, isApproved=False)
    return load_with_fans_told_at_once(c)


def event_body(c, title: str) -> dict[str, Any]:
    return {
        "groupId": c.garden,
        "title": title,
        "startDate": "2026-12-01T10:00:00Z",
        "endDate": "2026-12-01T12:00:00Z",
    }


class Fault:
    """A `before-call` hook on one operation of one client: the calls it refuses (a 500, or all of
    those whose parameters `match` names) or holds (`hang`), counted."""

    def __init__(self, times: int = 0, match: str | None = None, hang: float = 0.0) -> None:
        self.times, self.match, self.hang = times, match, hang
        self.calls = 0
        self.refused = 0

    def __call__(self, model: Any, params: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        self.calls += 1
        if self.hang:
            time.sleep(self.hang)
            return None
        if self.match is not None:
            refuse = self.match in str(params)
        else:
            refuse = self.refused < self.times
        if not refuse:
            return None
        self.refused += 1
        return AWSResponse("https://fault.invalid", 500, {}, None), {
            "Error": {"Code": "InternalFailure", "Message": "injected"},
            "ResponseMetadata": {"HTTPStatusCode": 500},
        }


@contextmanager
def fault(service: str, operation: str, hook: Fault) -> Iterator[Fault]:
    from chalicelib.aws import client

    events = client(service).meta.events
    name = f"before-call.{service}.{operation}"
    events.register_first(name, hook)
    try:
        yield hook
    finally:
        events.unregister(name, hook)


def by_id(published: list[dict]) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for event in published:
        found.setdefault(event["detail"]["domainEventId"], []).append(event)
    return found


def test_ses_and_eventbridge_failing_then_recovering_send_each_mail_once_and_each_event(
    api,
    world,
    bus,  # noqa: F811
):
    c = world
    status, created = api.post(EVENT, c.ann, event_body(c, "Fair"))
    assert status == 200
    deps.outbox().save([PostCreated(c.hello, c.garden, c.ann)])  # as mail in records a post

    with (
        fault("ses", "SendRawEmail", Fault(times=2)) as ses,
        fault("events", "PutEvents", Fault(times=4)) as eventbridge,
    ):
        for _ in range(6):  # the drain runs again after each failure, as Lambda's retries do
            drain()
    assert (ses.refused, eventbridge.refused) == (2, 4)

    assert recipients(sent_mail()) == sorted(email_of(c, fan) for fan in c.fans)  # once each
    published = by_id(bus())
    kinds = {events[0]["detail-type"] for events in published.values()}
    assert kinds == {"Event Created", "Post Created"}  # two events, two ids
    for events in published.values():
        # Delivered again after a failure: the same event under the same id.
        assert all(e["detail"] == events[0]["detail"] for e in events)
    [fair] = [e[0]["detail"] for e in published.values() if e[0]["detail-type"] == "Event Created"]
    assert fair["eventId"] == created["object"]["id"]
    drain()
    assert len(sent_mail()) == len(c.fans) and bus() == []  # nothing left to tell


def test_an_api_call_never_waits_on_eventbridge_or_ses(api, world, bus):  # noqa: F811
    c = world
    with (
        fault("events", "PutEvents", Fault(hang=HANG_SECONDS)) as eventbridge,
        fault("ses", "SendRawEmail", Fault(hang=HANG_SECONDS)) as ses,
    ):
        started = time.perf_counter()
        status, _ = api.post(EVENT, c.ann, event_body(c, "Fair"))
        approved, _ = api.post(f"{COMMENT}/{c.waiting}/approve", c.ann)
        elapsed = time.perf_counter() - started
    assert (status, approved) == (200, 200)
    assert (eventbridge.calls, ses.calls) == (0, 0)
    assert elapsed < HANG_SECONDS  # so it waited on neither (a timing target is in bench/)
    assert bus() == []
    assert drain() == 2
    assert sorted(e["detail-type"] for e in bus()) == ["Comment Approved", "Event Created"]


def test_a_crash_between_the_write_and_the_drain_loses_nothing(api, world, bus):  # noqa: F811
    from chalicelib.jobs.outbox import drain_in_process
    from chalicelib.store.outbox import StreamReader

    c = world
    assert api.post(EVENT, c.ann, event_body(c, "Fair"))[0] == 200
    deps.outbox().save([PostCreated(c.hello, c.garden, c.ann)])
    # The process that wrote dies before any drain; a new one reads the stream from its start.
    assert drain_in_process(StreamReader()) == 2
    assert sorted(e["detail-type"] for e in bus()) == ["Event Created", "Post Created"]
    assert recipients(sent_mail()) == sorted(email_of(c, fan) for fan in c.fans)


def test_a_drain_failing_mid_batch_redelivers_only_what_failed(api, world, bus):  # noqa: F811
    c = world
    for title in ("First", "Second", "Third"):
        assert api.post(EVENT, c.ann, event_body(c, title))[0] == 200

    with fault("events", "PutEvents", Fault(match="Second")):
        assert drain() == 1
        assert [e["detail"]["title"] for e in bus()] == ["First"]
        assert drain() == 0  # still refused: the records after it wait, in order
    assert drain() == 2
    assert [e["detail"]["title"] for e in bus()] == ["Second", "Third"]  # First not again


def test_drain_outbox_function_answers_the_failed_record_as_its_batch_failure(
    api,
    world,
    bus,  # noqa: F811
):
    from app import drain_outbox
    from chalicelib.store.outbox import StreamReader

    c = world
    for title in ("First", "Second", "Third"):
        assert api.post(EVENT, c.ann, event_body(c, title))[0] == 200
    [(_, records)] = StreamReader().read()
    # What Lambda hands the function: the stream's records, with their event names and images.
    event = {"Records": [{**r, "eventSource": "aws:dynamodb"} for r in records]}

    with fault("events", "PutEvents", Fault(match="Second")):
        answer = drain_outbox(event, None)
    assert answer == {
        "batchItemFailures": [{"itemIdentifier": records[1]["dynamodb"]["SequenceNumber"]}]
    }
    assert [e["detail"]["title"] for e in bus()] == ["First"]
    assert drain_outbox({"Records": event["Records"][1:]}, None) == {"batchItemFailures": []}
    assert [e["detail"]["title"] for e in bus()] == ["Second", "Third"]


def test_a_write_that_fails_records_no_event(api, world, bus):  # noqa: F811
    """All or nothing: a moderation whose transaction DynamoDB refuses leaves no outbox item."""
    from chalicelib.store.outbox import OutboxRecord
    from tests.api.test_aws_faults import _dynamodb_clients

    c = world
    refuse = Fault(times=99)
    name = "before-call.dynamodb.TransactWriteItems"
    clients = _dynamodb_clients()
    for botocore_client in clients:
        botocore_client.meta.events.register_first(name, refuse)
    try:
        status, _ = api.post(f"{COMMENT}/{c.waiting}/approve", c.ann)
    finally:
        for botocore_client in clients:
            botocore_client.meta.events.unregister(name, refuse)
    assert status == 503 and refuse.refused >= 1
    assert OutboxRecord.count() == 0  # a test may Scan: nothing was recorded
    assert drain() == 0 and bus() == []
    assert api.post(f"{COMMENT}/{c.waiting}/approve", c.ann)[0] == 200  # and then it works
    assert drain() == 1
    assert [e["detail-type"] for e in bus()] == ["Comment Approved"]


def test_the_drains_own_instant_mails_take_their_moments_from_the_one_sending_clock(
    api,
    world,
    bus,  # noqa: F811
):
    from chalicelib.jobs.outbox import DRAIN
    from chalicelib.mail.outgoing import SLOT_CLOCK
    from chalicelib.store.counters import CounterRecord

    c = world
    before = time.time_ns()
    deps.outbox().save([PostCreated(c.hello, c.garden, c.ann)])
    drain()
    after = time.time_ns()
    assert recipients(sent_mail()) == sorted(email_of(c, fan) for fan in c.fans)
    interval = deps.sending_rate(DRAIN).interval
    clock = CounterRecord.get(SLOT_CLOCK, consistent_read=True)
    # Three mails, three moments from the first one on; taken as instant mail (held to the last).
    first = int(clock.value) - 3 * interval
    assert before <= first <= after
    assert int(clock.first_until) == int(clock.value)
