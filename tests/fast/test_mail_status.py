"""The mail statuses (chalicelib/domain/mailboxes.py): stored and shown values never change."""

from __future__ import annotations

import json
from typing import get_args

from chalicelib.domain.mailboxes import FINAL, OUTCOMES, MailStatus, listed
from chalicelib.schemas.mail_log import MailStatus as ApiMailStatus
from chalicelib.services.mail_in.rules import PollResult


def test_the_stored_values_are_the_words_the_log_always_held():
    assert [status.value for status in MailStatus] == [
        "processing",
        "posted",
        "commented",
        "ignored",
        "rejected",
        "failed",
        "quarantined",
    ]
    # A status is its word wherever it goes: JSON, an f-string, a comparison with stored text.
    assert json.dumps({"status": MailStatus.POSTED}) == '{"status": "posted"}'
    assert f"{MailStatus.REJECTED}" == "rejected" and MailStatus.FAILED == "failed"


def test_the_api_shows_exactly_the_poll_outcomes():
    assert set(get_args(ApiMailStatus)) == set(OUTCOMES)


def test_an_interrupted_or_quarantined_mail_is_listed_as_failed():
    assert listed("processing") == "failed"
    assert listed(MailStatus.QUARANTINED) == "failed"
    assert listed("posted") == "posted" and type(listed("posted")) is str
    assert listed("unknown") == "unknown"


def test_a_settled_mail_is_final_and_a_failed_one_is_retried():
    assert "quarantined" in FINAL and "posted" in FINAL
    assert "failed" not in FINAL and "processing" not in FINAL


def test_a_poll_counts_a_quarantined_mail_as_failed_and_keeps_its_line():
    result = PollResult("post#g")
    for status in ("posted", MailStatus.QUARANTINED, "failed", "skipped", "processing"):
        result.count(status)
    assert result.line() == (
        "post#g: seen 0, posted 1, commented 0, ignored 0, rejected 0, failed 2, skipped 1, "
        "deleted 0, left 0"
    )
