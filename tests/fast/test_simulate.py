"""`make simulate`'s day, small: the real digest and notification fan-outs, claims and the one
sending clock, every execution on one simulated clock, send each recipient one digest and each
instant subscriber one email, never more than the rate in any second; the instant burst goes
first and no moment is lost (fake seconds: nothing here is timed)."""

from __future__ import annotations

from typing import Any

import pytest

from bench import simulate
from bench.sim_time import SimulatedTime


def test_a_small_day_sends_each_once_within_the_rate_instant_mail_first():
    series: dict[str, Any] = {}
    found = simulate.send_day(400, fans=120, post_at=10.0, series=series)
    assert found["sent"] == 400 and found["instant_sent"] == 120  # else send_day raises
    # The pictures' series (bench/pictures.py): the mails of each whole second, as sent.
    digests, instant = series["digest_per_s"], series["instant_per_s"]
    assert (sum(digests), sum(instant), series["rate"], series["post_at_s"]) == (400, 120, 14, 10.0)
    assert len(digests) == len(instant) == int(found["seconds"]) + 1 and digests[-1] > 0
    assert max(d + i for d, i in zip(digests, instant, strict=True)) <= found["peak_rate"]
    assert instant[:10] == [0] * 10  # nothing before the post
    assert found["peak_rate"] <= 14 and found["instant_peak_rate"] <= 14
    # The burst takes the whole rate (at most the digests' moments already taken before it).
    assert found["instant_seconds"] <= (120 + 2) / 14
    # And the stack never left a moment unused: 520 mails, 519 intervals from the first.
    assert found["seconds"] == pytest.approx(519 / 14, abs=1e-6)
    # Four batches of 100, every 25th message delivered twice: none here.
    assert found["batches"] == 4


def test_the_busiest_second_is_found_wherever_it_starts():
    assert simulate.most_in_any_second([0.5, 0.9, 1.2, 1.4, 3.0]) == 4
    assert simulate.most_in_any_second([0.0, 1.0, 2.0]) == 1
    assert simulate.most_in_any_second([]) == 0


def test_simulated_executions_run_one_at_a_time_in_the_order_of_their_moments():
    sim = SimulatedTime()
    seen: list[tuple[str, float]] = []

    def execution(name: str, naps: list[float]) -> None:
        for nap in naps:
            seen.append((name, sim.now))
            sim.sleep(nap)
        seen.append((name, sim.now))

    sim.start(0.0, lambda: execution("a", [2.0, 2.0]))
    sim.start(1.0, lambda: execution("b", [2.0]))
    sim.start(0.5, lambda: sim.start(sim.now + 0.25, lambda: execution("c", [])))
    sim.run()
    assert seen == [("a", 0.0), ("c", 0.75), ("b", 1.0), ("a", 2.0), ("b", 3.0), ("a", 4.0)]


def test_an_error_in_a_simulated_execution_reaches_the_run():
    sim = SimulatedTime()

    def failing() -> None:
        sim.sleep(1.0)
        raise RuntimeError("boom")

    sim.start(0.0, failing)
    with pytest.raises(RuntimeError, match="boom"):
        sim.run()


class DeferringMail:
    """SES behind a sending clock that instant mail holds past the deadline from the second
    mail on (the digest worker's `SendDeferred`)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def is_suppressed(self, address: str) -> bool:
        return False

    def send(self, group, letter) -> str:
        from chalicelib.domain.ports.notify import SendDeferred

        if self.sent:
            raise SendDeferred("held")
        self.sent.append(letter.to[1])
        return "id-1"


def test_digests_deferred_by_instant_mail_are_left_for_the_queue_not_failed_nor_lost():
    from chalicelib.services.notify.digests import DigestService

    world = simulate.digest_world(3)
    mail = DeferringMail()
    parts = {**world.service_parts, "mail": mail}
    service = DigestService(**parts, clock=lambda: simulate.DAY_START)
    day = service.today()
    users = ["user-000000", "user-000001", "user-000002"]
    run = service.send_batch(users, day, lambda: False)
    assert (run.sent, run.failed, run.failures) == (1, 0, [])
    assert run.left == users[1:] and run.stopped_early
    # Their items wait and their day is free: the batch requeued sends them.
    parts["mail"] = world.ses
    world.ses.clock = SimulatedTime()
    again = DigestService(**parts, clock=lambda: simulate.DAY_START).send_batch(
        run.left, day, lambda: False
    )
    assert again.sent == 2
    assert sorted(to for _, to in world.ses.sent) == ["member1@example.org", "member2@example.org"]
