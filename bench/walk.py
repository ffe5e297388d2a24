"""The walk: which of Agora's files two paths cross, and how often they come back (issue 39).

Traced with `sys.setprofile`, in-process (moto, a POP3 maildrop in memory), each path from its
entry to its outside effect:

- mail: a poll downloads one mail, which becomes a post; the outbox drain tells its subscriber,
  who gets an instant email (SES);
- event: an HTTP PUT of an event (the Chalice test client); the drain publishes its domain event
  to EventBridge.

For each: the files entered (chalicelib/ and app.py), the cross-file calls (a call whose nearest
caller of ours is in another file), the re-entries (cross-file calls into a file the walk has
entered before), and the upward pairs: (caller, callee) file pairs whose callee sits in a higher
layer (LAYERS). Asking the composition root (an entry point calling chalicelib/deps.py) is listed
apart: it is how a Chalice view or a job gets its service (deps.py says why).

    PYTHONPATH=. .venv/bin/python -m bench.walk            # a few seconds; prints both walks
    PYTHONPATH=. .venv/bin/python -m bench.walk --files    # and the files each entered, in order
    PYTHONPATH=. .venv/bin/python -m bench.walk --pairs    # and where the cross-file calls go:
                                                           # (caller, callee) pairs, most calls first

The mail walk is also told up to its post (the poll's return: POP3 to the stored post and its
outbox record), the part mail in alone walks.

Setup (tables, the community, the subscription) is not traced; the first run of each path is
traced cold (imports included), as a Lambda's first call would run it.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import tests.conftest  # noqa: F401  (the tests' environment, before anything imports `app`)

ROOT = Path(__file__).resolve().parent.parent

# Low to high; a file outside these packages (settings, auth, errors, schemas, aws, …) is shared
# by all and ranks with the domain.
LAYERS = {
    "chalicelib/domain": 0,
    "chalicelib/store": 1,
    "chalicelib/mail": 1,
    "chalicelib/services": 2,
    "chalicelib/api": 3,
    "chalicelib/jobs": 3,
    "chalicelib/deps.py": 4,
    "app.py": 5,
}
ROOT_FILE = "chalicelib/deps.py"


def layer(name: str) -> int:
    return next((rank for prefix, rank in LAYERS.items() if name.startswith(prefix)), 0)


@dataclass
class Walk:
    files: list[str] = field(default_factory=list)
    calls: int = 0
    reentries: int = 0
    pairs: set[tuple[str, str]] = field(default_factory=set)
    pair_calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    marks: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def mark(self, name: str) -> None:
        """Remember the figures so far under `name` (files, cross-file calls, re-entries)."""
        self.marks[name] = (len(self.files), self.calls, self.reentries)

    @property
    def upward(self) -> list[tuple[str, str]]:
        return sorted(
            (a, b)
            for a, b in self.pairs
            if layer(b) > layer(a) and not (b == ROOT_FILE and layer(a) == 3)
        )

    @property
    def asks_of_the_root(self) -> list[tuple[str, str]]:
        return sorted((a, b) for a, b in self.pairs if b == ROOT_FILE and a != ROOT_FILE)

    def lines(self, title: str) -> list[str]:
        out = [
            f"{title}: {len(self.files)} files, {self.calls} cross-file calls, "
            f"{self.reentries} re-entries, {len(self.upward)} upward pairs",
        ]
        out += [
            f"  up to {name}: {files} files, {calls} cross-file calls, {again} re-entries"
            for name, (files, calls, again) in self.marks.items()
        ]
        out += [f"  upward: {a} -> {b}" for a, b in self.upward]
        out += [f"  asks the composition root: {a}" for a, _ in self.asks_of_the_root]
        return out

    def pair_lines(self) -> list[str]:
        """The (caller file, callee file) pairs with their cross-file calls, most first."""
        return [f"  {n:4d} {a} -> {b}" for (a, b), n in self.pair_calls.most_common()]


def _ours(frame: FrameType | None) -> tuple[FrameType | None, str | None]:
    """The nearest frame (from `frame` up) in one of our files, and that file."""
    while frame is not None:
        name = _relative(frame.f_code.co_filename)
        if name is not None:
            return frame, name
        frame = frame.f_back
    return None, None


_names: dict[str, str | None] = {}


def _relative(path: str) -> str | None:
    found = _names.get(path, "?")
    if found != "?":
        return found
    name: str | None = None
    try:
        relative = Path(path).resolve().relative_to(ROOT).as_posix()
        if relative.startswith("chalicelib/") or relative == "app.py":
            name = relative
    except ValueError:
        pass
    _names[path] = name
    return name


@contextmanager
def traced() -> Iterator[Walk]:
    walk = Walk()
    seen: set[str] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = _relative(frame.f_code.co_filename)
        if callee is None:
            return
        _, caller = _ours(frame.f_back)
        if caller != callee:
            if caller is not None:
                walk.calls += 1
                walk.pairs.add((caller, callee))
                walk.pair_calls[caller, callee] += 1
            walk.reentries += callee in seen
        if callee not in seen:
            seen.add(callee)
            walk.files.append(callee)

    sys.setprofile(profile)
    try:
        yield walk
    finally:
        sys.setprofile(None)


def a_mail() -> bytes:
    return (
        b"From: Ann <ann@example.org>\r\nTo: garden@community.example\r\n"
        b"Subject: Tulips are out\r\nMessage-ID: <walk-1@example.org>\r\n"
        b"Date: Thu, 26 Nov 2026 09:00:00 +0000\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"\r\nThe first tulips of the year are out by the pond.\r\n"
    )


def world() -> dict[str, Any]:
    """The community, a subscriber told at once of garden's new posts, SES and the bus ready."""
    import boto3

    from chalicelib import deps
    from chalicelib.clock import utc_now
    from chalicelib.settings import get_settings
    from tests.fixtures import Community

    c = Community()
    c.group("home")
    root_admin = c.user("root-admin", {c.root: "administrator"})
    garden = c.group("garden")
    c.user("ann", {garden: "member"}, email="ann@example.org")
    bob = c.user("bob", {garden: "member"}, email="bob@example.org")
    c.load()
    deps.notifications().upsert(
        bob,
        kind="group",
        target_id=garden,
        notification_id=1,
        group_id=None,
        settings={"email_alert_id": 1, "show_screen_alert": None, "show_red_label": None},
        modified_on=utc_now(),
    )
    boto3.client("ses").verify_domain_identity(Domain="community.example")
    return {"garden": garden, "root_admin": root_admin, "sender": get_settings().sender_address}


def mail_walk(garden: str) -> tuple[Walk, str]:
    from chalicelib import deps
    from chalicelib.jobs.outbox import drain_in_process
    from tests.support.mail_fakes import FakeMaildrop, fake_server_mailbox

    mailbox = fake_server_mailbox(garden)
    ingestor = deps.mail_ingestor(open_mailbox=FakeMaildrop(a_mail()))
    ingestor.mail.prepare()
    with traced() as walk:
        result = ingestor.poll(mailbox, lambda: False)
        walk.mark("its post (POP3 to the stored post)")
        drain_in_process()
    return walk, result.line()


def event_walk(root_admin: str, garden: str) -> tuple[Walk, int]:
    from chalice.test import Client

    from app import app
    from chalicelib.jobs.outbox import drain_in_process
    from tests.fixtures import Api

    body = {
        "title": "Spring fair",
        "startDate": "2027-04-01T09:00:00Z",
        "endDate": "2027-04-01T17:00:00Z",
        "allDay": False,
        "content": "<p>Stalls and music</p>",
        "organizer": "Parish council",
        "location": "Market square",
        "groupId": garden,
    }
    with Client(app, stage_name="dev", project_dir=str(ROOT)) as client:
        api = Api(client)
        status, created = api.post("/api/v1/en_US/event", root_admin, body)
        assert status == 200, created
        drain_in_process()
        event_id = created["object"]["id"]
        with traced() as walk:
            status, _ = api.put(
                f"/api/v1/en_US/event/{event_id}", root_admin, {**body, "title": "Summer fair"}
            )
            drain_in_process()
    return walk, status


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    files = "--files" in args
    pairs = "--pairs" in args
    os.environ["AGORA_EVENT_BUS"] = "default"
    from bench.world import in_process_aws

    with in_process_aws():
        from moto.backends import get_backend

        w = world()
        mail, line = mail_walk(w["garden"])
        event, status = event_walk(w["root_admin"], w["garden"])
        sent = list(get_backend("ses")["123456789012"]["us-east-1"].sent_messages)
    print(f"mail poll: {line}; SES messages sent: {len(sent)}")
    print("\n".join(shown(mail, "mail, poll to sent notification", files, pairs)))
    published = "chalicelib/services/event_bus.py" in event.files
    print(f"event PUT: status {status}; the drain ran the EventBridge publisher: {published}")
    print("\n".join(shown(event, "event, PUT to its EventBridge event", files, pairs)))


def shown(walk: Walk, title: str, files: bool, pairs: bool) -> list[str]:
    """A walk's summary, then with --files every file it entered, with --pairs its file pairs."""
    lines = walk.lines(title)
    if files:
        lines += [f"  {n:2d} {name}" for n, name in enumerate(walk.files, 1)]
    if pairs:
        lines += walk.pair_lines()
    return lines


if __name__ == "__main__":
    main()
