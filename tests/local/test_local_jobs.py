"""make run's mail schedule acts on a mailbox made due now within seconds (agora_local/jobs.py):
it looks at the embedded DynamoDB's mailboxes every few seconds and polls once one is due."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agora_local.jobs import LOOK_SECONDS, DueMailPoll, mailboxes_due_by, scheduled_jobs
from chalicelib import deps
from chalicelib.schemas.connectors import MailboxSettingsUpdate

NOW = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@pytest.mark.fast
def test_the_poll_runs_only_when_a_mailbox_is_due():
    polls, due = [], {"now": False}
    clock = Clock()
    job = DueMailPoll(lambda: polls.append(clock.now) or "polled", lambda _: due["now"], clock)
    assert job() is None and polls == []
    due["now"] = True
    assert job() == "polled"
    clock.now += timedelta(seconds=LOOK_SECONDS)
    assert job() == "polled"
    assert polls == [NOW, NOW + timedelta(seconds=LOOK_SECONDS)]


@pytest.mark.fast
def test_without_a_look_at_the_table_it_polls_every_five_minutes_as_aws_does():
    polls = []
    clock = Clock()
    job = DueMailPoll(lambda: polls.append(clock.now), lambda _: None, clock, fallback_seconds=300)
    job()
    clock.now += timedelta(seconds=299)
    job()
    clock.now += timedelta(seconds=1)
    job()
    assert polls == [NOW, NOW + timedelta(seconds=300)]


@pytest.mark.fast
def test_make_runs_mail_job_is_asked_every_few_seconds():
    [(name, schedule, job)] = [j for j in scheduled_jobs() if j[0] == "poll-mail"]
    assert (
        schedule.next_after(NOW)
        == NOW + timedelta(seconds=LOOK_SECONDS)
        <= NOW + timedelta(seconds=5)
    )
    assert isinstance(job, DueMailPoll)


def save_mailbox(group_id: str, enabled: bool = True) -> None:
    update = MailboxSettingsUpdate.model_validate(
        {
            "serverName": "127.0.0.1",
            "serverPort": 110,
            "serverUsername": "box",
            "serverPassword": "secret",
            "isEnabled": enabled,
            "isSSL": False,
            "deleteProcessed": True,
        }
    )
    group = deps.groups().get(group_id)
    deps.mailbox_settings_service().update_email_to_post(group, update, "editor")


def test_the_look_finds_a_mailbox_made_due_now_and_no_other(
    aws, kms_key, private_mail_hosts, people
):
    start = datetime.now(UTC)
    assert mailboxes_due_by(start) is False  # no mailbox at all
    save_mailbox(people.garden)
    # Saved settings: due 5 minutes later, as in AWS.
    assert mailboxes_due_by(datetime.now(UTC)) is False
    assert mailboxes_due_by(start + timedelta(minutes=6)) is True
    # Poll now: due at once.
    deps.mailbox_settings_service().poll_email_to_post(deps.groups().get(people.garden))
    assert mailboxes_due_by(datetime.now(UTC)) is True
    # A disabled mailbox is never due.
    save_mailbox(people.garden, enabled=False)
    assert mailboxes_due_by(start + timedelta(days=1)) is False
