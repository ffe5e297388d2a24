"""make run's drain-outbox runs the drain only when the outbox stream holds a record it has not
told (agora_local/lifecycle.py OutboxDrain): an idle make run asks the embedded AWS nothing."""

from __future__ import annotations

from agora_local.lifecycle import OutboxDrain


class FakeStream:
    """The stream's records and a drain that tells them, failing where told to."""

    def __init__(self) -> None:
        self.records = 0
        self.told = 0
        self.drains = 0
        self.failing = False

    def count(self) -> int:
        return self.records

    def drain(self) -> int:
        self.drains += 1
        if self.failing:
            return 0  # the first untold record failed: nothing after it is told either
        told, self.told = self.records - self.told, self.records
        return told


def test_the_drain_runs_for_new_records_only_and_retries_a_failed_one_every_time():
    stream = FakeStream()
    drain = OutboxDrain(stream.drain, stream.count, lambda: stream.told)
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
    drain = OutboxDrain(stream.drain, lambda: None, lambda: stream.told)
    assert drain() == 0 and drain() == 0 and stream.drains == 2
