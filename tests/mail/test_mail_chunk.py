"""Sorting a chunk of downloaded mail (services/mail_in/ingest.py): pure, before any import."""

from __future__ import annotations

import pytest

from chalicelib.domain.mailboxes import LogEntry, Quarantine, Skip
from chalicelib.services.mail_in.ingest import (
    EXHAUSTED,
    FRESH,
    HANDLED,
    SKIPPED,
    SUSPECT,
    DownloadedMail,
    settle_repeats,
    sort_chunk,
    split_repeats,
    verdict,
)
from tests.support import NOW

pytestmark = pytest.mark.fast


def logged(status: str | None, attempts: int = 1) -> LogEntry:
    return LogEntry("post#g", "e", NOW, status=status, attempts=attempts)


def mail(uidl: str, entry_id: str) -> DownloadedMail:
    return DownloadedMail(uidl=uidl, raw=b"", received_on=NOW, entry_id=entry_id)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (None, FRESH),
        (logged("posted"), HANDLED),
        (logged("rejected", attempts=9), HANDLED),
        (logged("quarantined"), HANDLED),
        (logged("processing", attempts=3), EXHAUSTED),
        (logged("failed", attempts=4), EXHAUSTED),
        (logged("processing", attempts=2), SUSPECT),
        (logged("failed", attempts=0), SUSPECT),
        (logged(None, attempts=0), SUSPECT),
    ],
)
def test_the_entry_says_what_a_mail_is(entry, expected):
    assert verdict(entry, max_attempts=3) == expected


def test_a_mail_twice_in_a_chunk_follows_the_first():
    a1, b, a2, a3 = mail("1", "a"), mail("2", "b"), mail("3", "a"), mail("4", "a")
    firsts, repeats = split_repeats([a1, b, a2, a3])
    assert firsts == [a1, b]
    assert repeats == [(a2, a1), (a3, a1)]


def test_the_chunk_is_sorted_by_what_the_log_says():
    known = {
        "done": logged("posted"),
        "kept": logged("quarantined"),
        "dead": logged("processing", attempts=3),
        "tried-twice": logged("processing", attempts=2),
        "tried-once": logged("failed", attempts=1),
    }
    new, done, kept, dead, twice, once, again = (
        mail("1", "new"),
        mail("2", "done"),
        mail("3", "kept"),
        mail("4", "dead"),
        mail("5", "tried-twice"),
        mail("6", "tried-once"),
        mail("7", "new"),
    )
    chunk = sort_chunk([new, done, kept, dead, twice, once, again], known, max_attempts=3)

    assert chunk.fresh == [new] and new.entry is None
    assert chunk.suspects == [once, twice]  # fewest attempts first
    assert chunk.repeats == [(again, new)]
    assert chunk.settled[:2] == [Skip(known["done"], "2"), Skip(known["kept"], "3")]
    (quarantine,) = chunk.settled[2:]
    assert isinstance(quarantine, Quarantine) and quarantine.uidl == "4"
    assert "interrupted 3 times" in quarantine.reason
    assert (done.status, done.deletable) == (SKIPPED, True)
    assert (kept.status, kept.deletable) == (SKIPPED, False)  # quarantined mail stays
    assert (dead.status, dead.deletable) == ("quarantined", False)
    assert twice.entry is known["tried-twice"] and twice.status == ""


def test_a_repeat_is_marked_under_its_first_only_once_the_first_is_settled():
    posted, failed, quarantined = mail("1", "a"), mail("2", "b"), mail("3", "c")
    posted.status, posted.entry = "posted", logged("posted")
    failed.status, failed.entry = "failed", logged("failed")
    quarantined.status, quarantined.entry = "quarantined", logged("quarantined")
    again = [mail("4", "a"), mail("5", "b"), mail("6", "c")]

    steps = settle_repeats(list(zip(again, [posted, failed, quarantined], strict=True)))

    assert steps == [Skip(posted.entry, "4"), Skip(quarantined.entry, "6")]
    assert [m.status for m in again] == [SKIPPED] * 3
    assert [m.deletable for m in again] == [True, False, False]
