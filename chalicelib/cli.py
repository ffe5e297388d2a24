"""Command-line tool (CONTRACT §3): `python -m chalicelib.cli COMMAND`.

Uses the same settings as the API, so it works against `make run`'s embedded AWS when
AWS_ENDPOINT_URL points there, and against AWS otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

EXIT_INVALID = 2


def create_tables(_args: argparse.Namespace) -> int:
    from chalicelib.store.tables import create_tables as create

    created = create()
    print(f"created {len(created)} table(s)" + (": " + ", ".join(created) if created else ""))
    return 0


def load(args: argparse.Namespace) -> int:
    from chalicelib.services.fixture import FixtureInvalid, FixtureService

    path = Path(args.file)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        print(f"{path}: cannot read: {error.strerror}", file=sys.stderr)
        return EXIT_INVALID
    except ValueError as error:
        print(f"$: not valid JSON: {error}", file=sys.stderr)
        return EXIT_INVALID
    try:
        report = FixtureService.default().load(data)
    except FixtureInvalid as invalid:
        for error in invalid.errors:
            print(str(error), file=sys.stderr)
        print(f"{len(invalid.errors)} error(s); nothing was written", file=sys.stderr)
        return EXIT_INVALID
    print("loaded " + ", ".join(f"{n} {name}" for name, n in report.counts.items()))
    return 0


def poll_mail(_args: argparse.Namespace) -> int:
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.mail_poll import poll_all_in_process

    report = poll_all_in_process(Deadline.unbounded())
    for line in report.lines:
        print(line)
    if not report.lines:
        print("no enabled mailbox")
    return 0


def purge_comments(_args: argparse.Namespace) -> int:
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.comment_purge import purge_old_deleted_comments

    print(f"purged {purge_old_deleted_comments(Deadline.unbounded())} comment(s)")
    return 0


def send_digests(_args: argparse.Namespace) -> int:
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.digests import send_daily_digests

    print(f"sent {send_daily_digests(Deadline.unbounded())} digest(s)")
    return 0


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "create-tables": (create_tables, "create the tables (and indexes) that do not exist yet"),
    "load": (load, "validate a fixture file, then upsert everything in it"),
    "poll-mail": (poll_mail, "run the mail job once"),
    "purge-comments": (purge_comments, "run the monthly comment purge once"),
    "send-digests": (send_digests, "run the daily digest job once"),
}


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="python -m chalicelib.cli", description=__doc__.split("\n")[0]
    )
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        command = commands.add_parser(name, help=help_text)
        if name == "load":
            command.add_argument("file", help="fixture JSON file (CONTRACT §4)")
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return COMMANDS[args.command][0](args)


if __name__ == "__main__":
    sys.exit(main())
