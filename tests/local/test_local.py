"""`make run` end to end over real HTTP: sign in with the printed credentials, read the home page."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support import REPO_ROOT
from tests.support.running import free_port, run_module, start_agora, this_clock

CORS_ORIGIN = "https://app.example.org"
# An operator's real AWS credentials in the shell that starts make run (AWS's documented examples).
REAL_LOOKING = {
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEXAMPLESESSIONTOKEN",
}


@pytest.fixture(scope="module")
def running():
    agora = start_agora({"AGORA_CORS_ORIGINS": CORS_ORIGIN, **REAL_LOOKING})
    yield agora
    agora.stop()


@pytest.mark.slow
def test_make_run_prints_credentials_and_serves_the_home_page(running):
    assert running.admin_email and running.admin_password
    assert running.aws_endpoint.startswith("http://127.0.0.1:")
    token = running.login()
    status, body = running.request(
        "GET", "/api/v1/en_US/system-page/home-page", headers={"X-Auth": token}
    )
    assert status == 200 and body["success"] is True
    assert body["object"]["type"] == "HomePage"


@pytest.mark.slow
def test_make_run_prints_a_key_pair_of_its_own_never_the_environments(running):
    """CONTRACT §2: whatever AWS key the environment holds, make run neither uses nor prints it;
    its own pair is kept in the data folder, readable by its owner only."""
    output = "".join(running.output)
    assert [value for value in REAL_LOOKING.values() if value in output] == []
    kept = Path(running.temporary_data_dir) / "aws-key-pair.json"
    assert kept.stat().st_mode & 0o777 == 0o600
    stored = json.loads(kept.read_text())
    assert running.printed["AWS_ACCESS_KEY_ID"] == stored["accessKeyId"]
    assert running.printed["AWS_SECRET_ACCESS_KEY"] == stored["secretAccessKey"]
    assert "AWS_SESSION_TOKEN" not in running.printed


@pytest.mark.slow
def test_unknown_path_is_a_404_envelope(running):
    status, body = running.request("GET", "/api/v1/en_US/no-such-thing")
    assert status == 404
    assert body["success"] is False and body["errors"] == [] and "timestamp" in body


@pytest.mark.slow
def test_demo_community_is_loaded(running):
    token = running.token()
    status, body = running.request(
        "GET",
        "/api/v1/en_US/post/list/af1d7e43-6a8b-5b30-8b7a-6d1b8e6b2c11",
        headers={"X-Auth": token},
    )
    assert status == 404  # an id that is not in the demo
    import json

    from tests.support import REPO_ROOT

    demo = json.loads((REPO_ROOT / "demo" / "community.json").read_text())
    home = next(g["id"] for g in demo["groups"] if g["parentId"] is None)
    status, body = running.request(
        "GET", f"/api/v1/en_US/post/list/{home}", headers={"X-Auth": token}
    )
    assert status == 200 and [p["slug"] for p in body["object"]["posts"]] == [
        "house-rules",
        "welcome",
    ]


def _run_with_busy(variable: str) -> subprocess.CompletedProcess:
    """`make run` while something listens on the port named by `variable`."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"}
        env.update(
            {
                "AGORA_PORT": str(free_port()),
                "AGORA_AWS_PORT": str(free_port()),
                variable: str(busy),
                "PYTHONPATH": str(REPO_ROOT),
            }
        )
        result = run_module("agora_local", env=env, timeout=60)
    result.busy = busy  # type: ignore[attr-defined]
    return result


@pytest.mark.slow
@pytest.mark.parametrize("variable", ["AGORA_AWS_PORT", "AGORA_PORT"])
def test_busy_port_is_refused_with_one_line_naming_it(variable):
    result = _run_with_busy(variable)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"port {result.busy} ({variable})" in lines[0]  # type: ignore[attr-defined]
    assert "Traceback" not in result.stderr and "demo data" not in result.stdout


@pytest.mark.slow
def test_concurrent_administrators_lose_nothing_and_never_see_a_server_error(running):
    """`make load` in small: 4 administrators share 200 operations, then every acknowledged write
    is checked (counts only; `make load` reports the times)."""
    from bench.admin_load import (
        KINDS,
        aws_environment,
        create_administrators,
        demo_group_id,
        run_load,
        sign_in,
    )

    group_id = demo_group_id()
    emails = create_administrators(4, group_id, aws_environment(running.output))
    tokens = [sign_in(running.base, email) for email in emails]
    report = run_load(running.base, tokens, group_id, operations=200)

    assert report.done == 200
    assert {kind: set(report.statuses[kind]) for kind in KINDS} == {kind: {200} for kind in KINDS}
    assert report.server_errors == 0 and report.lost == []
    assert len(report.events) == report.statuses["create"][200] > 0
    assert len(report.settings) == report.statuses["settings"][200] > 0
    assert set(report.statuses["check"]) == {200}


@pytest.mark.slow
def test_docs_page_and_its_files_are_served_by_make_run(running):
    import re
    import urllib.request

    from swagger_ui_bundle import swagger_ui_path

    with urllib.request.urlopen(running.base + "/api/v1/en_US/docs", timeout=30) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/html")
        page = response.read().decode()
    sources = [s.split("?")[0] for s in re.findall(r'(?:src|href)="([^"]+)"', page)]
    assert sorted(sources) == ["docs/swagger-ui-bundle.js", "docs/swagger-ui.css"]
    for source in sources:
        with urllib.request.urlopen(f"{running.base}/api/v1/en_US/{source}", timeout=30) as asset:
            assert asset.status == 200
            # The installed package's file, byte for byte: nothing comes from a CDN.
            assert asset.read() == (swagger_ui_path / source.split("/")[-1]).read_bytes()
    status, document = running.request("GET", "/api/v1/en_US/openapi.json")
    assert status == 200 and document["servers"] == [{"url": "/"}]


@pytest.mark.slow
def test_make_run_answers_cors_preflight_for_an_allowed_origin_only(running):
    import urllib.request

    def preflight(origin: str) -> dict[str, str]:
        request = urllib.request.Request(
            running.base + "/api/v1/en_US/system-page/home-page",
            method="OPTIONS",
            headers={"Origin": origin, "Access-Control-Request-Method": "PUT"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 204
            return {k.lower(): v for k, v in response.headers.items()}

    allowed = preflight(CORS_ORIGIN)
    assert allowed["access-control-allow-origin"] == CORS_ORIGIN
    assert "PUT" in allowed["access-control-allow-methods"]
    assert not any(k.startswith("access-control-") for k in preflight("https://other.example"))


def test_permalinks_follow_agora_port_when_agora_base_url_is_unset(monkeypatch, tmp_path):
    """make run's setup: AGORA_BASE_URL unset follows AGORA_PORT (a post's url opens on the
    server); set, it is kept."""
    from agora_local.run import prepare_persistence
    from chalicelib.settings import reload_settings

    monkeypatch.delenv("AGORA_BASE_URL", raising=False)
    monkeypatch.delenv("AGORA_TOKEN_SECRET", raising=False)
    monkeypatch.setenv("AGORA_PORT", "8765")
    monkeypatch.setenv("AGORA_DATA_DIR", str(tmp_path))
    try:
        prepare_persistence(reset=False)
        assert reload_settings().public_base_url == "http://localhost:8765"
        monkeypatch.setenv("AGORA_BASE_URL", "https://community.example.org")
        prepare_persistence(reset=False)
        assert reload_settings().public_base_url == "https://community.example.org"
    finally:
        monkeypatch.undo()
        reload_settings()


@pytest.mark.slow
def test_the_demo_has_events_in_its_calendar_and_feed_and_a_home_page(running):
    import urllib.request

    token = running.token()
    status, body = running.request(
        "GET", "/api/v1/en_US/system-page/home-page", headers={"X-Auth": token}
    )
    assert status == 200 and "Welcome" in body["object"]["content"]
    garden = "076e75e0-7661-51c5-9ccc-8a2b790e771e"
    # The demo's dates are relative to the day it was loaded: its club's three events fall
    # within two months before and a year after it.
    today = datetime.now(UTC).replace(microsecond=0)
    start, end = (
        (today + timedelta(days=days)).isoformat().replace("+00:00", "Z") for days in (-60, 365)
    )
    status, body = running.request(
        "GET",
        f"/api/v1/en_US/event/list/calendar/{garden}"
        f"?calendarStartDate={start}&calendarEndDate={end}",
        headers={"X-Auth": token},
    )
    assert status == 200, body
    # The module's make run is shared: the load test beside this one adds events of its own.
    demo = json.loads((REPO_ROOT / "demo" / "community.json").read_text(encoding="utf-8"))
    ours = {e["id"] for e in demo["events"] if e["groupId"] == garden}
    listed = {e["id"] for e in body["object"]["events"]}
    assert len(ours) == 3 and ours <= listed, body
    request = urllib.request.Request(
        f"{running.base}/api/v1/en_US/feed/{garden}/events.ics", headers={"X-Auth": token}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.read().decode().count("BEGIN:VEVENT") >= 1


@pytest.mark.slow
def test_a_guessers_address_does_not_lock_the_owner_out_from_another(running):
    """Issue 24: 36 wrong guesses from 127.0.0.2 (the server sees that peer address, as API
    Gateway sees a `sourceIp`); the owner signs in from 127.0.0.3 all the same."""
    from tests.support.throttle_windows import MAKE_RUN_SECONDS, in_one_throttle_window

    login = "/api/v1/en_US/security/login"

    def sign_in(password: str, source: str) -> tuple[int, dict]:
        body = {"email": running.admin_email, "password": password}
        return running.request("POST", login, body, source=source)

    def guesses_then_the_owner() -> tuple[list[int], tuple[int, dict], int]:
        guesses = [sign_in(f"guess {n}", "127.0.0.2")[0] for n in range(36)]
        owner = sign_in(running.admin_password, "127.0.0.3")
        return guesses, owner, sign_in(running.admin_password, "127.0.0.2")[0]

    guesses, (status, body), guessers_right_password = in_one_throttle_window(
        guesses_then_the_owner, needs=MAKE_RUN_SECONDS
    )
    assert guesses[:5] == [401] * 5 and set(guesses[5:]) == {429}
    assert status == 200, body
    # The guesser's address stays stopped, even with the right password.
    assert guessers_right_password == 429


@pytest.mark.slow
def test_secrets_and_signed_in_answers_are_no_store_and_the_docs_page_is_never_framed(running):
    """Issue 24's three header checks, over real HTTP against `make run`."""
    import json

    from tests.support import REPO_ROOT

    token = running.token()
    demo = json.loads((REPO_ROOT / "demo" / "community.json").read_text())
    home = next(g["id"] for g in demo["groups"] if g["parentId"] is None)
    ann = next(u["id"] for u in demo["users"] if u["email"] == running.admin_email)
    signed_in = {"X-Auth": token}
    for path in (
        f"/api/v1/en_US/connector/email-to-post/{home}",  # a mailbox password
        f"/api/v1/en_US/user/{ann}/feed-key",  # a feed key
        "/api/v1/en_US/system-page/home-page",  # any signed-in answer
    ):
        status, headers, _ = running.raw("GET", path, headers=signed_in)
        assert status == 200, path
        assert headers["Cache-Control"] == "no-store", path
    status, headers, _ = running.raw(
        "POST",
        "/api/v1/en_US/security/login",
        {"email": running.admin_email, "password": running.admin_password},
    )
    assert status == 200 and headers["Cache-Control"] == "no-store"  # the answer is a token

    status, headers, _ = running.raw("GET", "/api/v1/en_US/docs")
    assert status == 200
    policy = headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self' 'sha256-" in policy
    assert headers["X-Frame-Options"] == "DENY"

    # The console (and the settings preview framed in it) loads no remote image.
    status, headers, _ = running.raw("GET", "/console/")
    assert status == 200
    [images] = [p for p in headers["Content-Security-Policy"].split(";") if "img-src" in p]
    assert images.split() == ["img-src", "'self'", "data:"]
    status, _, script = running.raw("GET", "/console/settings.js")
    assert b"img-src data:" in script and b"PREVIEW_POLICY +" in script


def _cli(running, *command: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The CLI pointed at this `make run` (the variables it printed)."""
    env = {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"}
    env.update(running.printed, PYTHONPATH=str(REPO_ROOT))
    return run_module("chalicelib.cli", *command, env=env, stdin=stdin)


@pytest.mark.slow
def test_create_admin_with_only_make_runs_variables_makes_a_root_administrator(running):
    """`cli create-admin` given the variables `make run` printed: the new administrator signs in
    over HTTP with the password typed at the prompt, and may do what only a root administrator
    may (read the system-wide email-to-comment log)."""
    email, password = "cli-made-admin@example.org", "a password typed at the prompt"
    made = _cli(running, "create-admin", "--email", email, stdin=password + "\n")
    assert made.returncode == 0, made.stderr
    status, body = running.request(
        "POST", "/api/v1/en_US/security/login", {"email": email, "password": password}
    )
    assert status == 200, body
    signed_in = {"X-Auth": body["object"]}
    status, body = running.request(
        "GET", "/api/v1/en_US/connector/email-to-comment/log", headers=signed_in
    )
    assert status == 200 and body["success"] is True, body


@pytest.mark.slow
def test_a_crowd_of_guessers_does_not_lock_the_owner_out_and_unlock_lifts_the_throttle(
    running, tmp_path
):
    """Issue 36: 12 addresses x 5 wrong guesses fill the account's ceiling; the owner still signs
    in from an address they used before, a new address gets 429 with Retry-After, and `cli
    unlock` lifts it. Each call comes from its own loopback address, as API Gateway's sourceIp.
    The owner's account is loaded as an export carries it, its password hash made at argon2's
    lowest cost: the 52 password checks cost milliseconds instead of 15 s of CPU, and the
    throttle counts the same (tests/support/passwords.py)."""
    import json
    import re
    import uuid

    from tests.support.passwords import cheap_hash
    from tests.support.throttle_windows import MAKE_RUN_SECONDS, in_one_throttle_window

    email, password = "crowd-owner@example.org", "a long owner password"
    owner = {"id": str(uuid.uuid4()), "alias": "Crowd Owner", "email": email, "slug": "crowd-owner"}
    fixture = tmp_path / "crowd-owner.json"
    fixture.write_text(json.dumps({"users": [owner | {"passwordHash": cheap_hash(password)}]}))
    made = _cli(running, "load", str(fixture))
    assert made.returncode == 0, made.stderr
    login = "/api/v1/en_US/security/login"

    def attempt(secret: str, source: str) -> tuple[int, dict[str, str], dict]:
        status, headers, payload = running.raw(
            "POST", login, {"email": email, "password": secret}, source=source
        )
        return status, headers, json.loads(payload)

    assert attempt(password, "127.0.0.40")[0] == 200  # the owner's usual address

    def crowd_then_a_new_address() -> tuple[list[int], int, dict[str, str], dict]:
        guesses = [attempt(f"guess {n}", f"127.0.1.{n // 5 + 1}")[0] for n in range(60)]
        return guesses, *attempt(password, "127.0.0.41")

    guesses, status, headers, body = in_one_throttle_window(
        crowd_then_a_new_address, needs=MAKE_RUN_SECONDS
    )
    assert guesses[:49] == [401] * 49 and set(guesses[50:]) == {429}
    assert status == 429 and body["success"] is False  # the account's ceiling holds
    wait = int(headers["Retry-After"])
    assert 0 < wait <= 15 * 60
    said = re.search(r"try again in (\d+) (minute|second)s?\.$", body["message"])
    assert said, body["message"]
    amount = int(said.group(1))
    assert amount == (wait if said.group(2) == "second" else -(-wait // 60))
    assert attempt(password, "127.0.0.40")[0] == 200  # the owner is not locked out

    unlocked = _cli(running, "unlock", "--email", email.upper())
    assert unlocked.returncode == 0, unlocked.stderr
    assert "unlocked" in unlocked.stdout
    assert attempt(password, "127.0.0.41")[0] == 200
    unknown = _cli(running, "unlock", "--email", "nobody@example.org")
    assert unknown.returncode != 0 and "no account" in unknown.stderr


def shell_blocks(text: str, start: str, end: str | None = None) -> list[str]:
    """The ```sh blocks of `text`: between the tour markers, or (no `end`) the first after the
    heading `start`."""
    if end is None:
        section = text.split(start, 1)[1].split("\n## ", 1)[0]
        return [section.split("```sh\n", 1)[1].split("\n```", 1)[0]]
    parts = [chunk.split(end, 1)[0] for chunk in text.split(start)[1:]]
    return [part.split("```sh\n", 1)[1].split("\n```", 1)[0] for part in parts]


@pytest.mark.slow
def test_the_readme_tour_and_the_manuals_mail_walk_run_against_make_run(running, tmp_path):
    """The front page's tour as a newcomer pastes it (its port made make run's), then the mail
    walk of docs/mail.md: a mail delivered becomes a post, the member who follows the group is
    sent its notification, and his reply by email becomes a comment on it."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    tour = shell_blocks(readme, "<!-- tour:start -->", "<!-- tour:end -->")
    assert len(tour) == 2
    walk = shell_blocks(
        (REPO_ROOT / "docs" / "mail.md").read_text(encoding="utf-8"),
        "## Try it: a post by mail, a notification, a reply",
    )
    site = running.base.replace("127.0.0.1", "localhost")
    script = "\n".join([*tour, *walk]).replace("http://localhost:8000", site)
    (tmp_path / ".venv").symlink_to(REPO_ROOT / ".venv")
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    env.update(this_clock())
    # What a newcomer's shell holds once they pasted make run's lines (and, as make run's data
    # is not in the clone's .agora-run here, where it is).
    env.update(running.printed, PYTHONPATH=str(REPO_ROOT))
    env["AGORA_DATA_DIR"] = running.temporary_data_dir
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    shown = done.stdout
    assert "Gardening Club" in shown and "Compost tips for beginners" in shown
    assert "Tomatoes ripening early this year" in shown
    assert "to Gus Gardener <gus@agora.example>" in shown
    assert "[Gardening Club] Tomatoes ripening early this year" in shown
    assert "why: All new group posts in Gardening Club" in shown
    # The comment as text: the walk's last line printed its stored HTML.
    assert "Gus Gardener: Mine too! The fleece goes on tonight.\n" in shown
    assert "<p>" not in shown
    # Mail by push, through make run's SMTP door: its post, logged via push.
    assert "posted via push Seed swap on Saturday" in shown
    # Run where a newcomer runs it (the clone), it leaves the clone as it was.
    assert [path.name for path in tmp_path.iterdir()] == [".venv"]


@pytest.mark.slow
def test_the_audit_log_over_http_names_who_changed_what_from_what_to_what(running):
    """CONTRACT §12 against `make run`: a settings change is one entry with the password only
    said to change; an event's create, update and delete are three, newest first; a refused
    write and a write that changes nothing add none; `create-admin` is the CLI's; paging and
    the action filter work."""
    admin = {"X-Auth": running.token()}
    group = "44dd1629-602f-5579-88ae-f6a12ed221b1"  # Photography, in the demo
    log = f"/api/v1/en_US/audit/{group}"
    mailbox = f"/api/v1/en_US/connector/email-to-post/{group}"
    settings = {
        "serverName": "pop.example.org",
        "serverPort": 995,
        "serverUsername": "photos",
        "serverPassword": "the first password",
        "isEnabled": False,
        "isSSL": True,
        "deleteProcessed": False,
    }

    def entries(path: str = log) -> list[dict]:
        status, body = running.request("GET", path, headers=admin)
        assert status == 200, body
        return body["object"]["entries"]

    assert running.request("PUT", mailbox, settings, admin)[0] == 200
    changed = {**settings, "serverName": "mail.example.org", "serverPassword": "the second one"}
    assert running.request("PUT", mailbox, changed, admin)[0] == 200
    seen = len(entries())
    unchanged = {k: v for k, v in changed.items() if k != "serverPassword"}
    assert running.request("PUT", mailbox, unchanged, admin)[0] == 200
    assert running.request("PUT", mailbox, {**changed, "serverPort": 0}, admin)[0] == 400
    newest = entries()[0]
    assert len(entries()) == seen
    assert newest["action"] == "emailToPost.update" and newest["via"] == "api"
    assert newest["actor"]["alias"] and newest["requestId"]
    assert newest["changes"] == [
        {"field": "serverName", "before": "pop.example.org", "after": "mail.example.org"},
        {"field": "serverPassword", "before": "(set)", "after": "(changed)"},
    ]

    event = {
        "groupId": group,
        "title": "Night walk",
        "startDate": "2027-01-10T20:00:00Z",
        "endDate": "2027-01-10T22:00:00Z",
        "allDay": False,
    }
    status, body = running.request("POST", "/api/v1/en_US/event", event, admin)
    assert status == 200, body
    path = f"/api/v1/en_US/event/{body['object']['id']}"
    assert running.request("PUT", path, {**event, "title": "Night photo walk"}, admin)[0] == 200
    assert running.request("DELETE", path, None, admin)[0] == 200
    events = entries(f"{log}?action=event")
    assert [e["action"] for e in events[:3]] == ["event.delete", "event.update", "event.create"]
    status, body = running.request("GET", f"{log}?pageSize=2", headers=admin)
    assert [e["id"] for e in body["object"]["entries"]] == [e["id"] for e in events[:2]]
    following = entries(f"{log}?pageSize=1&offset={body['object']['offset']}")
    assert following[0]["id"] == events[2]["id"]

    email = "audited-admin@example.org"
    made = _cli(running, "create-admin", "--email", email, stdin="a long enough password\n")
    assert made.returncode == 0, made.stderr
    [created] = [
        e
        for e in entries("/api/v1/en_US/audit?action=admin.create")
        if {"field": "email", "before": None, "after": email} in e["changes"]
    ]
    assert created["actor"] == {"type": "system", "name": "create-admin"}
    assert created["via"] == "cli" and created["requestId"] is None
    assert {"field": "password", "before": None, "after": "(set)"} in created["changes"]
    assert running.request("GET", "/api/v1/en_US/audit")[0] == 401
