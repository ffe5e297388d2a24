"""`make simulate`'s digest day, small: the real fan-out, claims and pacing on fake clocks send
each recipient one digest, never more than the rate in any second, in about recipients ÷ the
digests' share of the rate (fake seconds: nothing here is timed)."""

from __future__ import annotations

import pytest

from bench import simulate
from chalicelib.jobs.pacing import job_rate

pytestmark = pytest.mark.fast


def test_a_small_digest_day_sends_each_once_within_the_rate():
    found = simulate.digest_day(400)
    assert found["sent"] == 400  # digest_day raises when anyone got none or two
    assert found["peak_rate"] <= 14
    assert found["seconds"] == pytest.approx(400 / job_rate("deliver-digests", 14), rel=0.02)
    # Four batches of 100 on the two workers, two each.
    assert found["batches"] == 4


def test_the_busiest_second_is_found_wherever_it_starts():
    assert simulate.most_in_any_second([0.5, 0.9, 1.2, 1.4, 3.0]) == 4
    assert simulate.most_in_any_second([0.0, 1.0, 2.0]) == 1
    assert simulate.most_in_any_second([]) == 0
