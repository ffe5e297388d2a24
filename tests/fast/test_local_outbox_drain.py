"""make run's drain-outbox runs the drain only when the outbox stream holds a record it has not
told (agora_local/lifecycle.py OutboxDrain): an idle make run asks the embedded AWS nothing."""

from __future__ import annotations

from agora_local.embedded_aws import StreamState
from agora_local.lifecycle import OutboxDrain

ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/agora-outbox/stream/2026-12-07T00:00:00"


class FakeStream:
    """The stream's records and a drain that tells them, failing where told to."""

    def __init__(self) -> None:
        self.records = 0
        self.told = 0
        self.drains = 0
        self.failing = False

    def state(self) -> StreamState:
        return StreamState(ARN, self.records)

    def told_of(self, arn: str) -> int:
        return self.told if arn == ARN else 0

    def drain(self) -> int:
        self.drains += 1
        if self.failing:
            return 0  # the first untold record failed: nothing after it is told either
        told, self.told = self.records - self.told, self.records
        return told


def test_the_drain_runs_for_new_records_only_and_retries_a_failed_one_every_time():
    stream = FakeStream()
    drain = OutboxDrain(stream.drain, stream.state, stream.told_of)
    assert drain() == 0 and stream.drains == 0  # an empty stream: no call
    stream.records = 3
    assert drain() == 3 and stream.drains == 1
    assert drain() == 0 and drain() == 0 and stream.drains == 1  # idle: no call
    stream.records, stream.failing = 5, True
    assert drain() == 0 and drain() == 0 and stream.drains == 3  # retried each time
    stream.failing = False
    assert drain() == 2 and stream.drains == 4
    assert drain() == 0 and stream.drains == 4


def test_without_a_count_the_drain_always_runs():
    stream = FakeStream()
    drain = OutboxDrain(stream.drain, lambda: None, stream.told_of)
    assert drain() == 0 and drain() == 0 and stream.drains == 2


def test_what_a_reader_of_another_stream_told_is_not_this_streams():
    stream = FakeStream()
    stream.records = 2
    other = StreamState(ARN.replace("2026-12-07", "2026-12-06"), 2)
    drain = OutboxDrain(stream.drain, lambda: other, stream.told_of)
    assert drain() == 2 and stream.drains == 1  # the other stream's 2 records: none told
