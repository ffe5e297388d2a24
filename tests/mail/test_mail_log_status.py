"""`?status=` on the mail logs (CONTRACT §9): only that outcome, one Query per page at any size."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tests.support.seeding import seed_mail_log_statuses

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
# Every tenth entry is rejected, one in twenty failed (interrupted or quarantined), the rest posted.
STATUSES = ["rejected"] + ["posted"] * 8 + ["processing", "posted"] * 5 + ["quarantined"]


def seed(mailbox: str, count: int) -> dict[str, str]:
    """`count` log entries, newest first by index; answers entry id → stored status."""
    return seed_mail_log_statuses(mailbox, count, STATUSES, newest=T0)[1]


@pytest.fixture
def garden(community):
    c = community
    c.garden = c.group("garden")
    c.admin = c.user("garden-admin", {c.garden: "administrator"})
    c.root_admin = c.users[0]["id"]
    c.load()
    return c


def log_path(group_id: str, query: str) -> str:
    return f"/api/v1/en_US/connector/email-to-post/{group_id}/log?{query}"


def test_status_lists_only_that_outcome_newest_first_across_pages(api, garden):
    from chalicelib.services.mailboxes import mailbox_key

    statuses = seed(mailbox_key(garden.garden), 60)
    rejected = [entry for entry, status in statuses.items() if status == "rejected"]

    seen: list[str] = []
    offset = ""
    while True:
        status, body = api.get(
            log_path(garden.garden, f"status=rejected&pageSize=2&offset={offset}"), garden.admin
        )
        assert status == 200, body
        entries = body["object"]["entries"]
        if not entries:
            break
        assert {entry["status"] for entry in entries} == {"rejected"}
        seen += [entry["id"] for entry in entries]
        offset = body["object"]["offset"]

    assert seen == rejected  # all of them, newest first, none twice
    status, body = api.get(log_path(garden.garden, "status=failed&pageSize=100"), garden.admin)
    failed = {e for e, s in statuses.items() if s in ("processing", "quarantined")}
    assert {entry["id"] for entry in body["object"]["entries"]} == failed


def test_an_entry_whose_status_changed_still_marks_its_place(api, garden):
    from chalicelib.services.mailboxes import mailbox_key
    from chalicelib.store.mail import MailRepository

    key = mailbox_key(garden.garden)
    statuses = seed(key, 40)
    rejected = [entry for entry, status in statuses.items() if status == "rejected"]
    retried = next(entry for entry, status in statuses.items() if status == "processing")
    repository = MailRepository()
    record = repository.entry(key, retried)
    assert record is not None
    repository.save_entry(replace(record, status="posted"))  # the retry succeeded meanwhile

    status, body = api.get(log_path(garden.garden, f"status=failed&offset={retried}"), garden.admin)
    assert status == 200, body
    assert retried not in [entry["id"] for entry in body["object"]["entries"]]
    status, body = api.get(log_path(garden.garden, "status=rejected"), garden.admin)
    assert [entry["id"] for entry in body["object"]["entries"]] == rejected
    status, body = api.get(log_path(garden.garden, "status=posted&pageSize=100"), garden.admin)
    assert retried in [entry["id"] for entry in body["object"]["entries"]]


@pytest.mark.parametrize("value", ["bogus", "REJECTED", "processing", "quarantined", "rejected "])
def test_an_unknown_status_is_a_400_naming_status(api, garden, value):
    status, body = api.get(log_path(garden.garden, f"status={value}"), garden.admin)

    assert status == 400
    assert [error["key"] for error in body["errors"]] == ["status"]


def test_the_comment_log_filters_too(api, garden):
    from chalicelib.services.mailboxes import COMMENT_KEY

    statuses = seed(COMMENT_KEY, 30)

    status, body = api.get(
        "/api/v1/en_US/connector/email-to-comment/log?status=rejected", garden.root_admin
    )

    assert status == 200
    expected = [entry for entry, s in statuses.items() if s == "rejected"]
    assert [entry["id"] for entry in body["object"]["entries"]] == expected


@pytest.mark.slow
def test_a_status_page_costs_the_same_at_2100_entries_as_at_210(api, community):
    from chalicelib.services.mailboxes import mailbox_key
    from chalicelib.store.mail import MailRecord

    small, large = community.group("small"), community.group("large")
    admin = community.user("admin", {small: "administrator", large: "administrator"})
    community.load()
    seed(mailbox_key(small), 210)  # ten of them rejected: two pages of five
    # Ten times as many: what the page reads is counted (DynamoDB's ScannedCount), not timed, so
    # a read that grew with the log (a filter, a scan) would read ten times as much here. A
    # larger log only costs moto's time; `make scale` reads the mail log of a large world.
    seed(mailbox_key(large), 2_100)
    # The mail table's work, by operation and index. (moto is slow over many items, and may
    # outlast the warm container's memory of the root group: those reads are not the list's,
    # and are left out.)
    work: list[tuple[str, str | None, int]] = []

    requested: list[tuple[str, str | None]] = []

    def note(params, model, **_):
        requested.append((params.get("TableName", ""), params.get("IndexName")))

    def count(http_response, parsed, model, **_):
        table, index = requested.pop(0)
        if table.endswith("-mail"):
            work.append((model.name, index, int(parsed.get("ScannedCount", 0))))

    events = MailRecord._get_connection().connection.client.meta.events
    events.register("provide-client-params.dynamodb", note)
    costs = []
    for group_id in (small, large):
        path = log_path(group_id, "status=rejected&pageSize=5")
        status, first = api.get(path, admin)
        assert status == 200
        offset = first["object"]["offset"]
        events.register("after-call.dynamodb", count)
        work.clear()
        requested.clear()
        status, body = api.get(f"{path}&offset={offset}", admin)
        events.unregister("after-call.dynamodb", count)
        assert status == 200
        assert len(body["object"]["entries"]) == 5
        assert {entry["status"] for entry in body["object"]["entries"]} == {"rejected"}
        costs.append(list(work))
    events.unregister("provide-client-params.dynamodb", note)

    assert costs[0] == costs[1] == [("Query", "by-status", 5)]  # the page, through its index


def test_openapi_documents_the_status_parameter(api):
    import json

    document = json.loads(api.client.http.get("/api/v1/en_US/openapi.json").body)
    for path in (
        "/api/v1/en_US/connector/email-to-post/{groupId}/log",
        "/api/v1/en_US/connector/email-to-comment/log",
    ):
        [parameter] = [
            p for p in document["paths"][path]["get"]["parameters"] if p["name"] == "status"
        ]
        assert parameter["in"] == "query"
        # Empty reads as absent (all entries, CONTRACT §7), and the document says so.
        assert parameter["schema"]["enum"] == [
            "",
            "posted",
            "commented",
            "ignored",
            "rejected",
            "failed",
        ]
