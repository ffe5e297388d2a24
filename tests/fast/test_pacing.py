"""The one sending rate (chalicelib/jobs/pacing.py): a pacer never lets more than its rate through
in any second, the functions that send never add up to more than AGORA_MAIL_SEND_RATE in the
generated template, and the digests' batches hold everyone once."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest

from bench import simulate
from chalicelib.jobs.pacing import SENDERS, PacedMail, Pacer, job_rate, per_worker_rate
from tests.support import REPO_ROOT

pytestmark = pytest.mark.fast


class FakeClock:
    """Seconds that pass only when someone sleeps; a sleep may wake early (as threads do)."""

    def __init__(self, start: float = 1000.0, early: float = 0.0) -> None:
        self.now = start
        self.early = early
        self.sleeps = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds - self.early if seconds > 2 * self.early else seconds

    def work(self, seconds: float) -> None:
        self.now += seconds


def most_in_any_second(moments: list[float]) -> int:
    """The most moments in any window [t, t + 1) (bench/simulate.py's count, which `make
    simulate` reports as the digests' peak rate), whatever order they came in."""
    return simulate.most_in_any_second(sorted(moments))


@pytest.mark.parametrize("rate", [14, 13, 6.5, 1, 0.5])
@pytest.mark.parametrize("early", [0.0, 0.003])
def test_a_pacer_never_lets_more_than_its_rate_through_in_any_second(rate, early):
    clock = FakeClock(early=early)
    pacer = Pacer(rate, clock=clock, sleep=clock.sleep)
    moments = [pacer.wait() for _ in range(500)]
    assert moments == sorted(moments)
    assert most_in_any_second(moments) <= math.ceil(rate)
    # And no slower than the rate: 500 sends take 499 intervals.
    assert moments[-1] - moments[0] == pytest.approx(499 / rate, rel=1e-4)


def test_whole_seconds_of_a_whole_rate_hold_exactly_the_rate():
    clock = FakeClock(start=0.0)
    pacer = Pacer(14, clock=clock, sleep=clock.sleep)
    per_second = Counter(int(pacer.wait()) for _ in range(14 * 100))
    assert set(per_second.values()) == {14}


def test_time_spent_between_sends_counts_towards_the_interval():
    clock = FakeClock()
    pacer = Pacer(10, clock=clock, sleep=clock.sleep)
    pacer.wait()
    clock.work(0.5)  # preparing the next mail took longer than the interval
    before = clock.sleeps
    pacer.wait()
    assert clock.sleeps == before  # no wait at all
    clock.work(0.05)
    pacer.wait()
    assert clock.sleeps > before  # half the interval left to wait


def test_a_pacer_refuses_a_rate_of_zero():
    with pytest.raises(ValueError):
        Pacer(0)


class CountingMail:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.sent: list[float] = []

    def is_suppressed(self, address: str) -> bool:
        return address == "gone@example.org"

    def send(self, group: Any, letter: Any) -> str:
        self.sent.append(self.clock())
        return f"id-{len(self.sent)}"


def test_paced_mail_waits_for_the_pacer_and_answers_the_message_id():
    clock = FakeClock()
    mail = CountingMail(clock)
    paced = PacedMail(mail, Pacer(2, clock=clock, sleep=clock.sleep))
    assert [paced.send(None, None) for _ in range(5)] == [f"id-{n}" for n in range(1, 6)]
    assert most_in_any_second(mail.sent) <= 2
    assert paced.is_suppressed("gone@example.org") and not paced.is_suppressed("a@example.org")


# --- the split of the rate -------------------------------------------------------------------------


def test_the_shares_add_up_to_the_whole_rate_and_the_digests_finish_in_time():
    assert sum(sender.share for sender in SENDERS.values()) == pytest.approx(1.0)
    for function, sender in SENDERS.items():
        assert per_worker_rate(function, 14) * sender.workers == pytest.approx(
            job_rate(function, 14)
        )
    # The bound: 100,000 digests within 1.1 × 100,000 / 14 seconds.
    assert 100_000 / job_rate("deliver-digests", 14) <= 1.1 * 100_000 / 14


def template_resources(stage: str) -> dict[str, Any]:
    from infra import yaml_text

    text = (REPO_ROOT / "infra" / f"{stage}.yaml").read_text()
    return dict(yaml_text.load(text.split("\n", 1)[1])["Resources"])


def sending_in_template(resources: dict[str, Any]) -> tuple[float, dict[str, tuple[int, float]]]:
    """The template's AGORA_MAIL_SEND_RATE, and per sending function: the most executions its
    trigger starts (MaximumConcurrency) and the per-worker rate the code computes there."""
    rates = set()
    found = {}
    for function, sender in SENDERS.items():
        properties = resources[sender.logical_id]["Properties"]
        rate = float(properties["Environment"]["Variables"]["AGORA_MAIL_SEND_RATE"])
        rates.add(rate)
        [source] = properties["Events"].values()
        workers = int(source["Properties"]["ScalingConfig"]["MaximumConcurrency"])
        found[function] = (workers, per_worker_rate(function, rate))
    [rate] = rates  # every sender is given the same rate
    return rate, found


def within_rate(rate: float, senders: dict[str, tuple[int, float]]) -> bool:
    return sum(workers * each for workers, each in senders.values()) <= rate + 1e-9


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_workers_times_their_rate_never_exceed_the_send_rate_in_the_template(stage):
    rate, senders = sending_in_template(template_resources(stage))
    assert within_rate(rate, senders), senders


def test_the_rule_fails_when_a_trigger_starts_more_workers_than_the_split_counts_on():
    resources = template_resources("prod")
    source = next(iter(resources["DeliverDigests"]["Properties"]["Events"].values()))
    source["Properties"]["ScalingConfig"]["MaximumConcurrency"] = 3
    rate, senders = sending_in_template(resources)
    assert not within_rate(rate, senders)


def test_every_function_granted_ses_but_the_outbox_drain_is_paced():
    """drain-outbox sends the instant emails of an event with 25 recipients or fewer inline; it is
    not paced yet (its share would come out of the notifications')."""
    from infra.privileges import FUNCTIONS

    senders = {name for name, needs in FUNCTIONS.items() if needs.sends_mail}
    assert senders - {"drain-outbox"} == set(SENDERS)


# --- the digests' batches ---------------------------------------------------------------------------


class PendingUsers:
    """The digests repository as `DigestService.batches` reads it."""

    def __init__(self, users: list[str]) -> None:
        self.users = users

    def users_with_pending_items(self) -> Any:
        return iter(self.users)


def digest_service(users: list[str]) -> Any:
    from datetime import UTC, datetime

    from chalicelib.services.digests import DigestService

    return DigestService(
        digests=PendingUsers(users),  # type: ignore[arg-type]
        notifications=None,  # type: ignore[arg-type]
        users=None,  # type: ignore[arg-type]
        groups=None,  # type: ignore[arg-type]
        posts=None,  # type: ignore[arg-type]
        comments=None,  # type: ignore[arg-type]
        mail=None,  # type: ignore[arg-type]
        identities=None,  # type: ignore[arg-type]
        clock=lambda: datetime(2026, 3, 2, 6, tzinfo=UTC),
    )


@pytest.mark.parametrize("count", [0, 1, 99, 100, 101, 250])
def test_batches_hold_every_user_once_in_order_none_over_the_size(count):
    users = [f"user-{n}" for n in range(count)]
    batches = list(digest_service(users).batches(100))
    assert [user for batch in batches for user in batch] == users
    assert all(0 < len(batch) <= 100 for batch in batches)
    assert len(batches) == math.ceil(count / 100)


def test_a_batch_body_carries_its_day_and_users_and_a_bad_one_is_refused():
    from chalicelib.jobs.digests import batch_body, parse_batch

    assert parse_batch(batch_body("2026-03-02", ["a", "b"])) == ("2026-03-02", ["a", "b"])
    with pytest.raises(ValueError):
        parse_batch('{"day": "2026-03-02", "users": "a"}')


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_the_template_has_the_digest_queue_its_dead_letters_and_the_left_over_alarm(stage):
    resources = template_resources(stage)
    queue = resources["DigestQueue"]["Properties"]
    assert queue["QueueName"] == f"agora-{stage}-digest-jobs"
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": ["DigestDeadLetterQueue", "Arn"]
    }
    left = resources["DigestsLeftOverAlarm"]["Properties"]
    assert (left["Namespace"], left["MetricName"], left["Threshold"]) == (
        "Agora",
        "DigestsLeftOver",
        1,
    )
    dead = resources["DigestDeadLettersAlarm"]["Properties"]
    assert dead["Dimensions"] == [{"Name": "QueueName", "Value": f"agora-{stage}-digest-jobs-dead"}]
    # The schedule only queues: it never sends mail nor reads the token secret.
    assert (
        "AGORA_TOKEN_SECRET"
        not in resources["SendDigests"]["Properties"]["Environment"]["Variables"]
    )
