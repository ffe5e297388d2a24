"""One contract, two implementations, for the mailboxes' rhythm: the fake of the fast tier and
the simulated day (tests/support/mailbox_fakes.py) answers as the PynamoDB repository does
(moto), the due index's Query reading about as many items as are due."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chalicelib.domain.announcements import MailboxFailing
from chalicelib.domain.mailboxes import MailboxEdit, PollOutcome, PollState
from tests.support.mailbox_fakes import FakeMailboxRepository

T0 = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)


@pytest.fixture
def mailboxes(kind):
    from chalicelib.store.mailboxes import MailboxRepository

    return FakeMailboxRepository() if kind == "fake" else MailboxRepository()


def save(
    mailboxes, scope: str, *, enabled: bool = True, due: datetime | None = T0, **edit: Any
) -> None:
    """Save `scope`'s settings: a POP3 mailbox, due at `due` when `enabled`; `edit`, the fields
    that differ from that."""
    mailboxes.save_settings(
        scope,
        replace(
            MailboxEdit(
                kind="emailToPost",
                server_name="pop.example.org",
                server_port=995,
                server_username=scope,
                password=b"ciphertext",
                is_enabled=enabled,
                is_ssl=True,
                delete_processed=False,
                editor_id="ann",
                modified_on=T0,
                email_address=f"{scope}@example.org",
                next_poll_on=due if enabled else None,
            ),
            **edit,
        ),
    )


def test_the_due_query_answers_enabled_mailboxes_due_by_the_horizon_in_every_shard(mailboxes):
    for n in range(40):
        save(mailboxes, f"g{n:02d}", due=T0 + timedelta(minutes=n))
    save(mailboxes, "off", enabled=False)
    due = set(mailboxes.due_scopes(T0 + timedelta(minutes=9)))
    assert due == {f"g{n:02d}" for n in range(10)}
    assert mailboxes.count_enabled() == 40
    record = mailboxes.get("g03")
    assert record.email_address == "g03@example.org"
    assert record.next_poll_on == T0 + timedelta(minutes=3)
    assert record.password_ciphertext == b"ciphertext" and record.has_password
    assert mailboxes.get("off").next_poll_on is None


def test_poll_now_makes_an_enabled_mailbox_due_and_refuses_a_disabled_one(mailboxes):
    save(mailboxes, "garden", due=T0 + timedelta(minutes=5))
    save(mailboxes, "off", enabled=False)
    assert set(mailboxes.due_scopes(T0)) == set()
    since = T0 - timedelta(minutes=1)
    assert mailboxes.poll_due_at("garden", T0, not_since=since)[1] is True
    assert mailboxes.poll_due_at("off", T0, not_since=since) == (None, False)
    assert mailboxes.poll_due_at("nobody", T0, not_since=since) == (None, False)
    assert set(mailboxes.due_scopes(T0)) == {"garden"}


def test_a_push_only_mailbox_is_enabled_but_never_due(mailboxes):
    """Enabled with no POP3 server (push only): listed as enabled, out of the due index, and
    poll now makes it due never."""
    save(
        mailboxes, "pushed", due=None, server_name="", server_username="", password=None,
        email_address=None,
    )  # fmt: skip
    assert [m.scope for m in mailboxes.enabled("emailToPost")] == ["pushed"]
    assert mailboxes.get("pushed").is_enabled and mailboxes.get("pushed").next_poll_on is None
    assert set(mailboxes.due_scopes(T0 + timedelta(days=365))) == set()
    since = T0 - timedelta(minutes=1)
    found, made_due = mailboxes.poll_due_at("pushed", T0, not_since=since)
    assert made_due is False and found is not None and found.scope == "pushed"
    assert set(mailboxes.due_scopes(T0 + timedelta(days=365))) == set()


def test_poll_now_again_within_the_limit_writes_nothing_and_names_the_last_one(mailboxes):
    save(mailboxes, "garden", due=T0 + timedelta(minutes=5))
    mailboxes.poll_due_at("garden", T0, not_since=T0 - timedelta(minutes=1))
    later = T0 + timedelta(seconds=40)

    record, made_due = mailboxes.poll_due_at(
        "garden", later, not_since=later - timedelta(minutes=1)
    )

    assert made_due is False and record.poll_now_on == T0 and record.next_poll_on == T0
    after = T0 + timedelta(minutes=1)
    assert mailboxes.poll_due_at("garden", after, not_since=T0)[1] is True
    assert mailboxes.get("garden").next_poll_on == after


def test_a_poll_moves_the_mailbox_and_a_failure_streak_shows_in_the_failing_index(mailboxes):
    save(mailboxes, "garden")
    event = MailboxFailing("post#garden", "garden", "login", "refused", 3, T0.isoformat())
    assert mailboxes.record_poll(
        "garden", PollOutcome(T0, PollState(T0 + timedelta(minutes=30), 0, 3), "refused"), [event]
    )
    record = mailboxes.get("garden")
    assert (record.poll_failures, record.last_error, record.last_error_on) == (3, "refused", T0)
    assert mailboxes.count_failing() == 1
    assert set(mailboxes.due_scopes(T0 + timedelta(minutes=29))) == set()
    assert mailboxes.record_poll("garden", PollOutcome(T0, PollState(T0 + timedelta(minutes=5))))
    record = mailboxes.get("garden")
    assert record.last_error is None and record.last_processed == T0
    assert mailboxes.count_failing() == 0
    assert set(mailboxes.due_scopes(T0 + timedelta(minutes=5))) == {"garden"}


def test_a_poll_of_a_mailbox_disabled_meanwhile_keeps_it_out_of_the_due_index(mailboxes):
    save(mailboxes, "garden")
    save(mailboxes, "garden", enabled=False)
    assert not mailboxes.record_poll(
        "garden", PollOutcome(T0, PollState(T0 + timedelta(minutes=5)))
    )
    assert mailboxes.get("garden").last_processed == T0
    assert set(mailboxes.due_scopes(T0 + timedelta(days=1))) == set()


def test_saving_the_settings_ends_a_failure_streak(mailboxes):
    save(mailboxes, "garden")
    mailboxes.record_poll("garden", PollOutcome(T0, PollState(T0 + timedelta(hours=6), 0, 5), "x"))
    save(mailboxes, "garden", due=T0 + timedelta(minutes=5))
    record = mailboxes.get("garden")
    assert record.poll_failures == 0
    assert mailboxes.count_failing() == 0


def test_the_dispatch_query_reads_about_as_many_items_as_are_due(aws):
    """1,000 enabled mailboxes, 30 due: the Queries read 30 items, not 1,000 (moto's
    ScannedCount of each Query page)."""
    from chalicelib.store.mailboxes import MailboxRecord, MailboxRepository, due_index_values

    repository = MailboxRepository()
    with MailboxRecord.batch_write() as batch:
        for n in range(1000):
            scope = f"g{n:04d}"
            due = T0 + timedelta(minutes=1 + n) if n >= 30 else T0 - timedelta(minutes=n)
            batch.save(
                MailboxRecord(
                    scope,
                    kind="emailToPost",
                    is_enabled=True,
                    enabled_kind="emailToPost",
                    next_poll_on=due,
                    **due_index_values(scope, due),
                )
            )
    scanned: list[int] = []

    def count(parsed: dict, **_: object) -> None:
        scanned.append(int(parsed.get("ScannedCount", 0)))

    connection = MailboxRecord._get_connection().connection.client
    connection.meta.events.register("after-call.dynamodb.Query", count)
    try:
        due = list(repository.due_scopes(T0))
    finally:
        connection.meta.events.unregister("after-call.dynamodb.Query", count)
    assert sorted(due) == [f"g{n:04d}" for n in range(30)]
    assert sum(scanned) == 30
    assert len(scanned) == 16  # one Query per shard, no Scan
