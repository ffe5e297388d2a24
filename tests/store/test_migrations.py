"""`migrate` (CONTRACT §3): items of an older shape are brought to the current one, in pages that
resume where a run stopped, and a second run changes nothing."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from chalicelib.jobs.base import Deadline
from chalicelib.jobs.migrate import run_migrations
from tests.support.seeding import seed_mail_log_statuses

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
STATUSES = ["posted", "rejected", "ignored", "processing", "quarantined", "commented", "failed"]


def old_entries(mailbox: str, count: int) -> dict[str, str]:
    """Log entries as the code before the `?status=` index wrote them: without its hash key."""
    from chalicelib.store.mail import MailRecord

    records, statuses = seed_mail_log_statuses(mailbox, count, STATUSES, newest=T0)
    for entry in records:
        item = MailRecord(entry.mailbox, "entry#" + entry.entry_id)
        item.update(actions=[MailRecord.status_mailbox.remove()])
    return statuses


def listed(api, group_id: str, user: str, status: str) -> list[str]:
    """Every entry id the log lists under `status`, through the API, page by page."""
    ids: list[str] = []
    offset = ""
    while True:
        path = f"/api/v1/en_US/connector/email-to-post/{group_id}/log?status={status}&pageSize=7"
        status_code, body = api.get(path + (f"&offset={offset}" if offset else ""), user)
        assert status_code == 200, body
        entries = body["object"]["entries"]
        if not entries:
            return ids
        ids += [e["id"] for e in entries]
        offset = body["object"]["offset"]


LISTED = {"processing": "failed", "quarantined": "failed"}


def expected(statuses: dict[str, str], status: str) -> set[str]:
    return {i for i, s in statuses.items() if LISTED.get(s, s) == status}


@pytest.fixture
def garden(community):
    c = community
    c.garden = c.group("garden")
    c.load()
    return c


def migrated_once(reported: str) -> None:
    """Every migration runs to its end, and one line of the report starts with `reported`."""
    report = run_migrations(Deadline.unbounded())
    assert report.done
    assert any(line.startswith(reported) for line in report.lines), report.lines


def test_old_mail_log_entries_are_listed_by_status_after_migrate(api, garden):
    from chalicelib.services.mailboxes import mailbox_key

    root = garden.users[0]["id"]
    statuses = old_entries(mailbox_key(garden.garden), 30)
    assert listed(api, garden.garden, root, "rejected") == []  # the gap the migration fills

    migrated_once("mail-log-status-index: done: 30 item(s) read, 30 changed")

    for status in ("posted", "commented", "ignored", "rejected", "failed"):
        ids = listed(api, garden.garden, root, status)
        assert len(ids) == len(set(ids))
        assert set(ids) == expected(statuses, status), status
    again = run_migrations(Deadline.unbounded())
    assert again.done
    assert "mail-log-status-index: already done" in again.lines
    # The migration that changed items is in the audit log once; those that changed none are not.
    status, body = api.get("/api/v1/en_US/audit?action=migration", root)
    assert status == 200, body
    ran = {e["target"]["id"]: e["changes"] for e in body["object"]["entries"]}
    assert ran["mail-log-status-index"] == [{"field": "changed", "before": None, "after": 30}]
    assert "group-name-index" not in ran and len(ran) == len(body["object"]["entries"])
    actors = {(e["actor"]["name"], e["via"]) for e in body["object"]["entries"]}
    assert actors == {("migrate", "job")}


def test_a_run_cut_short_resumes_from_its_position_and_brings_each_item_once(api, garden):
    from chalicelib.services.mailboxes import mailbox_key
    from chalicelib.store import migrations

    root = garden.users[0]["id"]
    statuses = old_entries(mailbox_key(garden.garden), 25)
    everything = migrations.migrations()
    pages = 0

    def after_two_pages() -> bool:
        return pages >= 2

    def counted(_outcome: migrations.Outcome) -> None:
        nonlocal pages
        pages += 1

    first = migrations.run(everything, after_two_pages, page_size=10, on_page=counted)
    assert [o.name for o in first] == ["mail-log-status-index"]  # the rest wait, in order
    assert not first[0].done and first[0].examined == 20
    state = migrations.state_of("mail-log-status-index")
    assert state.position is not None and not state.done

    rounds = 0
    while not all(o.done for o in migrations.run(everything, lambda: False, page_size=10)):
        rounds += 1
        assert rounds < 5
    state = migrations.state_of("mail-log-status-index")
    assert state.done and int(state.examined) == 25 and int(state.changed) == 25
    assert set(listed(api, garden.garden, root, "posted")) == expected(statuses, "posted")


def test_an_entry_rewritten_meanwhile_keeps_what_its_writer_set(aws):
    from chalicelib.store import migrations
    from chalicelib.store.mail import MailRecord, MailRepository, status_partition

    mailbox = "post#g1"
    entry_id = next(iter(old_entries(mailbox, 1)))
    stale = MailRecord.get(mailbox, "entry#" + entry_id)
    assert stale.status_mailbox is None
    fresh = MailRepository().entry(mailbox, entry_id)
    assert fresh is not None
    MailRepository().save_entry(replace(fresh, status="rejected"))

    [mail_log, *_] = migrations.migrations()
    assert mail_log.bring([stale]) == 0
    stored = MailRecord.get(mailbox, "entry#" + entry_id)
    assert stored.status_mailbox == status_partition(mailbox, "rejected")


def test_users_stored_before_the_people_search_are_found_after_migrate(api, community):
    from chalicelib.store.user_search import UserSearchRecord

    c = community
    c.user("mary-shelley")
    c.load()
    root = c.users[0]["id"]
    for item in UserSearchRecord.scan():  # as a deployment before the people search had it
        item.delete()
    search = "/api/v1/en_US/user/search?q=mary"
    assert api.get(search, root)[1]["object"]["users"] == []

    assert run_migrations(Deadline.unbounded()).done

    found = api.get(search, root)[1]["object"]["users"]
    assert [u["alias"] for u in found] == ["Mary Shelley"]
    assert [
        u["alias"] for u in api.get(search.replace("mary", "shel"), root)[1]["object"]["users"]
    ] == ["Mary Shelley"]


def test_the_cli_prints_what_each_migration_did(aws, capsys):
    from chalicelib.cli import main

    old_entries("post#g1", 3)
    assert main(["migrate"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == (
        "mail-log-status-index: done: 3 item(s) read, 3 changed "
        "(mail log entries listed by ?status=)"
    )
    assert lines[1].startswith("people-search-index: done: ")
    assert main(["migrate"]) == 0
    assert capsys.readouterr().out.strip().splitlines() == [
        "mail-log-status-index: already done",
        "people-search-index: already done",
        "post-comments-count: already done",
        "mailbox-due-index: already done",
        "group-name-index: already done",
    ]


def test_posts_from_before_comments_count_count_their_comments_after_migrate(api, community):
    from chalicelib.store.posts import PostRecord

    c = community
    garden = c.group("garden")
    root = c.users[0]["id"]
    never_counted = c.post(garden, root, "Older than the count")
    counted_from_zero = c.post(garden, root, "Counted only since the upgrade")
    for post in (never_counted, counted_from_zero):
        for _ in range(3):
            c.comment(post, root, isApproved=True)
    c.comment(counted_from_zero, root, isApproved=False)  # not visible: not counted
    c.load()
    # As stored before the count was kept on the post, and after one comment since.
    PostRecord(never_counted).update(actions=[PostRecord.comments_count.remove()])
    PostRecord(counted_from_zero).update(actions=[PostRecord.comments_count.set(1)])
    assert api.get(f"/api/v1/en_US/post/{never_counted}", root)[1]["object"]["commentsCount"] == 0

    migrated_once("post-comments-count: done: 2 item(s) read, 2 changed")

    for post in (never_counted, counted_from_zero):
        status, body = api.get(f"/api/v1/en_US/post/{post}", root)
        assert status == 200 and body["object"]["commentsCount"] == 3, body


def test_a_mailbox_disabled_meanwhile_is_not_scheduled_by_the_migration(aws):
    from chalicelib.clock import utc_now
    from chalicelib.domain.mailboxes import MailboxEdit
    from chalicelib.store import migrations
    from chalicelib.store.mailboxes import MailboxRecord, MailboxRepository

    def edit(enabled: bool) -> MailboxEdit:
        due = utc_now() if enabled else None
        return MailboxEdit(
            "emailToPost", "pop.example.org", 995, "u", None, enabled, True, False, "ann",
            utc_now(), next_poll_on=due,
        )  # fmt: skip

    mailboxes = MailboxRepository()
    for scope in ("g1", "g2"):
        mailboxes.save_settings(scope, edit(True))
        MailboxRecord(scope).update(  # as saved before the due index
            actions=[
                MailboxRecord.due_shard.remove(),
                MailboxRecord.due_key.remove(),
                MailboxRecord.next_poll_on.remove(),
            ]
        )
    # The items as the migration's scan reads them.
    stale = [MailboxRecord.get("g1"), MailboxRecord.get("g2")]
    mailboxes.save_settings("g2", edit(False))

    schedule = next(m for m in migrations.migrations() if m.name == "mailbox-due-index")
    assert schedule.bring(stale) == 1
    assert list(mailboxes.due_scopes(utc_now())) == ["g1"]
    assert schedule.bring(stale) == 0  # twice changes nothing
