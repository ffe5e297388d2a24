"""The one sending rate (chalicelib/mail/outgoing.py): every sender takes its moments from one clock,
so the stack never lets more than the rate through in any second; instant mail goes first; the
generated template gives every sending function the rate and the clock; the digests' batches hold
everyone once."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest

from bench import simulate
from chalicelib.domain.ports.notify import SendDeferred
from chalicelib.mail.outgoing import SENDERS, PacedMail, SendingRate
from tests.support import REPO_ROOT
from tests.support.digest_fakes import FakeSlotClock


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
    simulate` reports as the stack's peak rate), whatever order they came in."""
    return simulate.most_in_any_second(sorted(moments))


def rate(clock: FakeClock, slots: Any, per_second: float, *, instant: bool, **given: Any) -> Any:
    return SendingRate(per_second, slots, instant=instant, clock=clock, sleep=clock.sleep, **given)


@pytest.mark.parametrize("per_second", [14, 13, 6.5, 1, 0.5])
@pytest.mark.parametrize("early", [0.0, 0.003])
def test_senders_on_one_clock_never_let_more_than_the_rate_through_in_any_second(per_second, early):
    clock = FakeClock(early=early)
    slots = FakeSlotClock()
    senders = [rate(clock, slots, per_second, instant=n == 0) for n in range(3)]
    # Three senders, one after the other and all at once: the sum is paced, not each.
    moments = [senders[n % 3].wait() for n in range(500)]
    assert moments == sorted(moments)
    assert most_in_any_second(moments) <= math.ceil(per_second)
    # And no slower than the rate: 500 sends take 499 intervals.
    assert moments[-1] - moments[0] == pytest.approx(499 / per_second, rel=1e-4)


def test_whole_seconds_of_a_whole_rate_hold_exactly_the_rate():
    clock = FakeClock(start=0.0)
    pacer = rate(clock, FakeSlotClock(), 14, instant=False)
    per_second = Counter(int(pacer.wait()) for _ in range(14 * 100))
    assert set(per_second.values()) == {14}


def test_time_spent_between_sends_counts_towards_the_interval():
    clock = FakeClock()
    pacer = rate(clock, FakeSlotClock(), 10, instant=True)
    pacer.wait()
    clock.work(0.5)  # preparing the next mail took longer than the interval
    before = clock.sleeps
    pacer.wait()
    assert clock.sleeps == before  # no wait at all
    clock.work(0.05)
    pacer.wait()
    assert clock.sleeps > before  # half the interval left to wait


def test_a_rate_of_zero_is_refused():
    with pytest.raises(ValueError):
        SendingRate(0, FakeSlotClock(), instant=True)


def test_a_digest_waits_while_instant_mail_holds_the_clock_and_takes_the_next_moment_after():
    clock = FakeClock(start=0.0)
    slots = FakeSlotClock()
    instant = rate(clock, slots, 10, instant=True)
    digests = rate(clock, slots, 10, instant=False)
    instant.wait()  # 0.0: held until 0.1
    assert digests.wait() == pytest.approx(0.1)  # waited for the hold to end, lost nothing
    assert slots.refused == 1


def test_a_digest_whose_deadline_comes_while_instant_mail_holds_the_clock_is_deferred():
    clock = FakeClock(start=0.0)
    slots = FakeSlotClock()
    rate(clock, slots, 10, instant=True).wait()
    digests = rate(clock, slots, 10, instant=False, expired=lambda: True)
    with pytest.raises(SendDeferred):
        digests.wait()
    assert clock.now == 0.0  # it gave up at once: no moment taken, none slept


class CountingMail:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.sent: list[float] = []

    def is_suppressed(self, address: str) -> bool:
        return address == "gone@example.org"

    def send(self, group: Any, letter: Any) -> str:
        self.sent.append(self.clock())
        return f"id-{len(self.sent)}"


def test_paced_mail_waits_for_its_moment_and_answers_the_message_id():
    clock = FakeClock()
    mail = CountingMail(clock)
    paced = PacedMail(mail, rate(clock, FakeSlotClock(), 2, instant=True))
    assert [paced.send(None, None) for _ in range(5)] == [f"id-{n}" for n in range(1, 6)]
    assert most_in_any_second(mail.sent) <= 2
    assert paced.is_suppressed("gone@example.org") and not paced.is_suppressed("a@example.org")


# --- every sender in the template ------------------------------------------------------------------


def template_resources(stage: str) -> dict[str, Any]:
    from infra import yaml_text

    text = (REPO_ROOT / "infra" / f"{stage}.yaml").read_text()
    return dict(yaml_text.load(text.split("\n", 1)[1])["Resources"])


def test_every_function_granted_ses_draws_from_the_one_clock():
    from infra.privileges import FUNCTIONS

    senders = {name for name, needs in FUNCTIONS.items() if needs.sends_mail}
    assert senders == set(SENDERS)
    for name in senders:
        assert "counters" in FUNCTIONS[name].writes, name


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_every_sender_in_the_template_has_the_same_rate_and_its_workers(stage):
    resources = template_resources(stage)
    rates = set()
    for sender in SENDERS.values():
        properties = resources[sender.logical_id]["Properties"]
        rates.add(properties["Environment"]["Variables"]["AGORA_MAIL_SEND_RATE"])
        if sender.workers is not None:
            [source] = properties["Events"].values()
            assert source["Properties"]["ScalingConfig"]["MaximumConcurrency"] == sender.workers
    assert len(rates) == 1


# --- the digests' batches ---------------------------------------------------------------------------


class PendingUsers:
    """The digests repository as `DigestService.batches` reads it."""

    def __init__(self, users: list[str]) -> None:
        self.users = users

    def users_with_pending_items(self) -> Any:
        return iter(self.users)


def digest_service(users: list[str]) -> Any:
    from datetime import UTC, datetime

    from chalicelib.services.notify.digests import DigestService

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
