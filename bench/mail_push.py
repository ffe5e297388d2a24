"""Mail in by push (CONTRACT §13): 100 mails sent with smtplib through `make run`'s SMTP door, each
timed from the start of its SMTP session until the API lists its post. `make run` runs as a user
runs it (tests/support/running.py, on free ports); the group is made push only first (its
connector `{"isEnabled": true}`), so no poll is involved. The reference beside the figure is the
polled delay: the p95 of `make simulate`'s day of 10,000 POP3 mailboxes (mail_day_delay_p95_s in
bench/results.json), the wait a mail had before push.

    python -m bench.mail_push      # prints the figure

It exits 1, writing nothing, when the p95 is over CONTRACT §13's 10 seconds (or the door could
not be measured): a run that misses the contract says so to whoever ran it, not only in a figure.
"""

from __future__ import annotations

import json
import smtplib
import sys
import time
from collections.abc import Callable
from email.message import EmailMessage
from email.utils import make_msgid
from urllib.parse import urlsplit

from bench.report import RESULTS_PATH, Figure, skipped

MAILS = 100
# CONTRACT §13: a pushed mail is its post within this many seconds in make run.
WITHIN_SECONDS = 10.0
NAME = "mail_push_delay_p95_s"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def polled_delay() -> float | None:
    """The polled delay p95 of the last `make simulate` (bench/results.json), if any."""
    try:
        figures = json.loads(RESULTS_PATH.read_text(encoding="utf-8"))["figures"]
    except (OSError, ValueError, KeyError):
        return None
    for figure in figures:
        if figure.get("name") == "mail_day_delay_p95_s" and figure.get("value") is not None:
            return float(figure["value"])
    return None


def push_delays(count: int = MAILS) -> list[float]:
    """Seconds from each mail's SMTP session to its post in the API, one mail after another."""
    from tests.support import REPO_ROOT
    from tests.support.running import start_agora

    demo = json.loads((REPO_ROOT / "demo" / "community.json").read_text(encoding="utf-8"))
    group = next(g for g in demo["groups"] if g["slug"] == "photography")
    agora = start_agora()
    try:
        admin = {"X-Auth": agora.token()}
        settings = f"/api/v1/en_US/connector/email-to-post/{group['id']}"
        status, body = agora.request("PUT", settings, {"isEnabled": True}, admin)
        if status != 200:
            raise RuntimeError(f"could not make the group push only: {status} {body}")
        address = body["object"]["inboundAddress"]
        host = urlsplit(agora.base).hostname
        delays = []
        for number in range(count):
            mail = EmailMessage()
            mail["From"], mail["To"] = agora.admin_email, address
            mail["Subject"] = f"Pushed mail {number}"
            mail["Message-ID"] = make_msgid(f"push{number}")
            mail.set_content(f"Mail {number} through the SMTP door.")
            started = time.monotonic()
            with smtplib.SMTP(host, agora.smtp_port, timeout=30) as door:
                door.send_message(mail)
            while not _posted(agora, admin, group["id"], mail["Subject"]):
                if time.monotonic() - started > 60:
                    raise RuntimeError(f"{mail['Subject']}: no post after 60 s")
                time.sleep(0.05)
            delays.append(time.monotonic() - started)
        return delays
    finally:
        agora.stop()


def _posted(agora: object, admin: dict[str, str], group_id: str, title: str) -> bool:
    path = f"/api/v1/en_US/post/list/{group_id}?pageSize=5"
    status, body = agora.request("GET", path, None, admin)  # type: ignore[attr-defined]
    return status == 200 and any(p["title"] == title for p in body["object"]["posts"])


def push_figures(count: int = MAILS) -> list[Figure]:
    try:
        delays = push_delays(count)
    except Exception as error:
        return skipped([(NAME, "s")], f"the SMTP door could not be measured: {error}")
    p95 = percentile(delays, 0.95)
    note = (
        f"{count} mails through make run's SMTP door to their posts (max {max(delays):.2f} s, "
        f"limit {WITHIN_SECONDS:g} s); reference: the polled delay p95 of make simulate's day"
    )
    return [Figure(NAME, round(p95, 3), polled_delay(), "s", note)]


def over_limit(figures: list[Figure]) -> list[str]:
    """What of the figures misses CONTRACT §13's limit: a p95 over WITHIN_SECONDS."""
    return [
        f"{f.name} {f.value:g} s is over the {WITHIN_SECONDS:g} s a pushed mail may take"
        for f in figures
        if f.name == NAME and f.value is not None and f.value > WITHIN_SECONDS
    ]


def main(measure: Callable[[], list[Figure]] = push_figures) -> int:
    """Run alone (`python -m bench.mail_push`): the figure merged into bench/results.json and
    docs/benchmarks.md's Benchmarks table (a row of its own after the mail rows, when new);
    exit 1 and nothing written when it could not be measured or is over its limit."""
    from datetime import UTC, datetime

    from bench.report import (
        BLOCK_END,
        BLOCK_START,
        PAGE,
        machine_description,
        markdown_row,
        merge_results,
        read_section,
        text_table,
        write_section,
    )

    figures = measure()
    print(text_table(figures))
    if any(figure.value is None for figure in figures):
        return 1
    late = over_limit(figures)
    for problem in late:
        print(f"mail_push: {problem} (CONTRACT §13): nothing written", file=sys.stderr)
    if late:
        return 1
    merge_results(figures, datetime.now(UTC).date(), machine_description())
    table = read_section(PAGE, BLOCK_START, BLOCK_END)
    if table is not None and f"| `{NAME}` |" not in table:
        lines = table.split("\n")
        after = next(
            (i for i, line in enumerate(lines) if line.startswith("| `mail_parse_hostile` |")),
            len(lines) - 1,
        )
        lines.insert(after + 1, markdown_row(figures[0]))
        write_section(PAGE, BLOCK_START, BLOCK_END, "\n".join(lines))
    print("wrote bench/results.json and docs/benchmarks.md's row")
    return 0


if __name__ == "__main__":
    import tests.conftest  # noqa: F401 (the tests' environment: make run as the suite starts it)

    sys.exit(main())
