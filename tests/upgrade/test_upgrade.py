"""Data written by the previous release works after an upgrade (CONTRACT §3): its items, as it
stored them (`items-<commit>.json`, written by that release's own code: tests/upgrade/regenerate.py),
are put into the current tables, `migrate` runs, and every read answers what that release answered
(`answers-<commit>.json`), every mail log filter lists all of its entries, every enabled mailbox
is scheduled, every user is found and every group listed.

Some reads depend on "now" (which events are upcoming, which expired): the answers were taken at
one moment (`ANSWERED_AT`) and are replayed at that moment (`chalicelib.clock.fixed_at`), so the
comparison means the same on any day."""

from __future__ import annotations

import base64
import json
import pickle
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
PREVIOUS = "9c0829a"  # the last commit on main before this release (tests/upgrade/regenerate.py)
# The moment the previous release answered `answers-<commit>.json`: its run's last write (the
# approval, `approvedOn` in the answers) was at 08:35:13.04 and the reads followed it within the
# second; every now-relative answer is the same anywhere from then to 2026-11-28T19:00Z (the next
# event's start). regenerate.py runs the release it records under this clock (faketime).
ANSWERED_AT = datetime(2026, 11, 26, 8, 35, 14, tzinfo=UTC)
BASE_URL = "http://localhost:8000"  # the previous release's AGORA_BASE_URL when it answered
ANN = "e617f654-4733-5bcb-848a-ff4399877765"  # the demo's root administrator
LISTED = ["posted", "commented", "ignored", "rejected", "failed"]


def previous_items() -> dict[str, list[dict[str, Any]]]:
    return json.loads((HERE / f"items-{PREVIOUS}.json").read_text(encoding="utf-8"))


def previous_answers() -> dict[str, dict[str, Any]]:
    from chalicelib.settings import get_settings

    text = (HERE / f"answers-{PREVIOUS}.json").read_text(encoding="utf-8")
    return json.loads(text.replace(BASE_URL, get_settings().base_url.rstrip("/")))


def wire(value: Any) -> Any:
    """An item of the file as boto3 takes it (binary values are base64 in the file)."""
    if isinstance(value, dict):
        if set(value) == {"B"}:
            return {"B": base64.b64decode(value["B"])}
        return {k: wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [wire(v) for v in value]
    return value


def put_previous_items() -> dict[str, list[dict[str, Any]]]:
    """Every item the previous release stored, into this release's tables, unchanged."""
    from chalicelib.aws import client
    from chalicelib.settings import get_settings

    dynamodb = client("dynamodb")
    prefix = get_settings().table_prefix
    existing = set(dynamodb.list_tables()["TableNames"])
    items = previous_items()
    for stem, table_items in items.items():
        table = prefix + stem
        assert table in existing, f"the previous release's table {stem} is gone"
        for start in range(0, len(table_items), 25):
            requests = [{"PutRequest": {"Item": wire(i)}} for i in table_items[start : start + 25]]
            dynamodb.batch_write_item(RequestItems={table: requests})
    return items


def holds(new: Any, old: Any, where: str = "") -> None:
    """`new` says everything `old` said (it may say more: a field a release added)."""
    if isinstance(old, dict):
        assert isinstance(new, dict), where
        for key, value in old.items():
            assert key in new, f"{where}.{key} is gone"
            holds(new[key], value, f"{where}.{key}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), f"{where}: {new!r} != {old!r}"
        for number, (n, o) in enumerate(zip(new, old, strict=True)):
            holds(n, o, f"{where}[{number}]")
    else:
        assert new == old, f"{where}: {new!r} != {old!r}"


# Stored passwords were encrypted with the previous `make run`'s KMS key, which the items do not
# carry: the settings answers are compared by the `make run` upgrade test, whose data folder has it.
NEEDS_ITS_KMS_KEY = ("/connector/email-to-post/", "/connector/email-to-comment/")


# The upgraded tables (pickled moto tables), the items put and the migration's report, as the
# first test in this process made them: the later tests start from a copy of the same state
# instead of putting 140 kB of items and migrating them again (about 3 s each).
_UPGRADED: dict[str, Any] = {}


@pytest.fixture
def upgraded(aws):
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.migrate import run_migrations
    from tests.fixtures import moto_dynamodb

    _, backend = moto_dynamodb()
    if _UPGRADED:
        backend.tables.clear()
        backend.tables.update(pickle.loads(_UPGRADED["tables"]))
        return _UPGRADED["items"], _UPGRADED["report"]
    items = put_previous_items()
    report = run_migrations(Deadline.unbounded())
    assert report.done, report.lines
    _UPGRADED.update(tables=pickle.dumps(dict(backend.tables)), items=items, report=report)
    return items, report


def test_every_read_answers_as_the_previous_release_did(api, upgraded):
    from chalicelib.clock import fixed_at

    answers = previous_answers()
    compared = 0
    with fixed_at(ANSWERED_AT):
        for path, answer in answers.items():
            if any(part in path for part in NEEDS_ITS_KMS_KEY) and "/log" not in path:
                continue
            status, body = api.get(path, ANN)
            assert status == answer["status"], (path, body)
            holds(body["object"], answer["object"], path)
            compared += 1
    assert compared > 80
    # The answers that depend on now are among them, with both sides of it.
    upcoming = [a for p, a in answers.items() if "/event/list/upcoming/" in p]
    expired = [a for p, a in answers.items() if "/event/list/expired/" in p]
    assert any(a["object"]["events"] for a in upcoming) and any(
        a["object"]["events"] for a in expired
    )


def test_every_mail_log_filter_lists_every_entry_of_the_previous_release(api, upgraded):
    items, report = upgraded
    entries = [i for i in items["mail"] if i["sk"]["S"].startswith("entry#")]
    unlisted = [i for i in entries if "status_mailbox" not in i]
    assert unlisted, "the fixture holds entries from before the status index"
    assert any(
        line.startswith(f"mail-log-status-index: done: {len(unlisted)} item(s) read")
        for line in report.lines
    ), report.lines
    by_mailbox: dict[str, dict[str, set[str]]] = {}
    for item in entries:
        status = {"processing": "failed", "quarantined": "failed"}.get(
            item["status"]["S"], item["status"]["S"]
        )
        mailbox = item["mailbox"]["S"]
        by_mailbox.setdefault(mailbox, {}).setdefault(status, set()).add(item["entry_id"]["S"])
    assert len(by_mailbox) == 3
    for mailbox, statuses in by_mailbox.items():
        log = (
            "/api/v1/en_US/connector/email-to-comment/log"
            if mailbox == "comment#system"
            else f"/api/v1/en_US/connector/email-to-post/{mailbox.removeprefix('post#')}/log"
        )
        for status in LISTED:
            status_code, body = api.get(f"{log}?pageSize=100&status={status}", ANN)
            assert status_code == 200, body
            listed = [e["id"] for e in body["object"]["entries"]]
            assert len(listed) == len(set(listed))
            assert set(listed) == statuses.get(status, set()), (mailbox, status)


def test_every_user_of_the_previous_release_is_found_by_the_people_search(api, upgraded):
    items, _ = upgraded
    for user in items["users"]:
        alias = user["alias"]["S"]
        status, body = api.get(f"/api/v1/en_US/user/search?q={alias[:4].lower()}", ANN)
        assert status == 200, body
        assert user["id"]["S"] in {u["id"] for u in body["object"]["users"]}, alias


def test_every_enabled_mailbox_of_the_previous_release_is_scheduled(upgraded):
    from chalicelib.clock import utc_now
    from chalicelib.store.mailboxes import MailboxRepository

    items, _ = upgraded
    enabled = {i["scope"]["S"] for i in items["mailboxes"] if i["is_enabled"]["BOOL"]}
    assert len(enabled) == 3
    assert not any("due_key" in i for i in items["mailboxes"])  # saved before the due index
    # What the 5-minute dispatch polls: every one of them, due now.
    assert set(MailboxRepository().due_scopes(utc_now())) == enabled


def test_every_group_of_the_previous_release_is_in_the_group_list(api, upgraded):
    items, _ = upgraded
    status, body = api.get("/api/v1/en_US/group/list?pageSize=100", ANN)
    assert status == 200, body
    listed = [g["id"] for g in body["object"]["groups"]]
    assert sorted(listed) == sorted(i["id"]["S"] for i in items["groups"])
    names = [g["name"].lower() for g in body["object"]["groups"]]
    assert names == sorted(names)
