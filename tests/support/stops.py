"""`make run` stopped every way a person stops it, and what it kept: the stop tests
(tests/local/test_make_run_stops.py) and the trials (python -m bench.stop_trials) share these.

Each start is the real `make run` (make's `run` target, which execs Python) in its own process
group, as a terminal's foreground job is; a stop signals that group (Ctrl-C, a closed terminal)
or a process of it. Writes are event creations in the demo's Gardening Club, acknowledged (200);
mails are delivered into its local mailbox as `cli deliver` does and left unpolled.
"""

from __future__ import annotations

import email
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import REPO_ROOT
from tests.support.running import RunningAgora, free_port, start_agora

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text(encoding="utf-8"))
GARDENING = next(g["id"] for g in DEMO["groups"] if g["name"] == "Gardening Club")
ROOT = next(g["id"] for g in DEMO["groups"] if g["parentId"] is None)
API = "/api/v1/en_US"
MAKE_RUN = ["make", "--no-print-directory", "-o", ".venv/.installed", "run"]


def make_run(data_dir: Path, stderr_too: bool = False, reset: bool = False) -> RunningAgora:
    """`make run` on `data_dir`, its own ports, as a user starts it (the install step marked
    done); `stderr_too`: its stderr in its stdout's pipe (`make run 2>&1 | tee log`); `reset`:
    `make run RESET=1`."""
    return start_agora(
        {"AGORA_DATA_DIR": str(data_dir)},
        command=[*MAKE_RUN, "RESET=1"] if reset else MAKE_RUN,
        stderr_too=stderr_too,
    )


def python_pid(agora: RunningAgora) -> int:
    """Agora's own process: make's child (its recipe execs Python)."""
    children = Path(f"/proc/{agora.process.pid}/task/{agora.process.pid}/children").read_text()
    return int(children.split()[0])


def wait_for_the_end(agora: RunningAgora, timeout: float = 90) -> str:
    """What it printed until it ended ("" when its output was closed): make and Python gone."""
    group = agora.process.pid
    try:
        if agora.process.stdout is None or agora.process.stdout.closed:
            agora.process.wait(timeout=timeout)
            rest = ""
        else:
            rest, _ = agora.process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(group, signal.SIGKILL)
        agora.process.wait()
        raise AssertionError(f"make run did not stop within {timeout} s") from None
    # The pipe closes when Python, the last holder, ends; a closed one is waited for here.
    deadline = time.monotonic() + timeout
    while _group_alive(group) and time.monotonic() < deadline:
        time.sleep(0.05)
    return rest or ""


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def signal_group(agora: RunningAgora, signals: list[signal.Signals], gap: float = 0.005) -> None:
    """Each signal to make run's process group (a terminal's Ctrl-C or hang-up), `gap` apart."""
    for number in signals:
        try:
            os.killpg(agora.process.pid, number)
        except ProcessLookupError:
            return
        time.sleep(gap)


@contextmanager
def stopped_after(
    agora: RunningAgora, by: signal.Signals = signal.SIGINT
) -> Iterator[RunningAgora]:
    """`agora` for the block; however the block ends, `by` to its process group, then its end."""
    try:
        yield agora
    finally:
        signal_group(agora, [by])
        wait_for_the_end(agora)


def add_event(agora: RunningAgora, token: str, title: str) -> str:
    """An event created in Gardening Club, acknowledged: its id."""
    status, body = agora.request(
        "POST",
        f"{API}/event",
        {"groupId": GARDENING, "title": title, "startDate": "2099-05-01T10:00:00Z"}
        | {"endDate": "2099-05-01T12:00:00Z"},
        headers={"X-Auth": token},
    )
    assert status == 200, body
    return str(body["object"]["id"])


def events_kept(agora: RunningAgora, token: str, made: dict[str, str]) -> set[str]:
    """Of the events `made` (id: title), those there with their title."""
    kept = set()
    for event_id, title in made.items():
        status, body = agora.request("GET", f"{API}/event/{event_id}", headers={"X-Auth": token})
        if status == 200 and body["object"]["title"] == title:
            kept.add(event_id)
    return kept


def post_titles(agora: RunningAgora, token: str) -> set[str]:
    status, body = agora.request(
        "GET", f"{API}/post/list/{GARDENING}?pageSize=100", headers={"X-Auth": token}
    )
    assert status == 200, body
    return {p["title"] for p in body["object"]["posts"]}


def deliver(data_dir: Path, *subjects: str) -> None:
    """A mail a subject, in their order, into Gardening Club's local mailbox, as `cli deliver`
    puts it there."""
    from chalicelib import cli_mail

    for subject in subjects:
        with tempfile.NamedTemporaryFile("wb", suffix=".eml", delete=False) as mail:
            mail.write(
                f"From: Sam Member <sam@agora.example>\nTo: gardening@agora.example\n"
                f"Subject: {subject}\n\nWritten before the stop.\n".encode()
            )
        try:
            cli_mail.deliver(GARDENING, mail.name, data_dir)
        finally:
            os.unlink(mail.name)


def waiting_subjects(data_dir: Path) -> set[str]:
    """The subjects of the mails waiting in Gardening Club's local maildir."""
    found = set()
    for part in ("new", "cur"):
        for path in (data_dir / "mail" / "users" / GARDENING / "Maildir" / part).glob("*"):
            found.add(str(email.message_from_bytes(path.read_bytes())["Subject"]))
    return found


def local_pop3_port(data_dir: Path) -> int:
    return int(json.loads((data_dir / "mail.json").read_text())["port"])


def wait_until_polling(port: int, timeout: float = 30) -> bool:
    """True once a POP3 session to the local Dovecot on `port` is open (a poll under way)."""
    deadline = time.monotonic() + timeout
    wanted = f":{port:04X}"
    while time.monotonic() < deadline:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                # remote address the Dovecot port, state 01: ESTABLISHED
                if fields[2].endswith(wanted) and fields[3] == "01":
                    return True
        time.sleep(0.002)
    return False


# Gardening Club's email-to-post mailbox, and the email-to-comment one.
GARDENING_MAILBOX = f"{API}/connector/email-to-post/{GARDENING}"
COMMENTS_MAILBOX = f"{API}/connector/email-to-comment"


def poll_now(agora: RunningAgora, token: str, mailbox: str = GARDENING_MAILBOX) -> tuple[int, dict]:
    return agora.request("POST", f"{mailbox}/poll", headers={"X-Auth": token})


def mailbox_settings(agora: RunningAgora, token: str, mailbox: str = GARDENING_MAILBOX) -> dict:
    # The email-to-comment mailbox is read through a group (the root's here).
    read = f"{mailbox}/{ROOT}" if mailbox == COMMENTS_MAILBOX else mailbox
    status, body = agora.request("GET", read, headers={"X-Auth": token})
    assert status == 200, body
    return dict(body["object"])


def second_instance(
    data_dir: Path, aws_port: int | None = None
) -> subprocess.CompletedProcess[str]:
    """A second `make run` on `data_dir`, on ports of its own (the busy-port hint's advice), or
    on the embedded AWS port `aws_port`: its output once it ended. One that does not end within
    a minute (it started: nothing refused it) is killed with its process group, and answers as
    a failure would not: returncode 0."""
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ENDPOINT_URL",)}
    env.update(
        AGORA_DATA_DIR=str(data_dir),
        AGORA_PORT=str(free_port()),
        AGORA_AWS_PORT=str(aws_port or free_port()),
        PYTHONPATH=str(REPO_ROOT),
    )
    env.pop("AGORA_TOKEN_SECRET", None)
    process = subprocess.Popen(
        MAKE_RUN,
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        return subprocess.CompletedProcess(MAKE_RUN, 0, out, err)
    return subprocess.CompletedProcess(MAKE_RUN, process.returncode, out, err)
