"""The outbox drain's dead letters driven again (issue 57: the runbook said they could be, and
nothing did): `python -m chalicelib.cli redrive-outbox` reads each dead letter's place in the
stream (what Lambda's on-failure destination writes: `DDBStreamBatchInfo`), tells its records
through the same drain, from the stream, or from the outbox table once the stream has trimmed
them, and deletes the dead letters whose records were all told."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from chalicelib.cli import main
from tests.jobs.test_outbox import EVENT, by_id, event_body, world  # noqa: F401 - fixture
from tests.services.test_event_bus import bus  # noqa: F401 - the bus and a reader of it


def dead_letter(shard: str, records: list[dict], arn: str) -> str:
    """The message Lambda's on-failure destination writes for a stream batch it gave up on."""
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return json.dumps(
        {
            "requestContext": {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 11},
            "DDBStreamBatchInfo": {
                "shardId": shard,
                "startSequenceNumber": records[0]["dynamodb"]["SequenceNumber"],
                "endSequenceNumber": records[-1]["dynamodb"]["SequenceNumber"],
                "approximateArrivalOfFirstRecord": now,
                "approximateArrivalOfLastRecord": now,
                "batchSize": len(records),
                "streamArn": arn,
            },
        }
    )


def dead_letters_queue() -> tuple[object, str]:
    from chalicelib.aws import client
    from chalicelib.jobs.outbox_redrive import dead_letter_queue

    sqs = client("sqs")
    return sqs, sqs.create_queue(QueueName=dead_letter_queue())["QueueUrl"]


def test_dead_letters_are_told_again_from_the_stream_or_the_table_and_deleted(
    api,
    world,  # noqa: F811
    bus,  # noqa: F811
    capsys,
):
    from chalicelib.store.outbox import StreamReader, stream_arn

    c = world
    for title in ("First", "Second", "Third"):
        assert api.post(EVENT, c.ann, event_body(c, title))[0] == 200
    [(shard, records)] = StreamReader().read()
    sqs, url = dead_letters_queue()
    # One batch the stream still holds, and one it has trimmed (its shard is gone): that one is
    # told from the outbox table, by its arrival times.
    sqs.send_message(QueueUrl=url, MessageBody=dead_letter(shard, records, stream_arn()))
    gone = dead_letter("shardId-00000000000000000000-gone", records, stream_arn())
    sqs.send_message(QueueUrl=url, MessageBody=gone)
    capsys.readouterr()

    assert main(["redrive-outbox"]) == 0
    out = capsys.readouterr().out
    assert f"2 dead letter(s) driven again, {2 * len(records)} record(s) told" in out
    assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []
    published = bus()
    assert sorted({e["detail"]["title"] for e in published}) == ["First", "Second", "Third"]
    # At least once, under one stable id each.
    assert len(by_id(published)) == 3


def test_a_dead_letter_that_cannot_be_told_stays_and_says_why(api, world, bus, capsys):  # noqa: F811
    sqs, url = dead_letters_queue()
    sqs.send_message(QueueUrl=url, MessageBody="not a batch")
    old = {
        "shardId": "shardId-gone",
        "startSequenceNumber": "1",
        "endSequenceNumber": "2",
        "streamArn": "arn:aws:dynamodb:us-east-1:123456789012:table/x/stream/y",
        "approximateArrivalOfFirstRecord": (datetime.now(UTC) - timedelta(days=9)).isoformat(),
        "approximateArrivalOfLastRecord": (datetime.now(UTC) - timedelta(days=9)).isoformat(),
    }
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"DDBStreamBatchInfo": old}))
    capsys.readouterr()
    assert main(["redrive-outbox"]) == 1
    captured = capsys.readouterr()
    assert "0 dead letter(s) driven again" in captured.out and "2 left in" in captured.out
    assert "not the place of an outbox stream batch" in captured.err
    assert "neither in the stream nor in the outbox table" in captured.err
    assert bus() == []


def test_without_the_queue_the_command_says_so(community, capsys):
    assert main(["redrive-outbox"]) == 1
    assert "there is no queue agora-test-outbox-dead" in capsys.readouterr().err
