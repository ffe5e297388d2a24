"""`python -m chalicelib.cli export FILE` (CONTRACT §3): the whole community in the fixture format,
so that `load FILE` into an empty deployment gives the same answers."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from moto import mock_aws

from chalicelib.cli import main
from tests.support import REPO_ROOT
from tests.support.passwords import demo_with_shipped_hashes
from tests.support.running import RunningAgora, run_module, start_agora

DEMO = REPO_ROOT / "demo" / "community.json"
BASE_URL = "http://community.example.org"
# GET routes that are not reads of stored data: the feed key is minted on first read (a new secret
# per deployment), the audit log is history that an export leaves out (it is not the community),
# the rest are documents and pages about the API itself.
NOT_DATA = ("/feed-key", "/audit", "/openapi.json", "/docs", "/console", "/unsubscribe")
# Mailbox settings are not in the fixture format (export leaves them out: docs/cli.md), and make
# run saves the demo's pointing at its own local mailboxes, which a load does not.
NOT_IN_THE_FIXTURE = ("/connector/email-to-post", "/connector/email-to-comment")


@pytest.fixture
def no_tables():
    from chalicelib.settings import reload_settings

    with mock_aws():
        reload_settings()
        yield


@pytest.fixture
def empty_aws(no_tables):
    main(["create-tables"])


def test_export_of_a_load_loads_back_to_the_same_export(empty_aws, tmp_path, capsys):
    assert main(["load", str(DEMO)]) == 0
    first = tmp_path / "first.json"
    assert main(["export", str(first)]) == 0
    out = capsys.readouterr().out
    assert "7 events" in out and "8 users" in out and "1 home page" in out
    exported = json.loads(first.read_text())
    demo = json.loads(DEMO.read_text())
    assert {k: len(v) for k, v in exported.items() if isinstance(v, list)} == {
        k: len(v) for k, v in demo.items() if isinstance(v, list)
    }
    # Passwords leave as their slow hashes, never as the password.
    users = {u["email"]: u for u in exported["users"]}
    assert "password" not in users["ann@agora.example"]
    assert users["ann@agora.example"]["passwordHash"].startswith("$argon2")
    assert "agora-demo-admin" not in first.read_text()
    # The load was recorded in the audit log; the export leaves the log out (it is history).
    from chalicelib.store.audit import AuditRepository

    assert AuditRepository().page(None, limit=1, after=None)[0]
    assert "audit" not in exported and "auditEntry" not in first.read_text()

    # Loading the export into the same store changes nothing; exporting again gives the same file.
    assert main(["load", str(first)]) == 0
    second = tmp_path / "second.json"
    assert main(["export", str(second)]) == 0
    assert json.loads(second.read_text()) == exported


def test_a_mailed_post_and_comment_keep_their_source_through_export_and_load(
    empty_aws, tmp_path, capsys
):
    """Issue 51: export then load turned a mailed post's `source` from `email` to `fixture`.
    (The demo with its shipped password hashes: the hashing is not what this is about.)"""
    from chalicelib.store.comments import CommentRecord
    from chalicelib.store.posts import PostRecord

    demo = json.loads(DEMO.read_text())
    post_id, comment_id = demo["posts"][0]["id"], demo["comments"][0]["id"]
    hashed_demo = demo_with_shipped_hashes(tmp_path)
    assert main(["load", str(hashed_demo)]) == 0
    # As mail in writes them.
    PostRecord(post_id).update(actions=[PostRecord.source.set("email")])
    CommentRecord(comment_id).update(actions=[CommentRecord.source.set("email")])
    exported = tmp_path / "exported.json"
    assert main(["export", str(exported)]) == 0
    assert main(["load", str(hashed_demo)]) == 0  # the fixture's own records are `fixture` again

    assert main(["load", str(exported)]) == 0

    capsys.readouterr()
    assert PostRecord.get(post_id).source == "email"
    assert CommentRecord.get(comment_id).source == "email"
    sources = {p["id"]: p.get("source") for p in json.loads(exported.read_text())["posts"]}
    assert sources[post_id] == "email"
    assert {s for i, s in sources.items() if i != post_id} == {None}  # the default, left out


def test_a_failed_export_keeps_the_previous_file(no_tables, tmp_path, capsys):
    target = tmp_path / "backup.json"
    target.write_text("previous")
    # No tables: the export fails after opening its output.
    assert main(["export", str(target)]) == 1
    assert target.read_text() == "previous"
    assert list(tmp_path.iterdir()) == [target]
    assert "create-tables" in capsys.readouterr().err


def test_an_export_whose_reader_goes_away_ends_quietly(empty_aws, tmp_path, monkeypatch, capfd):
    """`cli export - | head`: standard output is a pipe nobody reads any more. The export stops
    without a word (it said "-: cannot write: Broken pipe") with 141, as a shell reports a
    command that SIGPIPE ended: the output is not whole, so not 0."""
    assert main(["load", str(demo_with_shipped_hashes(tmp_path))]) == 0
    capfd.readouterr()
    read_end, write_end = os.pipe()
    os.close(read_end)  # `head` has read its lines and gone
    closed = os.fdopen(write_end, "w", encoding="utf-8")
    monkeypatch.setattr("sys.stdout", closed)
    assert main(["export", "-"]) == 141
    closed.write("later writes go nowhere\n")
    closed.flush()  # no BrokenPipeError at the interpreter's last flush either
    monkeypatch.undo()
    closed.close()
    assert capfd.readouterr().err == ""


def test_a_file_export_is_written_under_another_name_until_it_is_whole(empty_aws, tmp_path, capsys):
    """Only a whole export takes the file's name; the staging file beside it is gone after."""
    target = tmp_path / "backup.json"
    assert main(["export", str(target)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.json"]
    assert json.loads(target.read_text())["groups"] == []


@pytest.mark.parametrize("existing", [False, True])
def test_the_export_is_readable_by_its_owner_only_and_says_so(
    empty_aws, tmp_path, capsys, existing
):
    """It holds the password hashes: mode 600 whatever the umask, also over a file that was
    there (as a 644 file)."""
    target = tmp_path / "backup.json"
    if existing:
        target.write_text("previous")
        target.chmod(0o644)
    previous = os.umask(0o022)
    try:
        assert main(["export", str(target)]) == 0
    finally:
        os.umask(previous)

    assert target.stat().st_mode & 0o777 == 0o600
    line = capsys.readouterr().out.strip()
    assert line.endswith(f"to {target} (mode 600: readable by its owner only)")
    assert json.loads(target.read_text())["groups"] == []


# --- export from one make run, load into a fresh one, every read answers the same --------------


def cli(agora: RunningAgora, *arguments: str) -> subprocess.CompletedProcess:
    from bench.admin_load import aws_environment

    env = {**os.environ, **aws_environment(agora.output), "PYTHONPATH": str(REPO_ROOT)}
    env.pop("AGORA_TOKEN_SECRET", None)
    return run_module("chalicelib.cli", *arguments, env=env)


def every_read(agora: RunningAgora, token: str) -> dict[str, tuple[int, object]]:
    """Each GET of the OpenAPI document, for each demo id its path names: status and `object`."""
    ids = demo_ids()
    status, document = agora.request("GET", "/api/v1/en_US/openapi.json")
    assert status == 200
    return {
        url: read(agora, url + _read_query(url), token)
        for path, operations in document["paths"].items()
        if _reads_data(path, operations, ids)
        for url in _filled(path, ids)
    }


def demo_ids() -> dict[str, list[str]]:
    """The demo's ids, by the path parameter that names them (and an event the demo lacks)."""
    demo = json.loads(DEMO.read_text())
    return {
        "groupId": [g["id"] for g in demo["groups"]],
        "postId": [p["id"] for p in demo["posts"]],
        "userId": [u["id"] for u in demo["users"]],
        "eventId": [str(e["id"]) for e in demo["events"]] + ["8"],
        "playerId": [p["id"] for p in demo["players"]],
    }


def _reads_data(path: str, operations: dict, ids: dict[str, list[str]]) -> bool:
    """A GET of the fixture's data whose every path parameter names a demo id."""
    if "get" not in operations or any(part in path for part in NOT_DATA + NOT_IN_THE_FIXTURE):
        return False
    return all(name in ids for name in re.findall(r"{(\w+)}", path))


def _filled(path: str, ids: dict[str, list[str]]) -> list[str]:
    """The path with each of its parameters replaced by every demo id of its kind."""
    filled = [path]
    for name in re.findall(r"{(\w+)}", path):
        filled = [p.replace("{" + name + "}", value) for p in filled for value in ids[name]]
    return filled


def _read_query(url: str) -> str:
    if "/calendar/" in url:
        return "?calendarStartDate=2026-01-01T00:00:00Z&calendarEndDate=2028-01-01T00:00:00Z"
    return "?pageSize=100"


# Lines of the feeds that say when they were made, not what they hold.
MADE_AT = re.compile(r"^\s*(<lastBuildDate>|DTSTAMP:).*$", re.MULTILINE)


def read(agora: RunningAgora, path: str, token: str) -> tuple[int, object]:
    """Status and `object` of a JSON answer, or the text of a feed (RSS, iCalendar)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(agora.base + path, headers={"X-Auth": token})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, kind, raw = response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        status, kind, raw = error.code, error.headers["Content-Type"], error.read()
    if kind.startswith("application/json"):
        return status, json.loads(raw).get("object")
    return status, MADE_AT.sub("", raw.decode())


def change_demo(agora: RunningAgora, token: str) -> None:
    """A community that is not the demo as loaded: an approval, a deletion, a new event."""
    auth = {"X-Auth": token}
    assert agora.request("POST", "/api/v1/en_US/comment/post/104/approve", headers=auth)[0] == 200
    assert agora.request("DELETE", "/api/v1/en_US/comment/post/101", headers=auth)[0] == 200
    event = {
        "groupId": "076e75e0-7661-51c5-9ccc-8a2b790e771e",
        "title": "Made after loading",
        "startDate": "2027-06-01T10:00:00Z",
        "endDate": "2027-06-01T11:00:00Z",
    }
    status, body = agora.request("POST", "/api/v1/en_US/event", event, headers=auth)
    assert status == 200 and body["object"]["id"] == 8, body
    home = {"content": "<p>Changed home page</p>"}
    status, _ = agora.request("PUT", "/api/v1/en_US/system-page/home-page", home, headers=auth)
    assert status == 200


@pytest.mark.slow
def test_export_then_load_into_a_fresh_make_run_gives_equal_answers(tmp_path: Path):
    source = start_agora({"AGORA_BASE_URL": BASE_URL})
    try:
        token = source.login()
        change_demo(source, token)
        expected = every_read(source, token)
        exported = cli(source, "export", str(tmp_path / "community.json"))
        assert exported.returncode == 0, exported.stderr
    finally:
        source.stop()

    target = start_agora({"AGORA_BASE_URL": BASE_URL, "AGORA_DEMO": "0"})
    try:
        loaded = cli(target, "load", str(tmp_path / "community.json"))
        assert loaded.returncode == 0, loaded.stderr
        # The demo administrator signs in with the same password: the hash travelled.
        target.admin_email, target.admin_password = source.admin_email, source.admin_password
        answers = every_read(target, target.login())
    finally:
        target.stop()

    assert len(expected) > 60 and sum(1 for s, _ in expected.values() if s == 200) > 50
    different = sorted(url for url in expected if expected[url] != answers.get(url))
    assert different == [], {url: (expected[url], answers.get(url)) for url in different[:3]}
