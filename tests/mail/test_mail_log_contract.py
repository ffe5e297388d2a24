"""The mail log's steps (domain/ports/mail.py), one set of tests run on the fake the fast tests
use (tests/support/mail_fakes.py) and on the DynamoDB repository (store/mail.py, moto): the fake
answers what the store answers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.mailboxes import Fail, Finish, Quarantine, Reserve, Skip
from chalicelib.domain.ports.mail import Marker
from tests.support.mail_fakes import FakeMailLog

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
BOX = "post#g1"
ACCOUNT = "acc1"


@pytest.fixture(params=[pytest.param("fake", marks=pytest.mark.fast), "dynamodb"])
def log(request):
    if request.param == "fake":
        return FakeMailLog()
    request.getfixturevalue("aws")
    from chalicelib.store.mail import MailRepository

    return MailRepository()


def fresh(log, entry_id: str = "e1", subject: str = "Hello"):
    return log.new_entry(
        BOX, entry_id, T0, message_id=f"{entry_id}@mail.example", sender="a@b.c", subject=subject
    )


def test_an_entry_not_yet_stepped_is_not_stored(log):
    fresh(log)
    assert log.entry(BOX, "e1") is None and log.entries(BOX, ["e1"]) == {}


def test_reserving_counts_an_attempt_before_any_work(log):
    entry = fresh(log)
    answered = log.record(BOX, ACCOUNT, [Reserve(entry)])
    stored = log.entry(BOX, "e1")
    assert (stored.status, stored.attempts, stored.subject) == ("processing", 1, "Hello")
    assert answered == {"e1": stored}
    assert (entry.status, entry.attempts) == (None, 0)  # the entry handed in is not changed
    assert log.record(BOX, ACCOUNT, [Reserve(stored)])["e1"].attempts == 2
    assert log.entry(BOX, "e1").attempts == 2


def test_steps_on_one_entry_build_on_each_other_and_answer_the_last(log):
    entry = fresh(log)
    answered = log.record(BOX, ACCOUNT, [Reserve(entry), Fail(entry, "attempt 1 of 3 failed")])
    assert answered == {"e1": log.entry(BOX, "e1")}
    assert (answered["e1"].status, answered["e1"].attempts) == ("failed", 1)


def test_finishing_stores_the_outcome_and_marks_the_message_handled(log):
    [reserved] = log.record(BOX, ACCOUNT, [Reserve(fresh(log))]).values()
    log.record(BOX, ACCOUNT, [Finish(reserved, "uid-1", "posted", "posted", post_id="p9")])
    stored = log.entry(BOX, "e1")
    assert (stored.status, stored.reason, stored.post_id) == ("posted", "posted", "p9")
    assert stored.attempts == 1
    assert log.handled_uidls(BOX, ACCOUNT, ["uid-1", "uid-2"]) == {"uid-1": Marker("e1", "posted")}


def test_markers_belong_to_one_account(log):
    entry = fresh(log)
    log.record(BOX, ACCOUNT, [Finish(entry, "uid-1", "ignored", "bounce")])
    assert log.handled_uidls(BOX, "another", ["uid-1"]) == {}
    assert log.handled_uidls("post#g2", ACCOUNT, ["uid-1"]) == {}


def test_quarantine_keeps_the_reason_and_marks_it_quarantined(log):
    entry = fresh(log)
    log.record(BOX, ACCOUNT, [Reserve(entry), Quarantine(entry, "uid-1", "no more retries")])
    stored = log.entry(BOX, "e1")
    assert (stored.status, stored.reason, int(stored.attempts)) == (
        "quarantined",
        "no more retries",
        1,
    )
    assert log.handled_uidls(BOX, ACCOUNT, ["uid-1"])["uid-1"].status == "quarantined"


def test_a_failed_attempt_leaves_no_marker(log):
    entry = fresh(log)
    log.record(BOX, ACCOUNT, [Reserve(entry), Fail(entry, "attempt 1 of 3 failed")])
    stored = log.entry(BOX, "e1")
    assert (stored.status, stored.reason, int(stored.attempts)) == (
        "failed",
        "attempt 1 of 3 failed",
        1,
    )
    assert log.handled_uidls(BOX, ACCOUNT, ["uid-1"]) == {}


def test_skipping_marks_another_copy_without_changing_the_entry(log):
    entry = fresh(log)
    log.record(BOX, ACCOUNT, [Finish(entry, "uid-1", "posted", "posted")])
    log.record(BOX, ACCOUNT, [Skip(log.entry(BOX, "e1"), "uid-2")])
    assert log.handled_uidls(BOX, ACCOUNT, ["uid-2"]) == {"uid-2": Marker("e1", "posted")}
    assert log.entry(BOX, "e1").status == "posted"


def test_steps_of_many_mails_are_recorded_together(log):
    first, second, third = fresh(log, "e1", "A"), fresh(log, "e2", "B"), fresh(log, "e3", "C")
    log.record(
        BOX,
        ACCOUNT,
        [Reserve(first), Reserve(second), Finish(third, "uid-3", "rejected", "cannot be read")],
    )
    found = log.entries(BOX, ["e1", "e2", "e3", "e4"])
    assert {key: entry.status for key, entry in found.items()} == {
        "e1": "processing",
        "e2": "processing",
        "e3": "rejected",
    }


def test_a_comment_id_is_kept_on_the_entry_before_the_comment_is_stored(log):
    [reserved] = log.record(BOX, ACCOUNT, [Reserve(fresh(log))]).values()
    kept = log.keep_comment_id(reserved, 42, "p1")
    stored = log.entry(BOX, "e1")
    assert (stored.comment_id, stored.post_id, stored.status, stored.attempts) == (
        42,
        "p1",
        "processing",
        1,
    )
    assert kept == stored and reserved.comment_id is None


def test_prepare_is_harmless(log):
    log.prepare()
    assert log.entry(BOX, "nothing") is None
