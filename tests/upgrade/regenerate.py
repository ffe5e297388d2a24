"""Writes the data the upgrade tests start from, with a previous release's own code.

    PYTHONPATH=. .venv/bin/python -m tests.upgrade.regenerate [COMMIT]   # default: PREVIOUS

It checks COMMIT out in a temporary git worktree (sharing this clone's .venv), starts that
release's `make run` (python -m agora_local) on a new data folder, and through its API and
its own store code makes a community such a deployment holds: the demo, changed by hand (a feed
setting, an event, an approved comment), mailboxes enabled and disabled, and mail log entries of
every status. Then it writes, under tests/upgrade/:

- `items-<commit>.json`: every item of every table, as DynamoDB holds it (its wire format), for
  the fast upgrade test, which puts them into the current tables and runs `migrate`;
- `answers-<commit>.json`: what that release's API answered to a set of reads, for comparing;
- `make-run-<commit>/`: the data folder that release's `make run` left when stopped.

Its clock is an input: the release runs under Debian's libfaketime from `BEFORE_ANSWERING` before
`ANSWERED_AT` (tests/upgrade/test_upgrade.py), and its reads must be taken within that time, so
the tests replay the answers at `ANSWERED_AT` and they mean the same on any day (which events are
upcoming and which expired depends on now). Update `ANSWERED_AT` with `PREVIOUS` (a moment no
demo event starts or ends near).

Shapes older than the commit are made from its items as those releases wrote them, so that their
migrations meet real data too (`older_shapes`: mail log entries without the `by-status` key, as
before 37d7cdd; posts without `comments_count`, as before 72806cb; users without people-search
items, as before 1124b01).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.support.running import REPO_ROOT, RunningAgora, free_port, popen_agora
from tests.upgrade.test_upgrade import ANSWERED_AT

BEFORE_ANSWERING = timedelta(seconds=60)

PREVIOUS = "9c0829a"
HERE = Path(__file__).resolve().parent
DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text(encoding="utf-8"))
ROOT = next(g["id"] for g in DEMO["groups"] if g["parentId"] is None)
GARDENING = next(g["id"] for g in DEMO["groups"] if g["name"] == "Gardening Club")
PHOTOGRAPHY = next(g["id"] for g in DEMO["groups"] if g["name"] == "Photography")
STAFF = next(g["id"] for g in DEMO["groups"] if g["name"] == "Staff Room")
UNAPPROVED = 104  # a demo comment waiting for approval, in the Gardening Club
# The statuses the mail log lists (`?status=`), and those stored (two are listed as failed).
LISTED = ["posted", "commented", "ignored", "rejected", "failed"]
STATUSES = ["posted", "commented", "ignored", "rejected", "failed", "processing", "quarantined"]
# The table prefix of `make run` (as a user runs it); the site's address in every answer.
PREFIX = "agora-dev-"
BASE_URL = "http://localhost:8000"
# The users whose people-search items are removed, as a release before the search left them.
UNSEARCHABLE = ("sam@agora.example", "rita@agora.example")

MAILBOX = {
    "serverName": "127.0.0.1",
    "serverPort": 1110,
    "serverUsername": "club",
    "serverPassword": "club-secret",
    "isSSL": False,
    "deleteProcessed": False,
}


def reads() -> list[str]:
    """The reads whose answers must stay what the previous release answered."""
    v1 = "/api/v1/en_US"
    paths = [
        f"{v1}/system-page/home-page",
        f"{v1}/connector/email-to-comment/{ROOT}",
        f"{v1}/connector/email-to-comment/log?pageSize=100",
        *(f"{v1}/connector/email-to-comment/log?pageSize=100&status={s}" for s in LISTED),
        f"{v1}/user/search?q=an",
        f"{v1}/user/search?q=sam",
    ]
    for group in DEMO["groups"]:
        g = group["id"]
        paths += [
            f"{v1}/post/list/{g}?pageSize=100",
            f"{v1}/event/list/upcoming/{g}?pageSize=100",
            f"{v1}/event/list/expired/{g}?pageSize=100",
            f"{v1}/comment/post/list/{g}/unapproved?pageSize=100",
            f"{v1}/comment/post/list/{g}/deleted?pageSize=100",
            f"{v1}/feed/settings/{g}",
            f"{v1}/connector/email-to-post/{g}",
            f"{v1}/connector/email-to-post/{g}/log?pageSize=100",
            *(f"{v1}/connector/email-to-post/{g}/log?pageSize=100&status={s}" for s in LISTED),
            f"{v1}/connector/local/list/group/{g}",
        ]
    for post in DEMO["posts"]:
        paths += [f"{v1}/post/{post['id']}", f"{v1}/post/{post['id']}/comments?pageSize=100"]
    return paths


def start_old(worktree: Path, data_dir: Path) -> RunningAgora:
    import re

    port, aws_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGORA_", "AWS_"))}
    env |= {
        "AGORA_PORT": str(port),
        "AGORA_AWS_PORT": str(aws_port),
        "AGORA_DATA_DIR": str(data_dir),
        "AGORA_BASE_URL": BASE_URL,
        "PYTHONPATH": str(worktree),
        "PYTHONUNBUFFERED": "1",
    }
    libfaketime = sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))
    if not libfaketime:
        raise SystemExit("regenerate needs Debian's faketime (apt-get install faketime)")
    # libfaketime itself, not the faketime command: the SIGTERM that stops it reaches the server.
    env["LD_PRELOAD"] = str(libfaketime[0])
    env["FAKETIME"] = (ANSWERED_AT - BEFORE_ANSWERING).strftime("@%Y-%m-%d %H:%M:%S")
    env["TZ"] = "UTC"  # libfaketime reads the start moment in the local zone
    # make run's server, wherever that release kept it (chalicelib.local before 450b5f1).
    module = "agora_local" if (worktree / "agora_local").is_dir() else "chalicelib.local"
    command = [sys.executable, "-m", module]
    process = popen_agora(command, worktree, env)
    running = RunningAgora(process=process, base=f"http://127.0.0.1:{port}")
    assert process.stdout is not None
    for line in process.stdout:
        running.output.append(line)
        if match := re.match(r"root administrator: (\S+) / (\S+)", line):
            running.admin_email, running.admin_password = match.groups()
        if match := re.match(r"((?:AWS|AGORA)_[A-Z_]+)=(\S+)$", line.strip()):
            running.printed[match.group(1)] = match.group(2)
        if line.startswith("Ctrl-C stops everything."):
            return running
    raise RuntimeError("the old make run did not start:\n" + "".join(running.output))


def change_by_hand(agora: RunningAgora, token: str) -> None:
    auth = {"X-Auth": token}

    def ok(method: str, path: str, body: Any = None) -> dict[str, Any]:
        status, answer = agora.request(method, "/api/v1/en_US" + path, body, headers=auth)
        assert status == 200, (path, answer)
        return answer

    feed = ok("GET", f"/feed/settings/{GARDENING}")["object"]
    ok("PUT", f"/feed/settings/{GARDENING}", {**feed, "ttl": feed["ttl"] + 17})
    event = {
        "groupId": GARDENING,
        "title": f"Made by {PREVIOUS}",
        "startDate": "2099-05-01T10:00:00Z",
        "endDate": "2099-05-01T12:00:00Z",
    }
    ok("POST", "/event", event)
    ok("POST", f"/comment/post/{UNAPPROVED}/approve")
    ok("PUT", f"/connector/email-to-post/{GARDENING}", {**MAILBOX, "isEnabled": True})
    ok("PUT", f"/connector/email-to-post/{PHOTOGRAPHY}", {**MAILBOX, "isEnabled": True})
    ok("PUT", f"/connector/email-to-post/{STAFF}", {**MAILBOX, "isEnabled": False})
    ok("PUT", "/connector/email-to-comment", {**MAILBOX, "isEnabled": True})


# Run by the old release's interpreter path (its chalicelib first on sys.path): its own store
# code writes the mail log entries, as its mail-in does.
OLD_WRITER = """
import sys
from datetime import UTC, datetime, timedelta
from chalicelib.store.mail import MailRepository

statuses, mailboxes = sys.argv[1].split(","), sys.argv[2].split(",")
mail = MailRepository()
start = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
for m, mailbox in enumerate(mailboxes):
    records = []
    for index in range(3 * len(statuses)):
        status = statuses[index % len(statuses)]
        records.append(mail.new_entry(
            mailbox, f"{m}-{index:03d}-{status}", start + timedelta(minutes=7 * index + m),
            message_id=f"<{m}.{index}@old.example>", sender="sam@agora.example",
            subject=f"Old mail {index}", status=status, reason="written by the old release",
            attempts=1))
    mail.write_all(records)
print("written")
"""


def write_old_mail(worktree: Path, agora: RunningAgora) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGORA_", "AWS_"))}
    env |= {**agora.printed, "PYTHONPATH": str(worktree)}
    mailboxes = ",".join([f"post#{GARDENING}", f"post#{PHOTOGRAPHY}", "comment#system"])
    subprocess.run(
        [sys.executable, "-c", OLD_WRITER, ",".join(STATUSES), mailboxes],
        cwd=worktree,
        env=env,
        check=True,
    )


def older_shapes(dynamodb: Any) -> None:
    """Half the mail log entries as written before the status index; half the posts as stored
    before their comment count; two users as stored before the people search."""
    table = PREFIX + "mail"
    for number, item in enumerate(_scan(dynamodb, table)):
        if item["sk"]["S"].startswith("entry#") and number % 2 == 0:
            key = {"mailbox": item["mailbox"], "sk": item["sk"]}
            dynamodb.update_item(TableName=table, Key=key, UpdateExpression="REMOVE status_mailbox")
    for number, item in enumerate(_scan(dynamodb, PREFIX + "posts")):
        if number % 2 == 0:
            dynamodb.update_item(
                TableName=PREFIX + "posts",
                Key={"id": item["id"]},
                UpdateExpression="REMOVE comments_count",
            )
    users = {
        item["id"]["S"]
        for item in _scan(dynamodb, PREFIX + "users")
        if item["email"]["S"] in UNSEARCHABLE
    }
    for item in _scan(dynamodb, PREFIX + "user-search"):
        if item["id"]["S"] in users:
            key = {"bucket": item["bucket"], "position": item["position"]}
            dynamodb.delete_item(TableName=PREFIX + "user-search", Key=key)


def _scan(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    items = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=table):
        items += page["Items"]
    return items


def as_json(value: Any) -> Any:
    """DynamoDB's wire format as JSON: binary values base64 (`tests.upgrade.items` reverses it)."""
    import base64

    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    return value


def dump_items(dynamodb: Any) -> dict[str, list[dict[str, Any]]]:
    """Every item of every table but the outbox (a stream of what happened, drained), by table
    stem, in key order."""
    tables = []
    for page in dynamodb.get_paginator("list_tables").paginate():
        tables += [t for t in page["TableNames"] if t.startswith(PREFIX)]
    dump = {}
    for table in sorted(tables):
        stem = table.removeprefix(PREFIX)
        if stem == "outbox":
            continue
        items = [as_json(item) for item in _scan(dynamodb, table)]
        dump[stem] = sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    return dump


def main(argv: list[str]) -> int:
    import boto3

    commit = argv[0] if argv else PREVIOUS
    work = Path(tempfile.mkdtemp(prefix="agora-upgrade-"))
    worktree = work / commit
    subprocess.run(
        ["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", str(worktree), commit],
        check=True,
    )
    agora = None
    try:
        (worktree / ".venv").symlink_to(REPO_ROOT / ".venv")
        data_dir = work / "data"
        started = time.monotonic()
        agora = start_old(worktree, data_dir)
        token = agora.login()
        change_by_hand(agora, token)
        write_old_mail(worktree, agora)
        printed = agora.printed
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=printed["AWS_ENDPOINT_URL"],
            region_name=printed["AWS_DEFAULT_REGION"],
            aws_access_key_id=printed["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=printed["AWS_SECRET_ACCESS_KEY"],
        )
        # What this release answers on its own data, before older shapes are made of it.
        answers = {}
        for path in reads():
            status, body = agora.request("GET", path, headers={"X-Auth": token})
            answers[path] = {"status": status, "object": body.get("object")}
        if time.monotonic() - started > BEFORE_ANSWERING.total_seconds():
            raise SystemExit(f"the reads were not taken before {ANSWERED_AT}: run it again")
        older_shapes(dynamodb)
        items = dump_items(dynamodb)
        time.sleep(1)
        agora.process.send_signal(signal.SIGTERM)
        agora.process.communicate(timeout=60)
        _write(HERE / f"items-{commit}.json", items)
        _write(HERE / f"answers-{commit}.json", answers)
        folder = HERE / f"make-run-{commit}"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(data_dir, folder)
        print(f"wrote items-{commit}.json, answers-{commit}.json and make-run-{commit}/")
    finally:
        if agora is not None and agora.process.poll() is None:
            os.killpg(agora.process.pid, signal.SIGKILL)
        subprocess.run(
            ["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(worktree)],
            check=False,
        )
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
