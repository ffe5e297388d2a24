"""`make bench`: run every figure family, print one table, write bench/results.json and
docs/benchmarks.md, and publish the package's size where the manual quotes it (bench/figures.py).

`python -m bench.run --only mail purge` runs some families and only prints (nothing is written:
results.json always holds one whole run).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime

# The tests' environment (moto credentials, table prefix, token secret) before anything imports
# `app`: the in-process figures run exactly what the tests run.
import tests.conftest  # noqa: F401

# The mail figures read a Dovecot on loopback, as `make run` may (CONTRACT §2).
os.environ["AGORA_MAIL_ALLOW_PRIVATE_HOSTS"] = "1"
from bench.report import (
    RESULTS_PATH,
    Figure,
    agora_logs_to_file,
    machine_description,
    results_document,
    skipped,
    text_table,
    update_page,
    write_results,
)


def _cold_start() -> list[Figure]:
    from bench.cold_start import cold_start_figures

    return cold_start_figures()


def _package() -> list[Figure]:
    from bench.cold_start import package_figures

    return package_figures()


def _requests() -> list[Figure]:
    from bench.requests_in_process import request_figures

    return request_figures()


def _dynamo() -> list[Figure]:
    from bench.requests_in_process import dynamo_figures

    return dynamo_figures()


def _mail() -> list[Figure]:
    from bench.mail import mail_figures

    return mail_figures()


def _mail_push() -> list[Figure]:
    from bench.mail_push import push_figures

    return push_figures()


def _mail_verify() -> list[Figure]:
    from bench.mail import verify_figures

    return verify_figures()


def _purge() -> list[Figure]:
    from bench.purge import purge_figures

    return purge_figures()


def _mailboxes() -> list[Figure]:
    from bench.mailboxes import mailbox_figures

    return mailbox_figures()


def _console() -> list[Figure]:
    from bench.console import console_figures

    return console_figures()


def _load() -> list[Figure]:
    from bench.load import load_figures

    return load_figures()


# Issue 17's table of calls, in its order (bench.requests_in_process.CALLS).
CALL_NAMES = [
    "event_get",
    "post_get",
    "email_to_post_settings",
    "posts_page",
    "events_page",
    "mail_log_page",
    "unapproved_page",
    "deleted_page",
    "spam_reports_page",
    "calendar_month",
]


# Issue 28: the 5-minute dispatch over 10,000 mailboxes, and 50 pollers racing for leases.
MAILBOX_FIGURES = [
    ("mail_dispatch_10k_s", "s"),
    ("mail_dispatch_10k_ddb_requests", "requests"),
    ("mail_dispatch_10k_sqs_messages", "messages"),
    ("lease_race_polled_twice_at_once", "polls"),
    ("lease_race_skipped", "mailboxes"),
    ("lease_race_takeover_s", "s"),
]

# Family → (runner, the figures it gives, in the order they are shown).
FAMILIES: dict[str, tuple[Callable[[], list[Figure]], list[tuple[str, str]]]] = {
    "cold_start": (_cold_start, [("cold_start_import", "ms"), ("cold_start_over_stack", "ms")]),
    "package": (_package, [("package_zip_mb", "MB")]),
    "requests": (
        _requests,
        [
            ("request_home_page", "ms"),
            ("request_event_get", "ms"),
            ("request_events_page", "ms"),
            ("request_comments_page", "ms"),
        ],
    ),
    "dynamo": (
        _dynamo,
        [
            ("ddb_items_events_page_10k_over_100", "items read"),
            ("ddb_items_comments_page_10k_over_100", "items read"),
            ("ddb_requests_events_page_10k_over_100", "requests"),
            ("ddb_requests_comments_page_10k_over_100", "requests"),
            ("ddb_requests_single_get", "requests"),
            *[(f"ddb_requests_per_call_{name}", "requests") for name in CALL_NAMES],
        ],
    ),
    "mail": (
        _mail,
        [
            ("mail_ingest_over_poplib", "mails/s"),
            ("ddb_requests_per_mail", "requests"),
            ("mail_parse_hostile", "ms/MB"),
        ],
    ),
    "mail_verify": (_mail_verify, [("mail_ingest_verify", "mails/s")]),
    # Mail in by push: 100 mails through make run's SMTP door (the reference: the polled delay).
    "mail_push": (_mail_push, [("mail_push_delay_p95_s", "s")]),
    "purge": (_purge, [("purge_items_read_per_purged", "items/comment")]),
    "mailboxes": (_mailboxes, MAILBOX_FIGURES),
    "console": (_console, [("console_first_page", "ms")]),
    "load": (
        _load,
        [("load_requests_per_second", "req/s"), ("load_p50_ms", "ms"), ("load_p99_ms", "ms")],
    ),
}


# `chalice package` (minutes when the wheels must be fetched) runs beside the families that only
# count DynamoDB work, never beside one that takes a time.
BESIDE_PACKAGE = ("dynamo", "purge")


def run_families(chosen: list[str]) -> list[Figure]:
    results: dict[str, list[Figure]] = {}
    with ThreadPoolExecutor(max_workers=1) as background:
        for name in [n for n in FAMILIES if n in chosen and n not in BESIDE_PACKAGE]:
            if name == "package":
                results.update(_package_beside(background, chosen))
            else:
                results[name] = run_family(name)
        for name in [n for n in _beside(chosen) if n not in results]:
            results[name] = run_family(name)
    return [figure for name in FAMILIES if name in results for figure in results[name]]


def _beside(chosen: list[str]) -> list[str]:
    return [n for n in BESIDE_PACKAGE if n in chosen]


def _package_beside(background: ThreadPoolExecutor, chosen: list[str]) -> dict[str, list[Figure]]:
    """The package family in the background while the chosen counting families run here."""
    packaging = background.submit(run_family, "package")
    results = {counting: run_family(counting) for counting in _beside(chosen)}
    results["package"] = packaging.result()
    return results


def run_family(name: str) -> list[Figure]:
    """A family's figures in their order; a family that fails gives nulls saying why."""
    runner, names = FAMILIES[name]
    started = time.monotonic()
    print(f"bench: {name} …", file=sys.stderr, flush=True)
    try:
        figures = {f.name: f for f in runner()}
    except Exception as error:
        traceback.print_exc()
        return skipped(names, f"failed: {type(error).__name__}: {str(error)[:200]}")
    finally:
        print(f"bench: {name} took {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
    return [figures.get(n) or Figure(n, None, None, unit, "not measured") for n, unit in names]


def publish_package(figures: list[Figure], taken_on: date) -> bool:
    """A whole run's package size, published as `make figures` publishes `make package`'s
    (bench/figures.py: the source, the manual's pages, the results' row), from the zip the run's
    `make package` made; False when the run did not measure it (a failed packaging publishes
    nothing). Only a whole run calls it: `--only` writes nothing."""
    measured = next((f for f in figures if f.name == "package_zip_mb"), None)
    if measured is None or measured.value is None:
        return False
    from bench import figures as published
    from bench.cold_start import AGORA_ZIP, package_arch

    published.publish_package(AGORA_ZIP, package_arch(), taken_on.isoformat())
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--only", nargs="+", choices=sorted(FAMILIES), help="run only these")
    arguments = parser.parse_args(argv)
    chosen = arguments.only or list(FAMILIES)

    agora_logs_to_file("agora.log")
    started = time.monotonic()
    figures = run_families(chosen)
    taken_on = datetime.now(UTC).date()
    machine = machine_description()

    print(f"\nTaken on {taken_on.isoformat()} on {machine}\n")
    print(text_table(figures))
    print(f"\n{time.monotonic() - started:.0f}s in all")
    if arguments.only:
        print("(--only: nothing written)")
        return 0
    write_results(results_document(figures, taken_on, machine))
    print(f"wrote {RESULTS_PATH.relative_to(RESULTS_PATH.parents[1])}", end="")
    print(
        " and docs/benchmarks.md's Benchmarks table"
        if update_page(figures, taken_on, machine)
        else ""
    )
    if publish_package(figures, taken_on):
        print("and the package's size in bench/figures.json and the manual")
    # The cost table is priced from these figures: it follows them (`make cost` alone redoes it).
    from bench.cost import current_block, write_page

    if write_page(current_block()):
        print("and its cost table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
