"""The sending clock's contract (store/sending.py `SlotClock`), on DynamoDB (moto) and on the
in-memory fake `make simulate` sends through: each moment handed out once and an interval apart,
an idle clock starting at now, instant mail holding the clock against the digests."""

from __future__ import annotations

import pytest

from tests.support.digest_fakes import FakeSlotClock

CLOCK = "mail-send-slots"
STEP = 71_428_572  # 1/14 s in ns


@pytest.fixture
def slots(kind):
    from chalicelib.store.sending import SlotClock

    return FakeSlotClock() if kind == "fake" else SlotClock()


def test_a_new_clock_starts_at_now_and_each_moment_is_handed_out_once(slots):
    taken = [slots.take_slot(CLOCK, 1_000, STEP, first=False) for _ in range(5)]
    assert all(slot.taken for slot in taken)
    assert [slot.at for slot in taken] == [1_000 + n * STEP for n in range(5)]


def test_a_clock_left_behind_starts_again_at_now_not_in_the_past(slots):
    slots.take_slot(CLOCK, 1_000, STEP, first=False)
    later = 1_000 + 50 * STEP + 3
    assert slots.take_slot(CLOCK, later, STEP, first=False).at == later
    assert slots.take_slot(CLOCK, later, STEP, first=True).at == later + STEP


def test_clocks_by_other_names_are_apart(slots):
    slots.take_slot(CLOCK, 0, STEP, first=True)
    assert slots.take_slot("other", 0, STEP, first=False).at == 0


def test_instant_mail_holds_the_clock_until_the_end_of_its_moment(slots):
    # A digest queued first keeps its moment; the instant mail comes next, before any other.
    digest = slots.take_slot(CLOCK, 0, STEP, first=False)
    instant = slots.take_slot(CLOCK, 0, STEP, first=True)
    assert (digest.at, instant.at) == (0, STEP)
    refused = slots.take_slot(CLOCK, 0, STEP, first=False)
    assert not refused.taken and refused.at == 2 * STEP  # held until the end of its moment
    # The instant sender goes on before the digests, whatever the digests asked for meanwhile.
    assert slots.take_slot(CLOCK, STEP, STEP, first=True).at == 2 * STEP
    assert not slots.take_slot(CLOCK, 2 * STEP, STEP, first=False).taken
    # Its hold ends where its last moment ends: the digests take the very next moment.
    resumed = slots.take_slot(CLOCK, 3 * STEP, STEP, first=False)
    assert (resumed.taken, resumed.at) == (True, 3 * STEP)


def test_a_hold_long_past_lets_the_digests_take_now(slots):
    slots.take_slot(CLOCK, 0, STEP, first=True)
    late = 100 * STEP
    assert slots.take_slot(CLOCK, late, STEP, first=False).at == late
