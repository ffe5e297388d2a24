"""`make load`: concurrent administrators against `make run`, then a check that nothing was lost.

N administrators (each its own account, made with the CLI's `create-admin` as an operator would,
each signed in once) share a fixed number of operations, each on its own thread over real HTTP:
event creation, event reads, list pages and feed settings updates in one group. Then every
acknowledged write is checked: each created event is readable and listed, and the feed settings
hold a value some administrator was told was saved. It prints status counts and p50/p99 per
kind and exits 1 on any answer of 500 or more, any failed connection, or any lost write.

    python -m bench.admin_load [--workers 8] [--operations 3000] [--write-page]

`--write-page` puts the table in docs/benchmarks.md only for the full run (the defaults): the
page publishes that run's figures, and a short run (`make load WORKERS=4 OPERATIONS=200`) would
replace them with a smaller one's and leave the working tree changed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import quantiles
from typing import Any

from bench.report import write_section

REPO_ROOT = Path(__file__).resolve().parent.parent
PAGE = REPO_ROOT / "docs" / "benchmarks.md"
BLOCK_START = "<!-- load:start -->"
BLOCK_END = "<!-- load:end -->"
# The run docs/benchmarks.md publishes (make load's defaults).
FULL_RUN = {"workers": 8, "operations": 3000}
API = "/api/v1/en_US"
# The demo's "gardening" group: public, with a feed; the administrators are made for it.
DEMO_GROUP_SLUG = "gardening"
PASSWORD = "load-test-administrator"
# One operation in ten of each kind, in this order: 40% writes of events, 10% settings updates.
PATTERN = [
    "create",
    "read",
    "list",
    "create",
    "read",
    "settings",
    "create",
    "list",
    "read",
    "create",
]
KINDS = ["create", "read", "list", "settings"]


@dataclass
class Report:
    workers: int
    operations: int
    statuses: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    times_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    events: dict[int, str] = field(default_factory=dict)  # acknowledged creations: id → title
    settings: set[str] = field(default_factory=set)  # acknowledged feed `imageAlt` values
    lost: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def server_errors(self) -> int:
        """Answers of 500 or more, and requests that got no answer at all (status 0)."""
        return sum(n for c in self.statuses.values() for s, n in c.items() if s == 0 or s >= 500)

    @property
    def done(self) -> int:
        return sum(sum(c.values()) for kind, c in self.statuses.items() if kind in KINDS)

    def ok(self) -> bool:
        return self.server_errors == 0 and not self.lost and self.done == self.operations

    def table(self) -> str:
        lines = [
            "| kind | operations | statuses | p50 ms | p99 ms |",
            "|---|---:|---|---:|---:|",
        ]
        for kind in [*KINDS, "check"]:
            counts = self.statuses.get(kind)
            if not counts:
                continue
            statuses = ", ".join(f"{s}: {n}" for s, n in sorted(counts.items()))
            p50, p99 = percentiles(self.times_ms[kind])
            lines.append(f"| {kind} | {sum(counts.values())} | {statuses} | {p50} | {p99} |")
        return "\n".join(lines)

    def summary(self) -> str:
        return (
            f"{self.done} operations by {self.workers} administrators in {self.seconds:.0f} s;"
            f" answers >= 500 (or none): {self.server_errors};"
            f" acknowledged writes: {len(self.events)} events, {len(self.settings)} settings;"
            f" lost: {len(self.lost)}"
        )


def z(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def percentiles(times: list[float]) -> tuple[str, str]:
    if not times:
        return "-", "-"
    if len(times) == 1:
        return f"{times[0]:.0f}", f"{times[0]:.0f}"
    cuts = quantiles(times, n=100, method="inclusive")
    return f"{cuts[49]:.0f}", f"{cuts[98]:.0f}"


class Http:
    def __init__(self, base: str, token: str | None = None) -> None:
        self.base = base
        self.token = token

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        """Status, parsed body, milliseconds; status 0 when no answer came."""
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["X-Auth"] = self.token
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers=headers
        )
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        except (OSError, urllib.error.URLError):
            return 0, None, (time.perf_counter() - started) * 1000
        elapsed = (time.perf_counter() - started) * 1000
        try:
            return status, json.loads(raw), elapsed
        except ValueError:
            return status, None, elapsed


def demo_group_id() -> str:
    demo = json.loads((REPO_ROOT / "demo" / "community.json").read_text(encoding="utf-8"))
    return next(g["id"] for g in demo["groups"] if g["slug"] == DEMO_GROUP_SLUG)


def aws_environment(output: list[str]) -> dict[str, str]:
    """The variables `make run` printed for the CLI (its embedded AWS's `AWS_*`, and the
    `AGORA_*` setting its loopback mailboxes need), so the CLI works on what `make run` does."""
    env = {}
    for line in output:
        if match := re.match(r"export ((?:AWS|AGORA)_[A-Z_]+)=(.*)$", line.strip()):
            env[match.group(1)] = "".join(shlex.split(match.group(2)))
    return env


def create_administrators(count: int, group_id: str, aws_env: dict[str, str]) -> list[str]:
    """`create-admin` for each, as an operator runs it (all at once: each is a fresh process)."""
    emails = [f"load-admin-{n}@agora.example" for n in range(count)]
    env = {**os.environ, **aws_env, "PYTHONPATH": str(REPO_ROOT)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "chalicelib.cli", "create-admin", "--email", email]
            + ["--group-id", group_id],
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for email in emails
    ]
    for email, process in zip(emails, processes, strict=True):
        out, err = process.communicate(PASSWORD + "\n", timeout=180)
        if process.returncode != 0:
            raise RuntimeError(f"create-admin {email} failed: {out}{err}")
    return emails


def sign_in(base: str, email: str) -> str:
    status, body, _ = Http(base).call(
        "POST", f"{API}/security/login", {"email": email, "password": PASSWORD}
    )
    if status != 200:
        raise RuntimeError(f"sign-in of {email} answered {status}: {body}")
    return body["object"]


def run_load(base: str, tokens: list[str], group_id: str, operations: int) -> Report:
    report = Report(workers=len(tokens), operations=operations)
    lock = threading.Lock()
    next_index = itertools.count()
    start_date = datetime.now(UTC).replace(microsecond=0) + timedelta(days=30)

    def record(kind: str, status: int, elapsed: float) -> None:
        with lock:
            report.statuses[kind][status] += 1
            report.times_ms[kind].append(elapsed)

    def work(worker: int, http: Http) -> None:
        offset = None
        while True:
            with lock:
                n = next(next_index)
            if n >= operations:
                return
            kind = PATTERN[n % len(PATTERN)]
            with lock:
                known = list(report.events)
            if kind == "read" and not known:
                kind = "create"
            if kind == "create":
                title = f"Load event {n} by administrator {worker}"
                status, body, ms = http.call(
                    "POST",
                    f"{API}/event",
                    {
                        "groupId": group_id,
                        "title": title,
                        "startDate": z(start_date + timedelta(minutes=n)),
                        "endDate": z(start_date + timedelta(minutes=n + 60)),
                        "content": f"<p>Operation {n}</p>",
                        "location": "Load lane",
                    },
                )
                if status == 200:
                    with lock:
                        report.events[int(body["object"]["id"])] = title
            elif kind == "read":
                event_id = known[(n * 7919) % len(known)]
                status, body, ms = http.call("GET", f"{API}/event/{event_id}")
            elif kind == "list":
                query = "pageSize=15" + (f"&offset={offset}" if offset else "")
                status, body, ms = http.call("GET", f"{API}/event/list/upcoming/{group_id}?{query}")
                if status == 200:
                    page = body["object"]
                    # Walk the list page by page, back to the start at its end.
                    offset = page["offset"] if page["events"] else None
            else:
                alt = f"Feed image, set by administrator {worker} at operation {n}"
                status, body, ms = http.call(
                    "PUT",
                    f"{API}/feed/settings/{group_id}",
                    {
                        "imageUrl": "",
                        "imageLinkUrl": "",
                        "imageAlt": alt,
                        "ttl": n % 120,
                        "editorEmail": f"load-admin-{worker}@agora.example",
                        "webmasterEmail": "",
                        "skipDays": [{"name": "Sunday", "selected": n % 2 == 0}],
                        "skipHours": [],
                    },
                )
                if status == 200:
                    with lock:
                        report.settings.add(alt)
            record(kind, status, ms)

    started = time.perf_counter()
    threads = [
        threading.Thread(target=work, args=(w, Http(base, token)), name=f"administrator-{w}")
        for w, token in enumerate(tokens)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report.seconds = time.perf_counter() - started
    check(report, Http(base, tokens[0]), group_id)
    return report


def check(report: Report, http: Http, group_id: str) -> None:
    """Every acknowledged write is there: events readable and listed, settings one of those saved."""
    for event_id, title in report.events.items():
        status, body, ms = http.call("GET", f"{API}/event/{event_id}")
        report.statuses["check"][status] += 1
        report.times_ms["check"].append(ms)
        if status != 200 or body["object"]["title"] != title:
            report.lost.append(f"event {event_id}: GET answered {status}")
    listed: set[int] = set()
    offset = None
    while True:
        query = "pageSize=100" + (f"&offset={offset}" if offset else "")
        status, body, ms = http.call("GET", f"{API}/event/list/upcoming/{group_id}?{query}")
        report.statuses["check"][status] += 1
        report.times_ms["check"].append(ms)
        if status != 200:
            report.lost.append(f"upcoming list answered {status}")
            break
        page = body["object"]
        listed |= {int(e["id"]) for e in page["events"]}
        if not page["events"]:
            break
        offset = page["offset"]
    report.lost += [f"event {i}: not listed" for i in sorted(set(report.events) - listed)]
    if report.settings:
        status, body, ms = http.call("GET", f"{API}/feed/settings/{group_id}")
        report.statuses["check"][status] += 1
        report.times_ms["check"].append(ms)
        stored = body["object"]["imageAlt"] if status == 200 else None
        if stored not in report.settings:
            report.lost.append(f"feed settings hold {stored!r}, which no update was told was saved")


def against_make_run(workers: int, operations: int) -> Report:
    """Start `make run` on free ports (demo data), make the administrators, load, check, stop."""
    from tests.support.running import start_agora

    running = start_agora()
    try:
        group_id = demo_group_id()
        emails = create_administrators(workers, group_id, aws_environment(running.output))
        tokens = [sign_in(running.base, email) for email in emails]
        return run_load(running.base, tokens, group_id, operations)
    finally:
        running.stop()


def update_page(report: Report, path: Path = PAGE) -> bool:
    taken_on = datetime.now(UTC).date().isoformat()
    body = f"Taken on {taken_on}: {report.summary()}.\n\n{report.table()}"
    return write_section(path, BLOCK_START, BLOCK_END, body)


def page_refusal(args: argparse.Namespace) -> str | None:
    """Why this run's table does not go to docs/benchmarks.md, or None when it does."""
    if not args.write_page:
        return None
    run = {"workers": args.workers, "operations": args.operations}
    if run == FULL_RUN:
        return None
    full = " ".join(f"{name.upper()}={n}" for name, n in FULL_RUN.items())
    return (
        f"docs/benchmarks.md keeps the full run's table ({full}); this shorter one is not "
        "written there"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.admin_load", description=__doc__)
    parser.add_argument(
        "--workers", type=int, default=FULL_RUN["workers"], help="administrators (default 8)"
    )
    parser.add_argument(
        "--operations", type=int, default=FULL_RUN["operations"], help="in all (default 3000)"
    )
    parser.add_argument(
        "--write-page",
        action="store_true",
        help="put the table in docs/benchmarks.md (the full run's only: the defaults)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    refusal = page_refusal(args)
    if refusal:
        args.write_page = False
        print(refusal, file=sys.stderr)
    report = against_make_run(args.workers, args.operations)
    print(report.table())
    print(report.summary())
    for line in report.lost[:20]:
        print(f"LOST: {line}")
    if args.write_page and not update_page(report):
        print(f"docs/benchmarks.md has no {BLOCK_START} … {BLOCK_END} section", file=sys.stderr)
    return 0 if report.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
