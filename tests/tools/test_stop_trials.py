"""python -m bench.stop_trials says what a stop lost in its exit status, not only in its table:
a write lost to any stop but `kill -9`, a mail lost to any, a fault a trial noted."""

from __future__ import annotations

import pytest

from bench.stop_trials import LOSES_WRITES, Tally, faults

pytestmark = pytest.mark.fast


def kept_all(kind: str) -> Tally:
    return Tally(kind, trials=10, writes=100, writes_kept=100, mails=30, mails_kept=30)


def test_trials_that_kept_everything_they_must_are_no_fault():
    killed = Tally(LOSES_WRITES, trials=10, writes=100, writes_kept=0, mails=30, mails_kept=30)
    assert faults([kept_all("Ctrl-C (SIGINT)"), killed]) == []


def test_a_lost_write_a_lost_mail_and_a_note_are_each_a_fault():
    hangup = kept_all("closed terminal (SIGHUP)")
    hangup.writes_kept = 70
    killed = Tally(LOSES_WRITES, trials=10, writes=100, writes_kept=0, mails=30, mails_kept=29)
    second = kept_all("second make run, then Ctrl-C")
    second.notes.append("a second make run was NOT refused")
    assert faults([hangup, killed, second]) == [
        "closed terminal (SIGHUP): 30 of 100 writes lost",
        "kill -9: 1 of 30 mails lost",
        "second make run, then Ctrl-C: a second make run was NOT refused",
    ]
