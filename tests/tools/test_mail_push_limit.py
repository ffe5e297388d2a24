"""python -m bench.mail_push fails when it measures a pushed mail slower than CONTRACT §13 allows
(a p95 over 10 s): it exited 0 and published the figure whatever it was."""

from __future__ import annotations

import pytest

from bench import mail_push
from bench.report import PAGE, RESULTS_PATH, Figure

pytestmark = pytest.mark.fast


def measured(p95: float) -> list[Figure]:
    return [Figure(mail_push.NAME, p95, 800.0, "s", "100 mails")]


def test_a_p95_over_the_limit_exits_1_and_writes_nothing(capsys):
    results, page = RESULTS_PATH.read_bytes(), PAGE.read_bytes()
    assert mail_push.main(lambda: measured(12.5)) == 1
    assert "mail_push_delay_p95_s 12.5 s is over the 10 s" in capsys.readouterr().err
    assert (RESULTS_PATH.read_bytes(), PAGE.read_bytes()) == (results, page)


def test_a_p95_within_the_limit_is_no_fault():
    assert mail_push.over_limit(measured(10.0)) == []
    assert mail_push.over_limit(measured(0.08)) == []
    assert mail_push.over_limit(measured(10.01)) != []
