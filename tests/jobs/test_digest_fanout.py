# ruff: noqa: F811 - `world`, the digest tests' fixture, is a parameter by design
"""The digests' fan-out: batches on the digest queue, sent by deliver-digests exactly once per user
and day however SQS delivers them; what a deadline leaves goes back on the queue; a batch found
after its day is left over (counted, alarmed) and its items wait for the next day's digest."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from chalicelib.domain.announcements import PostCreated
from chalicelib.jobs.base import Deadline, PartsFailed
from chalicelib.jobs.digests import batch_body, deliver_batch, enqueue_daily_digests, parse_batch
from tests.jobs.test_digests import DAY_ONE, email_of, publish, run, ses_refusing, world  # noqa: F401
from tests.support import notify
from tests.support.emf import value


class Queue:
    """The digest queue as the jobs send to it (QueueSender's `send`)."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

    def send(self, bodies: list[str]) -> None:
        self.bodies += bodies


def queued(world, *, batch_size: int = 100) -> list[str]:
    publish(PostCreated(world.hello, world.garden, world.ann), DAY_ONE - timedelta(hours=1))
    queue = Queue()
    fanout = enqueue_daily_digests(
        Deadline.unbounded(), now=DAY_ONE, queue=queue, batch_size=batch_size
    )
    assert (fanout.day, fanout.recipients) == ("2026-03-02", 2)
    return queue.bodies


def both(world) -> list[str]:
    return sorted([email_of(world, world.sam), email_of(world, world.fay)])


def test_batches_delivered_twice_and_out_of_order_send_each_digest_once(world):
    bodies = queued(world, batch_size=1)
    assert len(bodies) == 2 and all(parse_batch(b)[0] == "2026-03-02" for b in bodies)
    for body in [*bodies, *reversed(bodies), bodies[0]]:
        deliver_batch(body, Deadline.unbounded(), now=DAY_ONE + timedelta(minutes=5))
    assert notify.recipients(notify.sent_mail()) == both(world)
    # The in-process run of the same day finds nothing more to send.
    assert run(DAY_ONE + timedelta(hours=1)) == 0


def test_users_a_deadline_leaves_go_back_on_the_queue_as_a_batch_of_the_same_day(world):
    [body] = queued(world)
    requeued = Queue()
    stopped = deliver_batch(body, Deadline(lambda: 0, margin_ms=0), now=DAY_ONE, queue=requeued)
    assert stopped.sent == 0 and sorted(stopped.left) == sorted(parse_batch(body)[1])
    assert notify.sent_mail() == []
    [again] = requeued.bodies
    assert parse_batch(again) == ("2026-03-02", parse_batch(body)[1])
    # Past midnight the batch still sends the digest of its own day.
    deliver_batch(again, Deadline.unbounded(), now=DAY_ONE + timedelta(hours=17))
    assert notify.recipients(notify.sent_mail()) == both(world)


def test_a_batch_found_after_its_day_is_left_over_and_its_items_wait(world, capsys, monkeypatch):
    [body] = queued(world)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-DeliverDigests")  # EMF lines
    capsys.readouterr()
    late = deliver_batch(body, Deadline.unbounded(), now=DAY_ONE + timedelta(days=1))
    assert late.sent == 0 and len(late.left) == 2 and notify.sent_mail() == []
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "_aws" in line]
    assert [value(m, "DigestsLeftOver") for m in metrics if "DigestsLeftOver" in m] == [2]
    # The next day's digest carries the items.
    assert run(DAY_ONE + timedelta(days=1)) == 2
    assert notify.recipients(notify.sent_mail()) == both(world)


def test_a_digest_ses_refuses_fails_the_batch_after_the_others_and_is_sent_when_redelivered(
    world,
):
    [body] = queued(world)
    with ses_refusing(email_of(world, world.sam)), pytest.raises(PartsFailed) as failed:
        deliver_batch(body, Deadline.unbounded(), now=DAY_ONE)
    [line] = failed.value.lines
    assert line.startswith(f"digest of user {world.sam} failed: ") and "Throttling" in line
    assert notify.recipients(notify.sent_mail()) == [email_of(world, world.fay)]
    # SQS delivers the message again: only the refused digest is sent now.
    again = deliver_batch(body, Deadline.unbounded(), now=DAY_ONE + timedelta(minutes=12))
    assert (again.sent, again.skipped) == (1, 1)
    assert notify.recipients(notify.sent_mail()) == both(world)


def test_a_batch_of_unknown_shape_fails_its_message(world):
    with pytest.raises(ValueError):
        deliver_batch(json.dumps({"day": "2026-03-02"})[:-1], Deadline.unbounded(), now=DAY_ONE)
    assert batch_body("2026-03-02", []) and notify.sent_mail() == []
