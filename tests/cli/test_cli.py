"""`python -m chalicelib.cli` (CONTRACT §3): create-tables and load (validated whole, idempotent)."""

from __future__ import annotations

import copy
import json
import re
import subprocess

import pytest
from moto import mock_aws

from chalicelib.aws import client
from chalicelib.cli import Progress, main
from tests.support import REPO_ROOT, suite_key_pair
from tests.support.passwords import demo_with_shipped_hashes
from tests.support.running import run_module, this_clock

DEMO = REPO_ROOT / "demo" / "community.json"


def table_contents() -> dict[str, list[dict]]:
    from chalicelib.aws import client

    dynamodb = client("dynamodb")
    contents = {}
    for name in dynamodb.list_tables()["TableNames"]:
        items = dynamodb.scan(TableName=name)["Items"]
        contents[name] = sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    return contents


@pytest.fixture
def empty_aws():
    from chalicelib.settings import reload_settings
    from chalicelib.store import base
    from chalicelib.store.groups import GroupRepository

    with mock_aws():
        reload_settings()
        # A warm container's memory (the root group's id, users, groups) is of another AWS.
        GroupRepository.forget_cache()
        base.forget()
        yield


def load_file(tmp_path, fixture: dict, name: str) -> int:
    """`cli load` of `fixture`, written to the file `name` first: its exit status."""
    path = tmp_path / name
    path.write_text(json.dumps(fixture))
    return main(["load", str(path)])


def test_create_tables_creates_each_once(empty_aws, capsys):
    assert main(["create-tables"]) == 0
    first = capsys.readouterr().out
    assert "agora-test-posts" in first and "agora-test-comments" in first
    # Expiring records (alerts, sign-in attempts, digests, the outbox) expire: TTL is on.
    ttl = client("dynamodb").describe_time_to_live(TableName="agora-test-alerts")
    assert ttl["TimeToLiveDescription"]["TimeToLiveStatus"] == "ENABLED"
    assert main(["create-tables"]) == 0
    assert capsys.readouterr().out.startswith("created 0 table(s)")


def test_demo_loads_and_loading_twice_changes_nothing_and_later_ids_start_above_it(
    empty_aws, capsys, tmp_path, monkeypatch
):
    """The second load is on a terminal: it shows its progress, a bar over every record of the
    file (the same loaded demo serves both: each load costs eight full-strength hashes)."""
    from chalicelib.store.counters import CounterRepository

    main(["create-tables"])
    capsys.readouterr()
    assert main(["load", str(DEMO)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("loaded 8 groups (all created), 8 users (all created), ")
    assert err == ""  # no progress line when stderr is not a terminal
    before = table_contents()
    terminal = Terminal()
    with monkeypatch.context() as patched:
        patched.setattr("sys.stderr", terminal)
        assert main(["load", str(DEMO)]) == 0
    assert table_contents() == before
    assert "load: 8 groups written" in terminal.text
    assert "players written" in terminal.text
    assert terminal.text.endswith("\r")  # the status line is wiped before the result prints
    drawn = [part.strip() for part in terminal.text.split("\r") if part.strip()]
    assert any(re.search(r"\[#+-+\]\s+\d+%$", part) for part in drawn), drawn
    assert any(part.endswith("[" + "#" * Progress.BAR + "] 100%") for part in drawn), drawn
    # What changed is told from one read before the load: no read after it.
    assert "load: reading what is stored" in terminal.text and "100%" in drawn[-1]
    # The second load says it changed nothing, with the counts it found as the file has them.
    again = capsys.readouterr().out
    assert again.startswith("nothing changed: 8 groups, 8 users, 9 posts, 12 comments, 7 events, ")
    assert again.endswith(" already stored as the file has them\n")

    # Ids assigned later start above the loaded comment ids (the same loaded demo: each load
    # costs eight full-strength password hashes).
    highest = max(c["id"] for c in json.loads(DEMO.read_text())["comments"])
    assert CounterRepository().next_value("comments") == highest + 1


def test_a_reload_counts_what_it_created_updated_and_left_unchanged(empty_aws, capsys, tmp_path):
    """A load says what it changed, record by record as `export` would write them: the demo
    again with one post retitled and one event more."""
    main(["create-tables"])
    demo = demo_with_shipped_hashes(tmp_path)
    assert main(["load", str(demo)]) == 0
    capsys.readouterr()
    fixture = json.loads(demo.read_text())
    fixture["posts"][0]["title"] = "A new title"
    fixture["events"].append({**fixture["events"][0], "id": 9001, "title": "One more"})
    assert load_file(tmp_path, fixture, "changed.json") == 0
    out = capsys.readouterr().out
    assert out.startswith("loaded 8 groups (all unchanged), 8 users (all unchanged), ")
    assert "9 posts (1 updated, 8 unchanged), 12 comments (all unchanged), " in out
    assert "8 events (1 created, 7 unchanged)" in out


def test_a_reload_reads_each_section_of_the_file_once_to_say_what_changed(
    empty_aws, capsys, tmp_path
):
    """`load` told created, updated and unchanged from the stored community read before the load
    and again after it: every section the file holds was scanned twice. Once now, and what it
    says of a reload is the same (the demo again: nothing changed; one post retitled: 1
    updated)."""
    from tests.fixtures import counting_dynamodb

    main(["create-tables"])
    fixture = json.loads(DEMO.read_text())
    assert main(["load", str(DEMO)]) == 0
    capsys.readouterr()
    scanned = {"groups", "users", "posts", "comments", "events", "players"} & set(fixture)
    with counting_dynamodb() as counter:
        assert main(["load", str(DEMO)]) == 0
    assert capsys.readouterr().out.startswith("nothing changed: 8 groups, 8 users, ")
    assert counter.requests.get("Scan") == len(scanned) == 6
    # Changed in the sections whose records keep a stored field the file leaves out (the
    # connectors' and events' first-load time, the player's last change): told as updated.
    fixture["connectors"][0]["description"] = "Another description"
    fixture["players"][0]["experience"] += 10
    fixture["comments"][0]["content"] = "Changed by the reload."
    fixture["events"][0]["title"] = "A new title"
    assert load_file(tmp_path, fixture, "changed.json") == 0
    out = capsys.readouterr().out
    assert "12 comments (1 updated, 11 unchanged)" in out
    assert "7 events (1 updated, 6 unchanged)" in out
    assert "2 connectors (1 updated, 1 unchanged), 1 players (all updated)" in out


def test_bad_fixture_writes_nothing_and_names_json_paths(empty_aws, capsys, tmp_path):
    main(["create-tables"])
    fixture = json.loads(DEMO.read_text())
    broken = copy.deepcopy(fixture)
    broken["groups"][2]["access"] = "secret"
    broken["posts"][1]["authorId"] = "0b6c1c4e-0000-4000-8000-000000000000"
    broken["comments"][0]["postId"] = "not-a-guid"
    broken["users"][3]["memberships"][0]["role"] = "king"
    broken["groups"][0]["colour"] = "red"
    before = table_contents()
    assert load_file(tmp_path, broken, "broken.json") == 2
    err = capsys.readouterr().err
    assert "groups[2].access" in err
    assert "comments[0].postId" in err
    assert "users[3].memberships[0].role" in err
    assert "groups[0].colour" in err
    assert "nothing was written" in err
    assert table_contents() == before


def test_dangling_references_are_reported_before_writing(empty_aws, capsys, tmp_path):
    main(["create-tables"])
    fixture = json.loads(DEMO.read_text())
    fixture["posts"][1]["authorId"] = "0b6c1c4e-0000-4000-8000-000000000000"
    fixture["groups"][1]["parentId"] = None
    assert load_file(tmp_path, fixture, "dangling.json") == 2
    err = capsys.readouterr().err
    assert "posts[1].authorId: no user has id" in err
    assert "exactly one group must have parentId null" in err
    assert all(items == [] for items in table_contents().values())


def test_schema_and_reference_errors_are_reported_in_one_round(empty_aws, capsys, tmp_path):
    main(["create-tables"])
    fixture = json.loads(DEMO.read_text())
    fixture["groups"][2]["access"] = "secret"  # schema
    fixture["posts"][1]["authorId"] = "0b6c1c4e-0000-4000-8000-000000000000"  # reference
    fixture["events"][0]["groupId"] = "0b6c1c4e-0000-4000-8000-000000000001"  # reference
    fixture["users"][0]["alias"] = ""  # schema: posts by this user are not reported dangling
    assert load_file(tmp_path, fixture, "both.json") == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert "groups[2].access" in lines[0] or any(
        line.startswith("groups[2].access") for line in lines
    )
    assert any(line.startswith("users[0].alias") for line in lines)
    assert any(line.startswith("posts[1].authorId: no user has id") for line in lines)
    assert any(line.startswith("events[0].groupId: no group has id") for line in lines)
    assert lines[-1] == "4 error(s); nothing was written", lines
    assert all(items == [] for items in table_contents().values())


def test_file_that_is_not_json_exits_2(empty_aws, capsys, tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{")
    assert main(["load", str(path)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


# --- failures an operator meets first: one line with the fix, no traceback ---------------------


@pytest.fixture
def no_aws_setup(monkeypatch, tmp_path):
    """An environment as on a fresh machine: no credentials, no config files, no metadata."""
    from chalicelib import aws

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    aws.reset()
    yield monkeypatch
    aws.reset()


def test_missing_credentials_is_one_line_naming_the_variables(no_aws_setup, capsys):
    assert main(["create-tables"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "no AWS credentials" in err and "AWS_ACCESS_KEY_ID" in err
    assert "AWS_ENDPOINT_URL" in err


def test_missing_region_is_one_line_naming_the_variable(no_aws_setup, capsys):
    no_aws_setup.setenv("AWS_ACCESS_KEY_ID", "x")
    no_aws_setup.setenv("AWS_SECRET_ACCESS_KEY", "x")
    no_aws_setup.delenv("AWS_DEFAULT_REGION")
    no_aws_setup.delenv("AWS_REGION", raising=False)
    assert main(["create-tables"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "AWS_DEFAULT_REGION" in err


def test_an_export_to_stdout_that_cannot_read_writes_nothing_there(no_aws_setup, capsys):
    """A redirect (`export - > file`) is not left half written: the settings fail before the
    first byte (it wrote `{"groups": [` and then the error)."""
    no_aws_setup.setenv("AWS_ACCESS_KEY_ID", "x")
    no_aws_setup.setenv("AWS_SECRET_ACCESS_KEY", "x")
    no_aws_setup.delenv("AWS_DEFAULT_REGION")
    no_aws_setup.delenv("AWS_REGION", raising=False)
    assert main(["export", "-"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "export: no AWS region: set AWS_DEFAULT_REGION (make run uses us-east-1)\n"


def test_unreachable_endpoint_is_one_line_naming_it(no_aws_setup, capsys):
    from tests.support.running import free_port

    endpoint = f"http://127.0.0.1:{free_port()}"
    no_aws_setup.setenv("AWS_ACCESS_KEY_ID", "x")
    no_aws_setup.setenv("AWS_SECRET_ACCESS_KEY", "x")
    no_aws_setup.setenv("AWS_ENDPOINT_URL", endpoint)
    assert main(["purge-comments"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"cannot reach {endpoint}" in err and "make run" in err


def test_missing_tables_is_one_line_naming_create_tables(empty_aws, capsys):
    assert main(["load", str(DEMO)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "create-tables" in err and "table is missing" in err


# --- progress ----------------------------------------------------------------------------------


class Terminal:
    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def test_poll_mail_prints_its_lines_above_the_spinner(monkeypatch):
    stdout, stderr = Terminal(), Terminal()
    progress = Progress(stderr)
    monkeypatch.setattr("sys.stdout", stdout)
    with progress.running(lambda: "poll-mail: 1 mailbox(es) polled"):
        progress.line("post#g1: seen 2, posted 1")
    assert stdout.text == "post#g1: seen 2, posted 1\n"
    assert "poll-mail: 1 mailbox(es) polled |" in stderr.text
    assert stderr.text.endswith("\r") and "\n" not in stderr.text


def test_purge_shows_progress_on_a_terminal_and_a_command_writes_its_result_and_no_json_log_lines(
    empty_aws, capsys, monkeypatch, tmp_path
):
    """purge-comments shows its progress on a terminal; it logs at INFO: the person running it
    reads the result line only; with AGORA_LOG_FORMAT=json the JSON line is there for a log
    collector. (One loaded demo for the three runs, with its shipped password hashes: a load of
    the plain demo costs eight full-strength hashings.)"""
    from chalicelib.settings import reload_settings

    main(["create-tables"])
    main(["load", str(demo_with_shipped_hashes(tmp_path))])
    capsys.readouterr()
    assert main(["purge-comments"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("purged ") and err == ""

    terminal = Terminal()
    with monkeypatch.context() as on_a_terminal:
        on_a_terminal.setattr("sys.stderr", terminal)
        assert main(["purge-comments"]) == 0
    assert "purge-comments: " in terminal.text and "purged so far" in terminal.text
    assert capsys.readouterr().out.startswith("purged ")

    monkeypatch.setenv("AGORA_LOG_FORMAT", "json")
    reload_settings()
    try:
        assert main(["purge-comments"]) == 0
    finally:
        monkeypatch.delenv("AGORA_LOG_FORMAT")
        reload_settings()
    [line] = [json.loads(x) for x in capsys.readouterr().err.splitlines()]
    assert line["message"] == "purged deleted comments"


def test_unlock_of_an_account_that_is_not_locked_says_so_and_writes_nothing(
    empty_aws, capsys, tmp_path
):
    """CONTRACT §12: a write that changes nothing records nothing; the line says what was done."""
    from chalicelib import deps
    from chalicelib.errors import Unauthorized
    from tests.support.passwords import cheap_hash

    root = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
    gus = {"id": "0b6c1c4e-0000-4000-8000-000000000001", "alias": "Gus", "slug": "gus"}
    fixture = tmp_path / "gus.json"
    fixture.write_text(
        json.dumps(
            {
                "groups": [{"id": root, "name": "Root", "slug": "root"}],
                "users": [gus | {"email": "gus@example.org", "passwordHash": cheap_hash("pw")}],
            }
        )
    )
    main(["create-tables"])
    assert main(["load", str(fixture)]) == 0
    capsys.readouterr()
    before = table_contents()

    assert main(["unlock", "--email", "Gus@example.org"]) == 0
    out, err = capsys.readouterr()
    assert (
        out
        == "Gus@example.org was not locked: no failed sign-in in its current window, nothing changed\n"
    )
    assert err == ""
    assert table_contents() == before  # no audit entry, no outbox record

    with pytest.raises(Unauthorized):
        deps.security_service().login("gus@example.org", "a wrong guess", "192.0.2.7")
    assert main(["unlock", "--email", "gus@example.org"]) == 0
    assert capsys.readouterr().out.startswith(
        "unlocked gus@example.org: its 1 failed sign-in(s) of the current window are forgotten"
    )


# --- a command that lacks a setting refuses to start (CONTRACT §2) -----------------------------


@pytest.fixture
def no_token_secret(empty_aws, monkeypatch):
    from chalicelib.settings import reload_settings

    monkeypatch.delenv("AGORA_TOKEN_SECRET")
    reload_settings()
    yield
    monkeypatch.undo()
    reload_settings()


@pytest.mark.parametrize("command", ["poll-mail", "send-digests"])
def test_mail_job_without_the_token_secret_refuses_with_one_line_naming_it(
    no_token_secret, capsys, command
):
    main(["create-tables"])
    capsys.readouterr()
    assert main([command]) == 1
    out, err = capsys.readouterr()
    assert out == ""  # not one mailbox or digest was looked at
    [line] = err.strip().splitlines()
    assert line.startswith(f"{command}: AGORA_TOKEN_SECRET: ")
    assert "agora-test-token-secret" in line


def test_unset_token_secret_is_read_from_the_stages_secret(no_token_secret, capsys):
    from chalicelib.auth import issue_token, user_id_from_token
    from chalicelib.aws import client

    client("secretsmanager").create_secret(
        Name="agora-test-token-secret", SecretString="stored-by-make-run-" + "s" * 32
    )
    main(["create-tables"])
    capsys.readouterr()
    assert main(["poll-mail"]) == 0
    assert capsys.readouterr().out.strip() == "no enabled mailbox"
    assert user_id_from_token(issue_token("ann")) == "ann"


# --- a newcomer's first hour (issue 29): one line each, never a traceback ----------------------


def run_cli(env: dict[str, str], *arguments: str, stdin: str = "") -> subprocess.CompletedProcess:
    """The CLI in a clean environment: only the variables given, as on a fresh machine."""
    import os

    clean = {
        "PATH": os.environ["PATH"],
        "HOME": env.pop("HOME", "/nonexistent"),
        "PYTHONPATH": str(REPO_ROOT),
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
        "AWS_EC2_METADATA_DISABLED": "true",
        **this_clock(),
        **env,
    }
    return run_module("chalicelib.cli", *arguments, env=clean, stdin=stdin)


@pytest.mark.slow
def test_the_endpoint_and_the_key_pair_are_enough_for_make_runs_embedded_aws():
    """The embedded AWS answers only its key pair (CONTRACT §2): with the endpoint alone the CLI
    is refused, in one line naming the credentials; with the pair it works."""
    from agora_local.embedded_aws import start_moto_server, stop_moto_server

    pair = suite_key_pair()
    server = start_moto_server(pair)
    try:
        host, port = server.get_host_and_port()
        env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AGORA_TABLE_PREFIX": "agora-first-"}
        refused = run_cli(env, "create-tables")
        assert refused.returncode != 0
        assert "AWS refused the credentials" in refused.stderr, refused.stderr

        result = run_cli({**env, **pair.environment()}, "create-tables")
        assert result.returncode == 0, result.stderr
        assert "agora-first-posts" in result.stdout
    finally:
        stop_moto_server(server)


def test_endpoint_elsewhere_without_credentials_does_not_advise_setting_the_endpoint():
    result = run_cli(
        {"AWS_ENDPOINT_URL": "http://dynamodb.example.org:8000", "AWS_DEFAULT_REGION": "eu-west-1"},
        "create-tables",
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "no AWS credentials" in lines[0] and "AWS_ENDPOINT_URL" not in lines[0]


def test_malformed_endpoint_is_one_line_showing_the_fix():
    result = run_cli({"AWS_ENDPOINT_URL": "127.0.0.1:8141"}, "create-tables")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "create-tables: AWS_ENDPOINT_URL must be a URL with its scheme, such as "
        "http://127.0.0.1:8141 (got '127.0.0.1:8141')"
    ], result.stderr


def test_ctrl_d_at_the_password_prompt_is_one_line():
    """A real terminal (a pseudo-terminal): the prompt, then Ctrl-D."""
    import os
    import pty
    import subprocess
    import sys
    import time

    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "chalicelib.cli", "create-admin", "--email", "new@example.org"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        close_fds=True,
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 60
    while b"Password:" not in seen and time.monotonic() < deadline:
        seen += os.read(leader, 1024)
    os.write(leader, b"\x04")
    assert process.wait(timeout=60) == 2
    while True:
        try:
            chunk = os.read(leader, 1024)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    text = seen.decode(errors="replace")
    assert "Traceback" not in text, text
    assert "create-admin: no password given; nothing was changed" in text


def test_empty_stdin_for_create_admin_is_one_line():
    result = run_cli({}, "create-admin", "--email", "new@example.org", stdin="")
    assert result.returncode == 2
    assert result.stderr.strip() == "create-admin: no password given; nothing was changed"
