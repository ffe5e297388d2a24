"""`make run`: the whole of Agora on one machine.

An embedded AWS (moto's server on loopback: DynamoDB, KMS, SQS, …), the tables, the demo community,
the API served by Chalice's local server, and a thread that runs the scheduled jobs on their
schedules. Ctrl-C stops all of it. Run it as `python -m agora_local` (`make run`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import shlex
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from agora_local.access_log import OneLineAccessLog
from agora_local.folder_lock import FolderInUse, FolderLock, lock_data_folder, port_user
from agora_local.jobs import scheduled_jobs
from agora_local.key_pair import KeyPair, folder_key_pair
from agora_local.lifecycle import Intake, Scheduler, StopRequest, keep_writing, orderly_stop
from agora_local.mailboxes import reset_local_mail, serve_local_mail
from agora_local.permalinks import console_address, not_found_page, wants_html

PROJECT_DIR = Path(__file__).resolve().parent.parent
DEMO_FIXTURE = PROJECT_DIR / "demo" / "community.json"
DEFAULT_DATA_DIR = PROJECT_DIR / ".agora-run"
# How often the snapshot is written while running (also on every stop).
SNAPSHOT_SECONDS = 30.0


# AWS credentials of the environment that make run never uses (nor passes to its embedded AWS):
# its own key pair replaces them.
FOREIGN_CREDENTIALS = ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE")


def _prepare_environment(key_pair: KeyPair) -> None:
    """AWS's standard variables for make run's own process: the data folder's key pair, whatever
    the environment held (a real key is never used); the region unless the user set one."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.update(key_pair.environment())
    for name in FOREIGN_CREDENTIALS:
        os.environ.pop(name, None)
    # The demo's and a developer's POP3 servers live on loopback or the local network (CONTRACT §2).
    os.environ.setdefault("AGORA_MAIL_ALLOW_PRIVATE_HOSTS", "1")


# Settings only make run itself reads (or a secret the CLI finds in the embedded Secrets Manager):
# not among the variables printed for the CLI.
NOT_FOR_THE_CLI = (
    "AGORA_PORT",
    "AGORA_AWS_PORT",
    "AGORA_DATA_DIR",
    "AGORA_DEMO",
    "AGORA_TOKEN_SECRET",
)


def cli_environment(settings: Any) -> dict[str, str]:
    """Every variable a CLI needs to act on this make run as its own jobs do (CONTRACT §2): the
    embedded AWS and its key pair, the site's address on this port, and each AGORA_ setting the
    user gave make run (a table prefix, a KMS key, …)."""
    printed = {
        "AWS_ENDPOINT_URL": os.environ["AWS_ENDPOINT_URL"],
        "AWS_DEFAULT_REGION": os.environ["AWS_DEFAULT_REGION"],
        "AWS_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],
        "AWS_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
        # With it, `cli poll-mail` polls the same (loopback) mailboxes.
        "AGORA_MAIL_ALLOW_PRIVATE_HOSTS": os.environ["AGORA_MAIL_ALLOW_PRIVATE_HOSTS"],
        # The site's address on this port: the CLI's links and its permalink matching use it.
        "AGORA_BASE_URL": settings.public_base_url,
    }
    for name, value in sorted(os.environ.items()):
        setting = name.removeprefix("AGORA_").lower()
        if name.startswith("AGORA_") and setting in type(settings).model_fields:
            if name not in NOT_FOR_THE_CLI and name not in printed:
                printed[name] = value
    return printed


def export_lines(variables: dict[str, str]) -> list[str]:
    """`export NAME=value`, one a line, quoted for a POSIX shell: pasted, they set each one."""
    return [f"export {name}={shlex.quote(value)}" for name, value in variables.items()]


def data_folder(settings: Any) -> Path:
    """Where make run keeps its data between runs (AGORA_DATA_DIR, else `.agora-run`)."""
    return Path(settings.data_dir).expanduser() if settings.data_dir else DEFAULT_DATA_DIR


def prepare_persistence(reset: bool) -> Any:
    """The snapshot of this run's data folder (emptied first on `RESET=1`), with the token secret
    kept there unless AGORA_TOKEN_SECRET is set; and AGORA_BASE_URL following AGORA_PORT when it
    is not set, so that permalinks name the port the API listens on."""
    from agora_local.persistence import LocalSnapshot
    from chalicelib.settings import reload_settings

    settings = reload_settings()
    folder = data_folder(settings)
    # Tokens' secret, password hashes and mailbox passwords' key live there: the owner's alone.
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.chmod(0o700)
    snapshot = LocalSnapshot(folder)
    if reset:
        deleted = snapshot.reset() + reset_local_mail(folder)
        said = "; ".join(deleted) if deleted else "nothing was saved there"
        print(f"data: RESET=1 deleted the saved data in {folder} ({said})")
    if settings.token_secret is None:
        os.environ["AGORA_TOKEN_SECRET"] = snapshot.token_secret()
    if "base_url" not in settings.model_fields_set:
        os.environ["AGORA_BASE_URL"] = f"http://localhost:{settings.port}"
    return snapshot


def claim_data_folder() -> FolderLock:
    """The data folder made (the owner's alone) and locked for this make run (FolderInUse when
    another holds it), before anything in it is read or deleted."""
    from chalicelib.settings import reload_settings

    folder = data_folder(reload_settings())
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.chmod(0o700)
    return lock_data_folder(folder)


def restore_data(snapshot: Any, unclean: bool = False) -> bool:
    """Put the saved data back into the embedded AWS; True when there was some. `unclean`: the
    last make run on the folder did not stop cleanly (killed, a crash), which is said with the
    time of the save restored: what it did after that save is gone."""
    import time

    saved = snapshot.path.stat().st_mtime if snapshot.path.exists() else None
    restored = snapshot.restore()
    if unclean:
        when = time.strftime("%H:%M:%S", time.localtime(saved)) if saved else None
        print(
            "data: the last run did not stop cleanly: "
            + (f"restored the save of {when}" if restored and when else "it saved nothing")
        )
    if restored:
        print(f"data: restored from {snapshot.folder} (make run RESET=1 starts from the demo)")
    else:
        print(f"data: kept in {snapshot.folder}")
    return restored


def read_export(path: Path) -> Any:
    """The community export of a snapshot this moto cannot read, parsed: a file that is not
    JSON stops the start here, before anything is made for it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise _cannot_load(path, error) from None


def load_export(path: Path, data: Any) -> None:
    """The export (read_export) into the new (empty) store."""
    from chalicelib import deps
    from chalicelib.services.fixture import FixtureInvalid

    try:
        report = deps.fixture_service().load(data)
    except (ValueError, FixtureInvalid) as error:
        first = error.errors[0] if isinstance(error, FixtureInvalid) and error.errors else error
        raise _cannot_load(path, first) from None
    print(f"data: loaded from {path}: " + ", ".join(f"{n} {k}" for k, n in report.counts.items()))


def _cannot_load(path: Path, first: Any) -> SystemExit:
    return SystemExit(
        f"make run: {path} cannot be loaded ({first}); fix it, or start again "
        "from the demo with make run RESET=1"
    )


def migrate_on_start(created: list[str], loaded_export: bool) -> bool:
    """Stored items of an older release brought to this one's shape (`cli migrate`); the
    migrations of tables just `created` have nothing to read and are recorded done without
    reading them, unless an export (written by an older Agora) was loaded into them. True when
    any ran."""
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.migrate import run_migrations

    created_empty = [] if loaded_export else created
    ran = False
    for line in run_migrations(Deadline.unbounded(), created_empty).lines:
        if not line.endswith(": already done"):
            print(f"migrate: {line}")
            ran = True
    return ran


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m agora_local", description=__doc__)
    parser.add_argument(
        "--reset", action="store_true", help="delete the saved data first (make run RESET=1)"
    )
    return parser.parse_args(argv)


class PortBusy(Exception):
    """A port `make run` needs is taken; the message is the one line the user sees."""


def check_port_free(port: int, variable: str) -> None:
    """Fail before anything starts: moto's server would wait forever for a port it cannot bind,
    and Chalice's would fail only after the demo data loaded."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # The servers bind with SO_REUSEADDR too: a port in TIME_WAIT is free for them.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise PortBusy(busy_port_line(port, variable, error.strerror)) from None


def check_ports(settings: Any) -> None:
    """PortBusy, before anything starts, when a port make run needs is taken or two are one."""
    if settings.port == settings.aws_port:
        raise PortBusy(
            f"make run: AGORA_PORT and AGORA_AWS_PORT are both {settings.port}; "
            "give them different ports"
        )
    check_port_free(settings.aws_port, "AGORA_AWS_PORT")
    check_port_free(settings.port, "AGORA_PORT")
    if "smtp_port" in settings.model_fields_set:
        check_port_free(settings.smtp_port, "AGORA_SMTP_PORT")


def busy_port_line(port: int, variable: str, why: str | None) -> str:
    """The one line of a taken port: what holds it when that can be told (another make run
    first: two on one data folder would overwrite each other's data, which the lock refuses)."""
    user = port_user(port)
    if user is not None and user.startswith("make run "):
        return (
            f"make run: port {port} ({variable}) is used by another {user}; stop it first, or "
            f"give this one another AGORA_DATA_DIR and set {variable} to another port"
        )
    held = f"used by {user}" if user else f"not free ({why})"
    return f"make run: port {port} ({variable}) is {held}; stop what uses it or set {variable} to another port"


def start_embedded_aws(port: int, key_pair: KeyPair) -> Any:
    import logging

    from agora_local.embedded_aws import start_moto_server

    # One access-log line per AWS call would bury the API's own log.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    return start_moto_server(key_pair, port)


def ensure_kms_key(alias: str) -> str:
    """The key that encrypts stored secrets, created under its alias when missing."""
    from chalicelib.aws import client

    kms = client("kms")
    if not alias.startswith("alias/"):
        return alias
    for page in kms.get_paginator("list_aliases").paginate():
        for entry in page["Aliases"]:
            if entry["AliasName"] == alias and entry.get("TargetKeyId"):
                return entry["TargetKeyId"]
    key_id = kms.create_key(Description="Agora stored secrets")["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName=alias, TargetKeyId=key_id)
    return key_id


def ensure_queue(name: str) -> str:
    from chalicelib.aws import client

    return client("sqs").create_queue(QueueName=name)["QueueUrl"]


def share_token_secret(settings: Any) -> str:
    """Put the token secret in the embedded Secrets Manager under the stage's id.

    Unset, AGORA_TOKEN_SECRET resolves there (settings.token_secret_setting), so the API, the
    scheduled jobs and a CLI given only the variables `make run` prints all sign with the same
    secret. A secret the user set is stored too; a `secretsmanager:` reference is left alone.
    A stored secret that already holds the value keeps its version: a restart changes nothing in
    the embedded AWS, so a stop after it has nothing new to save (agora_local.persistence).
    Answers the secret's id.
    """
    from chalicelib.auth import REFERENCE_PREFIX
    from chalicelib.aws import client

    value = settings.token_secret.get_secret_value() if settings.token_secret else ""
    if value.startswith(REFERENCE_PREFIX):
        return value.removeprefix(REFERENCE_PREFIX)
    manager = client("secretsmanager")
    try:
        manager.create_secret(
            Name=settings.token_secret_id, SecretString=value or secrets.token_urlsafe(32)
        )
    except manager.exceptions.ResourceExistsException:
        stored = manager.get_secret_value(SecretId=settings.token_secret_id) if value else {}
        if value and stored.get("SecretString") != value:
            manager.put_secret_value(SecretId=settings.token_secret_id, SecretString=value)
    return str(settings.token_secret_id)


def ensure_mail_sender(sender: str) -> str:
    """The embedded SES may send from the sender's domain (AGORA_MAIL_SENDER)."""
    from chalicelib.aws import client

    domain = sender.rsplit("@", 1)[1]
    client("ses").verify_domain_identity(Domain=domain)
    return domain


def demo_root_administrator(fixture: dict[str, Any]) -> tuple[str, str] | None:
    """Email and password of a root group administrator of the demo fixture."""
    root = next((g["id"] for g in fixture.get("groups", []) if g.get("parentId") is None), None)
    for user in fixture.get("users", []):
        roles = {m["groupId"]: m["role"] for m in user.get("memberships", [])}
        if roles.get(root) == "administrator" and user.get("password"):
            return user["email"], user["password"]
    return None


def local_server(
    host: str, port: int, intake: Intake | None = None, readable_log: bool = False
) -> Any:
    """Chalice's local server, answering unknown paths with the envelope as API Gateway does,
    and serving through `intake` (so that a stop can close it); one log line a request, the
    readable access line when `readable_log` (a terminal: agora_local/access_log.py)."""
    gate = intake or Intake()
    from http.server import BaseHTTPRequestHandler

    from chalice.config import Config
    from chalice.constants import DEFAULT_APIGATEWAY_STAGE_NAME, DEFAULT_ENDPOINT_TYPE
    from chalice.local import (
        ChaliceRequestHandler,
        CustomLocalChalice,
        LocalChalice,
        LocalDevServer,
        LocalGateway,
        LocalGatewayException,
    )

    from chalicelib.api.routing import not_found_payload

    class EnvelopeRequestHandler(OneLineAccessLog, ChaliceRequestHandler):
        readable = readable_log
        # The headers and the body go out in two writes: with Nagle's algorithm the body waits
        # for the client's delayed ACK of the headers (40 ms on Linux) on a kept-alive
        # connection, as a browser's are.
        disable_nagle_algorithm = True

        def handle_one_request(self) -> None:
            # Once the stop has begun, a request (a new one on a kept-alive connection too) is
            # answered 503 unread: nothing is acknowledged that the last snapshot may miss.
            if not gate.enter():
                self.answer_stopping()
                return
            try:
                self.serve_one(super().handle_one_request)
            finally:
                gate.leave()

        def __init__(self, request: Any, client_address: Any, server: Any, **kw: Any) -> None:
            # API Gateway's `sourceIp` is the caller's address (sign-in throttling counts by it);
            # Chalice's local gateway says 127.0.0.1 for everyone. Its gateway is this
            # connection's own, so the peer address set on it is this caller's alone.
            self.local_gateway = LocalGateway(kw["app_object"], kw["config"])
            self.local_gateway.event_converter.LOCAL_SOURCE_IP = client_address[0]
            BaseHTTPRequestHandler.__init__(self, request, client_address, server)

        def __getattr__(self, name: str) -> Any:
            # Methods Chalice's handler does not list (TRACE, QUERY, …) would get http.server's
            # bare 501; the app answers them 405 in the envelope, as for any method a path lacks.
            if name.startswith("do_"):
                return self._generic_handle
            raise AttributeError(name)

        def _send_error_response(self, error: LocalGatewayException) -> None:
            # A permalink (AGORA_BASE_URL names this server here) opens its post or event in
            # the console (agora_local/permalinks.py).
            target = console_address(self.path) if self.command in ("GET", "HEAD") else None
            if target is not None:
                self._send_http_response(302, {"Location": target, "Content-Length": "0"}, b"")
                return
            # A browser at a mistyped permalink reads a page, not the envelope.
            page = not_found_page(self.path) if wants_html(self.headers.get("Accept")) else None
            if page is not None and self.command in ("GET", "HEAD"):
                headers = {"Content-Type": "text/html; charset=utf-8"}
                self._send_http_response(404, headers, page.encode())
                return
            # Chalice's gateway says 403 "Missing Authentication Token" for a path it does not
            # know, as API Gateway does; Agora answers 404 in the envelope (CONTRACT §6).
            body = json.dumps(not_found_payload()).encode()
            self._send_http_response(404, {"Content-Type": "application/json"}, body)

    import app as app_module

    # What `chalice local` reads (CLIFactory.create_config_obj, whose module would import all of
    # Chalice's command line), for the dev stage.
    config = Config(
        chalice_stage="dev",
        user_provided_params={},
        config_from_disk=json.loads(
            (PROJECT_DIR / ".chalice" / "config.json").read_text(encoding="utf-8")
        ),
        default_params={
            "project_dir": str(PROJECT_DIR),
            "api_gateway_stage": DEFAULT_APIGATEWAY_STAGE_NAME,
            "api_gateway_endpoint_type": DEFAULT_ENDPOINT_TYPE,
            "autogen_policy": True,
        },
    )
    app_object = app_module.app
    CustomLocalChalice.__bases__ = (LocalChalice, app_object.__class__)
    app_object.__class__ = CustomLocalChalice
    return LocalDevServer(app_object, config, host, port, handler_cls=EnvelopeRequestHandler)


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    # Nothing make run prints can stop it, nor its save: not a closed pipe, not a closed terminal.
    keep_writing()
    from chalicelib.settings import SettingsError

    try:
        lock = claim_data_folder()
    except SettingsError as error:
        print(f"make run: {error}", file=sys.stderr)
        return 2
    except FolderInUse as error:
        print(error, file=sys.stderr)
        return 1
    code = serve(arguments, lock)
    if code != 0:
        # It never served: the folder's last stop is still what it was.
        lock.put_back()
    return code


def serve(arguments: argparse.Namespace, lock: FolderLock) -> int:
    """make run's start, its serving and its stop, on the folder `lock` holds."""
    from agora_local.persistence import SnapshotIncompatible
    from chalicelib.settings import SettingsError, reload_settings

    try:
        snapshot = prepare_persistence(arguments.reset)
        key_pair = folder_key_pair(snapshot.folder)
        _prepare_environment(key_pair)
        settings = reload_settings()
    except SettingsError as error:
        print(f"make run: {error}", file=sys.stderr)
        return 2
    try:
        check_ports(settings)
    except PortBusy as busy:
        print(busy, file=sys.stderr)
        return 1
    demo_hashes = start_demo_hashes(settings, snapshot)
    aws_server = start_embedded_aws(settings.aws_port, key_pair)
    endpoint = f"http://127.0.0.1:{settings.aws_port}"
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    # Read again now that they point at the embedded AWS: its defaults follow (mail auth off,
    # private mailbox hosts allowed), as for a CLI given the endpoint.
    settings = reload_settings()

    from chalicelib import aws
    from chalicelib.store.tables import create_tables

    aws.reset()
    export = None
    try:
        restored = restore_data(snapshot, unclean=lock.unclean and not arguments.reset)
    except SnapshotIncompatible as error:
        if error.export is None:
            print(f"make run: {error}", file=sys.stderr)
            aws_server.stop()
            return 2
        print(f"make run: {error}")  # and it goes on, from the export
        restored, export = True, error.export
        exported = read_export(export)
    ensure_kms_key(settings.kms_key_id)
    ensure_queue(settings.mailbox_queue)
    ensure_queue(settings.notify_queue)
    # Where a notification that can never be built goes (services/notify/delivery.py), as in AWS.
    ensure_queue(f"{settings.notify_queue}-dead")
    ensure_mail_sender(settings.sender_address)
    share_token_secret(settings)
    # The embedded DynamoDB makes a table ACTIVE as it creates it: no DescribeTable to wait on.
    created = create_tables(wait=False)
    if export is not None:
        load_export(export, exported)
    migrated = migrate_on_start(created, loaded_export=export is not None)
    credentials = None
    if settings.demo:
        fixture = json.loads(DEMO_FIXTURE.read_text(encoding="utf-8"))
        credentials = demo_root_administrator(fixture)
        # The demo goes only into an empty store: restored data is the administrator's own.
        if not restored:
            from chalicelib import deps

            report = deps.fixture_service().load(demo_hashes.into(fixture))
            print("demo data: " + ", ".join(f"{n} {k}" for k, n in report.counts.items()))
    # The demo's mailboxes on a local Dovecot (made with the demo, served again on later starts).
    mail = serve_local_mail(snapshot.folder, bool(settings.demo and not restored), DEMO_FIXTURE)

    # From here on the first SIGINT or SIGTERM asks for the one orderly stop below; it is only
    # remembered, so that no exception lands in the middle of a save or a job. SIGINT too,
    # explicitly: a process started in the background by a non-interactive shell (a CI runner, a
    # supervisor) inherits SIGINT ignored, and Ctrl-C to the process group would stop nothing.
    stop_request = StopRequest()
    stop_request.install()
    intake = Intake()
    try:
        server = local_server("127.0.0.1", settings.port, intake, readable_log(settings))
    except OSError as error:
        # Taken while the demo data loaded.
        print(busy_port_line(settings.port, "AGORA_PORT", error.strerror), file=sys.stderr)
        aws_server.stop()
        mail.stop()
        return 1
    from agora_local.smtp_door import open_door

    door, door_line = open_door(settings, intake)  # mail in by push (CONTRACT §13)
    # On disk before the banner says it serves (a migration's changes, an export loaded).
    saver = start_snapshots(snapshot, restored, changed=migrated or export is not None)
    # The banner whole before the first request or job line is written: the export lines are
    # pasted into a shell. A request meanwhile waits in the listening socket's queue.
    print_banner(settings, credentials, door_line)
    stopping = threading.Event()
    scheduler = Scheduler(scheduled_jobs(stopping), stopping)
    scheduler.start()
    serving = threading.Thread(target=server.server.serve_forever, name="agora-api", daemon=True)
    serving.start()
    stop_request.wait()
    try:
        orderly_stop(snapshot, saver, intake, scheduler, server, aws_server, mail)
        # Saved: the next start finds a clean stop.
        lock.stopped()
    finally:
        # The local mailboxes last: a poll the stop waited for read them to its end.
        mail.stop()
        if door is not None:
            door.stop()
    return 0


def readable_log(settings: Any) -> bool:
    """A person reads make run's log on a terminal, unless AGORA_LOG_FORMAT chose a format:
    request lines and Agora's own (a job's, a save's) then read alike (readable_agora_lines)."""
    readable = settings.log_format is None and sys.stderr.isatty()
    if readable:
        readable_agora_lines()
    return bool(readable)


class TerminalLines(logging.Formatter):
    """Agora's own log line as a person reads it beside the request lines:
    `[07/Dec/2026 15:40:16] info: scheduled job ran (job="poll-mail" result=…)`."""

    def format(self, record: logging.LogRecord) -> str:
        import time
        from http.server import BaseHTTPRequestHandler

        from chalicelib.logs import TextFormatter

        # http.server's date, as its access lines write it.
        moment = time.localtime(record.created)
        month = BaseHTTPRequestHandler.monthname[moment.tm_mon]
        when = f"{moment.tm_mday:02d}/{month}/{moment.tm_year} {time.strftime('%H:%M:%S', moment)}"
        return f"[{when}] {TextFormatter().format(record)}"


def readable_agora_lines() -> None:
    """Agora's log lines (chalicelib's loggers) written as TerminalLines."""
    from chalicelib.logs import get_logger

    get_logger("scheduler")  # the handler is set up with the first logger
    for handler in logging.getLogger("chalicelib").handlers:
        handler.setFormatter(TerminalLines())


def print_banner(settings: Any, credentials: tuple[str, str] | None, door_line: str = "") -> None:
    """What make run serves, and the variables that give a CLI working on it."""
    print(f"Agora API:          http://127.0.0.1:{settings.port}/api/v1/en_US/")
    print(f"Console:            http://127.0.0.1:{settings.port}/console/")
    if door_line:
        print(door_line)
    print("For the CLI (python -m chalicelib.cli), paste into a shell:")
    for line in export_lines(cli_environment(settings)):
        print(line)
    if credentials:
        print(f"root administrator: {credentials[0]} / {credentials[1]}")
    print("Ctrl-C stops everything.", flush=True)


def start_demo_hashes(settings: Any, snapshot: Any) -> Any:
    """The demo's password hashes (argon2 at full strength, C code that leaves the interpreter
    free), computed beside the start's own work when the demo will be loaded."""
    from agora_local.demo import DemoPasswordHashes

    return DemoPasswordHashes.start(DEMO_FIXTURE, settings.demo and not snapshot.path.exists())


def start_snapshots(snapshot: Any, restored: bool, changed: bool) -> Any:
    """The start's snapshot and the periodic ones. What is served must be on disk before it is
    served when it differs from the restored snapshot (`changed`: a migration's changes, an
    export loaded in place of an unreadable snapshot, which is set aside, so that a start would
    find nothing and load the demo over it) or when the snapshot has no export beside it (an
    older release's folder). Restored data otherwise is on disk as it is served, and new data
    (the demo, which a start loads again) is saved beside the serving: neither delays the first
    answer."""
    if restored and (changed or not snapshot.export_path.exists()):
        snapshot.save()
    return start_periodic_snapshot(snapshot, save_first=not restored)


def start_periodic_snapshot(snapshot: Any, save_first: bool = False) -> Any:
    from agora_local.persistence import PeriodicSnapshot

    saver = PeriodicSnapshot(snapshot, SNAPSHOT_SECONDS, save_first)
    saver.start()
    return saver


def exit_now(code: int) -> None:
    """End the process once everything is saved and stopped: the interpreter's own clean-up of
    the embedded AWS's memory takes seconds on a busy machine and does nothing a restart needs."""
    import logging

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
