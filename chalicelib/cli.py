"""Command-line tool: `python -m chalicelib.cli COMMAND`.

Uses the same settings as the API, so it works against `make run`'s embedded AWS when
AWS_ENDPOINT_URL points there, and against AWS otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence

# write_fixture: make run's saves write the fixture format too (agora_local/persistence.py).
from chalicelib.cli_fixture import write_fixture as write_fixture
from chalicelib.cli_progress import Progress

EXIT_INVALID = 2
EXIT_AWS = 1

MAKE_RUN_HINT = "or point AWS_ENDPOINT_URL at `make run`'s embedded AWS (make run prints it)"


def _make_run_hint(endpoint: str | None) -> str:
    # Pointing AWS_ENDPOINT_URL somewhere is advice only for those who have not done it.
    return "" if endpoint else f", {MAKE_RUN_HINT}"


def _chain(error: BaseException) -> Iterator[BaseException]:
    """The error and what caused it (PynamoDB keeps botocore's error in `cause`)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        cause = getattr(current, "cause", None)
        current = (
            cause if isinstance(cause, BaseException) else current.__cause__ or current.__context__
        )


def explain_aws_failure(error: BaseException) -> str | None:
    """One line with the fix for the AWS failures an operator meets first, or None."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    for link in _chain(error):
        kind = type(link).__name__
        if kind in ("NoCredentialsError", "PartialCredentialsError"):
            return (
                "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                f"(or AWS_PROFILE){_make_run_hint(endpoint)}"
            )
        if kind == "NoRegionError":
            return "no AWS region: set AWS_DEFAULT_REGION (make run uses us-east-1)"
        if kind in ("EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError"):
            where = endpoint or getattr(link, "kwargs", {}).get("endpoint_url", "AWS")
            return (
                f"cannot reach {where}: start `make run` (it serves the embedded AWS) or "
                "unset AWS_ENDPOINT_URL to use AWS itself"
            )
        if kind == "TableDoesNotExist" or (
            kind in ("ClientError", "VerboseClientError")
            and getattr(link, "response", {}).get("Error", {}).get("Code")
            == "ResourceNotFoundException"
            and "table" in str(link).lower()
        ):
            return (
                f"a table is missing ({str(link).strip()}): run "
                "`python -m chalicelib.cli create-tables`, and check AGORA_TABLE_PREFIX"
            )
        if kind in ("ClientError", "VerboseClientError"):
            code = getattr(link, "response", {}).get("Error", {}).get("Code", "")
            if code in (
                "UnrecognizedClientException",
                "InvalidClientTokenId",
                "ExpiredToken",
                "ExpiredTokenException",
            ):
                return (
                    f"AWS refused the credentials ({code}): check AWS_ACCESS_KEY_ID, "
                    f"AWS_SECRET_ACCESS_KEY and AWS_PROFILE{_make_run_hint(endpoint)}"
                )
            if code in ("AccessDeniedException", "AccessDenied"):
                return (
                    f"AWS denied a call ({str(link).strip()}): use credentials allowed to make it"
                )
            if code == "NotFoundException" and "kms" in str(link).lower():
                return f"the KMS key is missing ({str(link).strip()}): check AGORA_KMS_KEY_ID"
    return None


def refuse(line: str, code: int = EXIT_INVALID) -> int:
    """Say on stderr, in one line, why the command stops; answers its exit status."""
    print(line, file=sys.stderr)
    return code


def create_tables(_args: argparse.Namespace) -> int:
    """create the tables (and indexes) that do not exist yet"""
    from chalicelib.store.tables import create_tables as create

    created = create()
    print(f"created {len(created)} table(s)" + (": " + ", ".join(created) if created else ""))
    return 0


def load(args: argparse.Namespace) -> int:
    """validate a fixture file, then upsert everything in it"""
    from chalicelib import cli_fixture

    return cli_fixture.load(args, refuse)


def _then_drain_outbox() -> Callable[[], int]:
    """Mark the outbox stream's end now; the function answered tells what was recorded since
    (this command's posts, comments, rejections), as drain-outbox would in AWS and `make run`'s
    scheduler does: the command's notifications and domain events go out before it exits."""
    from chalicelib.jobs.outbox import drain_in_process
    from chalicelib.store.outbox import StreamReader

    reader = StreamReader(latest=True)
    return lambda: drain_in_process(reader)


def export(args: argparse.Namespace) -> int:
    """write the whole community to a fixture file that `load` reads back (passwords as their
    hashes; stored secrets left out)"""
    from chalicelib import cli_fixture

    return cli_fixture.export(args, refuse)


def unlock(args: argparse.Namespace) -> int:
    """end the sign-in throttle of an account (every source), for a locked-out member"""
    from chalicelib import deps

    email = args.email.strip()
    forgotten = deps.security_service().unlock(email)
    if forgotten is None:
        return refuse(f"unlock: no account has the address {email}")
    if not forgotten:
        # CONTRACT §12: a write that changes nothing records nothing.
        print(f"{email} was not locked: no failed sign-in in its current window, nothing changed")
        return 0
    print(
        f"unlocked {email}: its {forgotten} failed sign-in(s) of the current window are "
        "forgotten, for every source"
    )
    return 0


def poll_mail(args: argparse.Namespace) -> int:
    """run the mail job once"""
    from chalicelib.cli_mail import MailboxNames
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.mail_poll import poll_all_in_process

    drain = _then_drain_outbox()
    due = bool(getattr(args, "due", False))
    progress = Progress()
    polled: list[str] = []
    named = MailboxNames()

    def told(line: str) -> None:
        polled.append(line)
        progress.line(named(line))

    def failed(line: str) -> None:
        polled.append(line)
        progress.line(named(line), file=sys.stderr)

    # One line per mailbox as soon as it is done: a slow server shows which mailbox it is. A
    # mailbox that could not be polled has its one line on stderr (CONTRACT §3), said once.
    with progress.running(lambda: f"poll-mail: {len(polled)} mailbox(es) polled"):
        report = poll_all_in_process(Deadline.unbounded(), on_line=told, on_failure=failed, due=due)
    if not report.lines:
        print("no mailbox is due" if due else "no enabled mailbox")
    drain()
    return EXIT_AWS if report.failures else 0


def _failed(failures: list[str]) -> int:
    """CONTRACT §3: after doing the rest, one line per failed part on stderr and exit 1."""
    for line in failures:
        print(line, file=sys.stderr)
    return EXIT_AWS if failures else 0


def purge_comments(_args: argparse.Namespace) -> int:
    """run the monthly comment purge once"""
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.comment_purge import purge_old_deleted_comments

    progress = Progress()
    count = 0

    def told(n: int) -> None:
        nonlocal count
        count = n

    try:
        with progress.running(lambda: f"purge-comments: {count} purged so far"):
            count = purge_old_deleted_comments(Deadline.unbounded(), progress=told)
    except Exception as error:
        if explain_aws_failure(error) is not None:
            raise  # the operator's setup (credentials, endpoint, tables): main says how to fix it
        # What was purged stays purged; the rest is purged by the next run.
        progress.done()
        print(f"purged {count} comment(s) before failing")
        return _failed([f"purge-comments: stopped: {type(error).__name__}: {error}"[:500]])
    finally:
        progress.done()
    print(f"purged {count} comment(s)")
    return 0


def send_digests(_args: argparse.Namespace) -> int:
    """run the daily digest job once"""
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.digests import run_daily_digests

    with Progress().running(lambda: "send-digests: sending"):
        run = run_daily_digests(Deadline.unbounded())
    print(f"sent {run.sent} digest(s)" + (f", {run.failed} failed" if run.failed else ""))
    return _failed(run.failures)


def migrate(_args: argparse.Namespace) -> int:
    """bring every stored item to the shape this version writes"""
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.migrate import run_migrations

    print("\n".join(run_migrations(Deadline.unbounded()).lines))
    return 0


def read_password(prompt: str = "Password: ") -> str:
    """Asked twice on a terminal (not echoed); otherwise the first line of stdin, so that
    `printf '%s\n' "$PASSWORD" | python -m chalicelib.cli create-admin …` works in scripts."""
    import getpass

    if sys.stdin.isatty():
        first = getpass.getpass(prompt)
        if getpass.getpass("Again: ") != first:
            raise ValueError("the two passwords differ")
        return first
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\r\n")


def create_admin(args: argparse.Namespace) -> int:
    """create or promote a root group administrator (or of --group-id), named --alias; password
    from a prompt, or stdin when it is not a terminal"""
    from chalicelib.errors import AgoraError

    try:
        try:
            password = read_password()
        except EOFError:
            # Ctrl-D at the prompt (or an empty stdin): nothing to set.
            return refuse("create-admin: no password given; nothing was changed")
        except KeyboardInterrupt:
            return refuse("\ncreate-admin: interrupted; nothing was changed")
        from chalicelib import deps  # after the prompt: a refusal there imports no service

        result = deps.administrator_service().create_or_promote(
            args.email, password, args.group_id, alias=args.alias
        )
    except ValueError as error:
        return refuse(f"create-admin: {error}")
    except AgoraError as error:
        for field_error in error.errors or []:
            print(f"create-admin: {field_error.key}: {field_error.message}", file=sys.stderr)
        if not error.errors:
            print(f"create-admin: {error.message}", file=sys.stderr)
        return EXIT_INVALID
    print(result.line(args.email.strip()))
    return 0


def deliver(args: argparse.Namespace) -> int:
    """against make run: put a mail (RFC 5322 file, - for stdin) into one of its local mailboxes
    (a group id or slug, or `comments`)"""
    from chalicelib.cli_mail import MailCommandError
    from chalicelib.cli_mail import deliver as deliver_mail

    try:
        print(deliver_mail(args.mailbox, args.file))
    except MailCommandError as error:
        return refuse(f"deliver: {error}", EXIT_AWS)
    return 0


def sent_mail(args: argparse.Namespace) -> int:
    """against make run: the mail its embedded SES holds, newest first (--raw ID: one message)"""
    from chalicelib.cli_mail import MailCommandError, print_lines, sent_mail_lines

    if args.last < 1:
        return refuse("sent-mail: --last must be 1 or more")
    try:
        print_lines(sent_mail_lines(args.to, args.last, args.raw))
    except MailCommandError as error:
        return refuse(f"sent-mail: {error}", EXIT_AWS)
    return 0


MISSING_QUEUE = {"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"}


def redrive_outbox(_args: argparse.Namespace) -> int:
    """drive the outbox drain's dead letters again (from the stream, after 24 hours from the
    outbox table); each one whose records are all told is deleted"""
    from chalicelib.aws import error_code
    from chalicelib.jobs.outbox_redrive import dead_letter_queue, redrive

    try:
        done = redrive()
    except Exception as error:
        # SQS's code for a missing queue, in its query and its JSON protocol.
        if error_code(error) in MISSING_QUEUE:
            return refuse(f"redrive-outbox: there is no queue {dead_letter_queue()}", EXIT_AWS)
        raise
    print(done.line())
    for line in done.left:
        print(f"redrive-outbox: {line}", file=sys.stderr)
    return EXIT_AWS if done.left else 0


def _command(
    run: Callable[[argparse.Namespace], int],
) -> tuple[Callable[[argparse.Namespace], int], str]:
    """A command and its help: its function's docstring, one line."""
    return run, " ".join((run.__doc__ or "").split())


# Each command's help is its function's docstring.
COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "create-tables": _command(create_tables),
    "load": _command(load),
    "export": _command(export),
    "poll-mail": _command(poll_mail),
    "purge-comments": _command(purge_comments),
    "send-digests": _command(send_digests),
    "migrate": _command(migrate),
    "create-admin": _command(create_admin),
    "unlock": _command(unlock),
    "deliver": _command(deliver),
    "redrive-outbox": _command(redrive_outbox),
    "sent-mail": _command(sent_mail),
}


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="python -m chalicelib.cli", description=__doc__.split("\n")[0]
    )
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        command = commands.add_parser(name, help=help_text)
        if name == "load":
            command.add_argument("file", help="fixture JSON file (the format `export` writes)")
        if name == "export":
            command.add_argument("file", help="fixture JSON file to write (- for stdout)")
        if name == "unlock":
            command.add_argument("--email", required=True, help="the account's address")
        if name == "poll-mail":
            command.add_argument(
                "--due",
                action="store_true",
                help="poll only the mailboxes the schedule would poll now",
            )
        if name == "deliver":
            command.add_argument(
                "mailbox", help="a group's id (its email-to-post mailbox), or `comments`"
            )
            command.add_argument("file", help="the mail, as a mail server stores it (- for stdin)")
        if name == "sent-mail":
            command.add_argument("--to", help="only mail to this address (or part of it)")
            command.add_argument(
                "--last", type=int, default=20, help="how many, newest first (default 20)"
            )
            command.add_argument("--raw", metavar="ID", help="print this message as it travels")
        if name == "create-admin":
            command.add_argument("--email", required=True, help="the administrator's address")
            command.add_argument(
                "--group-id", help="administrator of this group (default: the root group)"
            )
            command.add_argument(
                "--alias",
                help="the display name members see (default for a new account: the part of "
                "the address before @; an existing account keeps its own unless given)",
            )
    return root


def main(argv: Sequence[str] | None = None) -> int:
    from chalicelib import logs
    from chalicelib.domain.audit import Actor, acting_as
    from chalicelib.settings import MissingSetting, SettingsError, local_endpoint_defaults

    args = parser().parse_args(argv)
    try:
        defaults = local_endpoint_defaults()
        if defaults:
            from chalicelib import aws

            os.environ.update(defaults)
            aws.reset()
        # Results on stdout; on stderr only what went wrong, in plain words (AGORA_LOG_FORMAT=json:
        # the JSON lines the deployed functions write).
        # What the command changes is recorded as its own doing (CONTRACT §12).
        with logs.for_people(), acting_as(Actor(system=args.command, via="cli")):
            return COMMANDS[args.command][0](args)
    except MissingSetting as error:
        # CONTRACT §2: a command that lacks a setting refuses to start, one line naming it.
        return refuse(f"{args.command}: {error}", EXIT_AWS)
    except SettingsError as error:
        return refuse(f"{args.command}: {error}")
    except Exception as error:
        line = explain_aws_failure(error)
        if line is None:
            raise
        return refuse(f"{args.command}: {line}", EXIT_AWS)


if __name__ == "__main__":
    sys.exit(main())
