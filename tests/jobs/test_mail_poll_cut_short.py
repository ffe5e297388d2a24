"""A poll cut short by its run's end (jobs/mail_poll.py) is not the mailbox's failure, but it is
seen: the operator's metric MailboxPollCutShort counts each, and a mailbox cut short
poll_schedule.CUT_SHORT_LIMIT times in a row has that last poll recorded as its timeout: lastError
on its settings (the API, the console), the back-off, the failure streak that emails its
administrators. A poll that gets through ends the streak."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from chalicelib.jobs.base import Deadline
from chalicelib.jobs.mail_poll import composed, poll_mailbox
from chalicelib.services.poll_schedule import CUT_SHORT_LIMIT
from tests.jobs.test_mail_poll_lease import LeaseReadingIngestor, ServerGoneWhenTheRunEnds
from tests.support.emf import emf, json_lines, value


@pytest.fixture
def garden(community, kms_key, api, private_mail_hosts):
    c = community
    c.garden = c.group("garden")
    c.admin = c.user("garden-admin", {c.garden: "administrator"})
    c.load()
    settings = {
        "serverName": "127.0.0.1",
        "serverPort": 1110,
        "serverUsername": "garden",
        "serverPassword": "secret-password",
        "isEnabled": True,
        "isSSL": False,
        "deleteProcessed": False,
    }
    path = f"/api/v1/en_US/connector/email-to-post/{c.garden}"
    status, body = api.put(path, c.admin, settings)
    assert status == 200, body
    return c


def settings_of(api, c) -> dict:
    status, body = api.get(f"/api/v1/en_US/connector/email-to-post/{c.garden}", c.admin)
    assert status == 200
    return body["object"]


def cut_short(c, capsys, *, by_stop: bool = False) -> tuple[str, str | None, dict[str, float]]:
    """One poll whose server goes as the run ends (`by_stop`: as make run's stop begins): (its
    line, its failure, metrics it wrote)."""
    ending: list[bool] = []
    parts = replace(composed(), ingestor=lambda: ServerGoneWhenTheRunEnds(ending))
    capsys.readouterr()
    deadline = Deadline(lambda: 0 if ending else 10**12, margin_ms=0, stopping=by_stop)
    polled = poll_mailbox(f"post#{c.garden}", deadline, parts)
    lines = json_lines(capsys.readouterr().out)
    counted = {
        name: sum(value(line, name) for line in emf(lines, name))
        for name in ("MailboxPollCutShort", "MailboxPollFailed")
    }
    return polled.line, polled.failure, counted


def test_a_mailbox_cut_short_run_after_run_is_counted_and_then_shown_as_failing(
    garden, api, capsys, monkeypatch
):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-PollMailbox")  # EMF is written
    due = settings_of(api, garden)["nextPollOn"]
    for _ in range(CUT_SHORT_LIMIT - 1):
        line, failure, counted = cut_short(garden, capsys)
        assert "left for the next run" in line and failure is None
        assert counted == {"MailboxPollCutShort": 1, "MailboxPollFailed": 0}
        shown = settings_of(api, garden)
        assert shown["lastError"] is None and shown["nextPollOn"] == due  # still due

    line, failure, counted = cut_short(garden, capsys)
    assert failure == "timeout" and counted == {"MailboxPollCutShort": 1, "MailboxPollFailed": 1}
    shown = settings_of(api, garden)
    assert shown["lastError"]["message"].startswith("The mail server did not answer in time.")
    assert f"its last {CUT_SHORT_LIMIT} polls ran out of time" in shown["lastError"]["message"]
    waited = datetime.fromisoformat(shown["nextPollOn"]) - datetime.fromisoformat(due)
    assert waited.total_seconds() >= 25 * 60  # backed off (30 minutes after the poll)


def test_a_poll_that_gets_through_ends_the_streak(garden, api, capsys):
    for _ in range(CUT_SHORT_LIMIT - 1):
        assert cut_short(garden, capsys)[1] is None
    parts = replace(composed(), ingestor=lambda: LeaseReadingIngestor())
    assert "error" not in poll_mailbox(f"post#{garden.garden}", Deadline.unbounded(), parts).line
    for _ in range(CUT_SHORT_LIMIT - 1):
        assert cut_short(garden, capsys)[1] is None
    assert settings_of(api, garden)["lastError"] is None


def test_polls_cut_short_by_agoras_own_stop_are_never_the_mailboxs_failure(
    garden, api, capsys, monkeypatch
):
    """Issue 56: make run's stop, however often it lands mid-poll, is no mailbox's failure."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-PollMailbox")  # EMF is written
    due = settings_of(api, garden)["nextPollOn"]
    for _ in range(CUT_SHORT_LIMIT + 1):
        line, failure, counted = cut_short(garden, capsys, by_stop=True)
        assert "left for the next run (Agora was stopping)" in line and failure is None
        assert counted == {"MailboxPollCutShort": 0, "MailboxPollFailed": 0}
    shown = settings_of(api, garden)
    assert shown["lastError"] is None and shown["nextPollOn"] == due
    # Nor do they count toward a streak of the run's own ends.
    for _ in range(CUT_SHORT_LIMIT - 1):
        assert cut_short(garden, capsys)[1] is None
    assert settings_of(api, garden)["lastError"] is None
