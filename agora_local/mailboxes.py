"""make run's own POP3 mailboxes: a real Dovecot on loopback, so mail in can be tried end to end.

One mailbox per group (its email-to-post connector) and one for email-to-comment (`comments`),
maildirs that `cli deliver` writes into (their paths in the data folder's `mailboxes.json`), and
the demo's connectors saved pointing at them, passwords encrypted as every saved password is.
Dovecot runs in the foreground as make run's child, from its own config, plain POP3 on a loopback
port kept with the data (`mail.json`, the owner's alone: it holds the mailbox passwords), and
stops after make run's last save. It lives in the data folder's `mail/` (700, its files 600), so a
mail delivered and not yet polled is there after a restart. It runs in a session of its own: the
Ctrl-C meant for make run does not end it under a poll, make run stops it once everything is
saved. As root (a container) its login processes run as `dovenull`, its authentication as root
(it reads the passwd file, 600), and each mailbox's process as `mail`, chrooted into
`mail/users` (owned by `mail`, 700): none of them needs to enter the data folder itself. As
anyone else it runs as that user. Where Dovecot is missing, make run says how to get it and
starts without mailboxes.
"""

from __future__ import annotations

import ctypes
import grp
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from chalicelib.cli_mail import COMMENTS, MAILBOXES_FILE

STATE_FILE = "mail.json"
HOST = "127.0.0.1"
START_SECONDS = 15.0
INSTALL_HINT = (
    "Debian/Ubuntu: sudo apt-get install dovecot-pop3d (make test installs it too), then "
    "make run RESET=1 wires the demo's mailboxes to it"
)


@dataclass(frozen=True)
class Account:
    name: str  # the Dovecot user: a group id, or `comments`
    label: str
    slug: str
    password: str


def dovecot_binary() -> str | None:
    # /usr/sbin is not on every PATH (a non-login shell).
    return shutil.which("dovecot") or shutil.which("dovecot", path="/usr/sbin:/usr/local/sbin")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _write_private(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)
    partial.replace(path)


RUNTIME_PREFIX = "agora-run-mail-"
OWNER_FILE = "owner.pid"
MAIL_FOLDER = "mail"
MAILDIR_PARTS = ("new", "cur", "tmp")


def reset_local_mail(folder: Path) -> list[str]:
    """Delete the local mailboxes and their mail (`make run RESET=1`); answers what was deleted,
    in words."""
    root = folder / MAIL_FOLDER
    deleted = []
    if root.exists():
        waiting = sum(1 for part in ("new", "cur") for _ in root.glob(f"users/*/Maildir/{part}/*"))
        shutil.rmtree(root, ignore_errors=True)
        deleted.append(f"the local mailboxes with {waiting} mails waiting ({MAIL_FOLDER}/)")
    (folder / STATE_FILE).unlink(missing_ok=True)
    return deleted


def remove_abandoned(temporary: Path) -> None:
    """The folders an older make run kept its mailboxes in under /tmp as root, once their
    process is gone (Dovecot went with it)."""
    for folder in temporary.glob(f"{RUNTIME_PREFIX}*"):
        try:
            owner = int((folder / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            continue


def _runtime_folder() -> Path:
    """Dovecot's sockets, in a short private folder of the system's temp folder: a socket's
    path holds at most 107 bytes (sun_path), and Dovecot's longest adds 23 to its base_dir, so
    a data folder a little deep (a project under a home folder, a test's tmp_path) made Dovecot
    fail to start ("File name too long"). Nothing in it outlives the run: the mail and passwd
    stay in the data folder; a run killed outright leaves it to the next start's clean-up."""
    runtime = Path(tempfile.mkdtemp(prefix=RUNTIME_PREFIX))
    _write_private(runtime / OWNER_FILE, str(os.getpid()))
    return runtime


class LocalPop3:
    """Dovecot serving `accounts` on `port`; `start()`, then `stop()` when make run stops."""

    def __init__(self, folder: Path, port: int, accounts: list[Account], binary: str) -> None:
        self.folder = folder
        self.port = port
        self.accounts = accounts
        self.binary = binary
        self.as_root = os.geteuid() == 0
        self.runtime: Path | None = None
        self.root = folder / MAIL_FOLDER
        self.root.mkdir(mode=0o700, exist_ok=True)
        self.root.chmod(0o700)
        self.users = self.root / "users"
        self.users.mkdir(mode=0o700, exist_ok=True)
        # Runtime folders of runs that are gone (and, as root, the mailboxes of the releases
        # that kept them under /tmp).
        remove_abandoned(Path(tempfile.gettempdir()))
        if self.as_root:
            self.uid, self.gid = pwd.getpwnam("mail").pw_uid, grp.getgrnam("mail").gr_gid
            os.chown(self.users, self.uid, self.gid)
        else:
            self.uid, self.gid = os.getuid(), os.getgid()
        self.process: subprocess.Popen[bytes] | None = None

    def maildir(self, account: Account) -> Path:
        return self.users / account.name / "Maildir"

    def _home(self, account: Account) -> str:
        # As root, `users/./NAME`: Dovecot chroots the mailbox's process into `users` (as root,
        # so the data folder's 700 is no obstacle), then it is `mail` in /NAME.
        if self.as_root:
            return f"{self.users}/./{account.name}"
        return str(self.users / account.name)

    def start(self) -> LocalPop3:
        passwd = self.root / "passwd"
        lines = []
        for account in self.accounts:
            home = self.maildir(account).parent
            # 700 each: Dovecot gives the files it makes in a maildir the maildir's mode, less x.
            for path in (home, home / "Maildir", *(home / "Maildir" / p for p in MAILDIR_PARTS)):
                path.mkdir(mode=0o700, exist_ok=True)
                path.chmod(0o700)
            if self.as_root:
                for path in (home, *home.rglob("*")):
                    os.chown(path, self.uid, self.gid)
            lines.append(
                f"{account.name}:{{PLAIN}}{account.password}:{self.uid}:{self.gid}::"
                f"{self._home(account)}\n"
            )
        # Read by Dovecot's authentication process, which runs as root when make run does.
        _write_private(passwd, "".join(lines))
        (self.root / "state").mkdir(mode=0o700, exist_ok=True)
        self.runtime = _runtime_folder()
        config = self.root / "dovecot.conf"
        _write_private(config, self._config(passwd))
        log = os.fdopen(
            os.open(self.root / "dovecot.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb"
        )
        self.process = subprocess.Popen(
            [self.binary, "-F", "-c", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Its own session: Ctrl-C (SIGINT to the terminal's process group) and a closed
            # terminal's SIGHUP reach make run, which stops Dovecot after its save; Dovecot
            # still ends when make run is killed outright (PDEATHSIG).
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        self._wait_until_listening()
        self._private_state()
        self._publish()
        return self

    def _private_state(self) -> None:
        """What Dovecot's master writes for itself (its list of instances) the owner's alone."""
        for path in (self.root / "state").iterdir():
            if path.is_file() and not path.is_symlink():
                path.chmod(0o600)

    def stop_soon(self) -> None:
        """Tell Dovecot to end, without waiting: it takes a second, spent beside the rest of the
        stop; `stop` then waits for it."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self._private_state()
        if self.runtime is not None:
            shutil.rmtree(self.runtime, ignore_errors=True)
            self.runtime = None
        # The maildirs stay, with the mail not yet polled: the next start serves them again.
        (self.folder / MAILBOXES_FILE).unlink(missing_ok=True)

    def _publish(self) -> None:
        """Where `cli deliver` writes each mailbox's mail."""
        listed = [
            {"name": a.name, "label": a.label, "slug": a.slug, "maildir": str(self.maildir(a))}
            for a in self.accounts
        ]
        _write_private(self.folder / MAILBOXES_FILE, json.dumps({"mailboxes": listed}, indent=1))

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                break
            try:
                with socket.create_connection((HOST, self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        said = (self.root / "dovecot.out").read_text(errors="replace").strip()
        self.stop()
        raise RuntimeError(f"Dovecot did not start on {HOST}:{self.port}: {said[-400:]}")

    def _auth_service(self) -> str:
        # As root the passwd file stays root's (600): its reader runs as root too.
        return _auth_service_as("root" if self.as_root else None)

    def _config(self, passwd: Path) -> str:
        if self.as_root:
            users = (
                "default_login_user = dovenull\ndefault_internal_user = dovecot\n"
                f"valid_chroot_dirs = {self.users}\n"
            )
            chroot = ""
        else:
            me = pwd.getpwuid(os.getuid()).pw_name
            group = grp.getgrgid(os.getgid()).gr_name
            users = (
                f"default_login_user = {me}\ndefault_internal_user = {me}\n"
                f"default_internal_group = {group}\n"
            )
            # Dovecot without root: no chroot for the login processes (its "rootless" setup).
            chroot = "  chroot =\n"
        return f"""\
protocols = pop3
listen = {HOST}
base_dir = {self.runtime}
state_dir = {self.root / "state"}
log_path = {self.root / "dovecot.log"}
{users}first_valid_uid = 1
mail_location = maildir:~/Maildir
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
auth_failure_delay = 0
passdb {{
  driver = passwd-file
  args = {passwd}
}}
userdb {{
  driver = passwd-file
  args = {passwd}
}}
{self._auth_service()}service anvil {{
{chroot}  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
service pop3-login {{
{chroot}  inet_listener pop3 {{
    port = {self.port}
  }}
}}
"""


def _auth_service_as(user: str | None) -> str:
    return f"service auth {{\n  user = {user}\n}}\n" if user else ""


def _die_with_parent() -> None:
    """Dovecot ends with make run even when make run is killed outright (Linux's PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _accounts(groups: list[Any], passwords: dict[str, str]) -> list[Account]:
    accounts = [
        Account(g.id, f"{g.name} ({g.slug})", g.slug, passwords.get(g.id) or secrets.token_hex(16))
        for g in groups
    ]
    comments = passwords.get(COMMENTS) or secrets.token_hex(16)
    return [*accounts, Account(COMMENTS, "email-to-comment", "", comments)]


def _stored_groups() -> list[Any]:
    from chalicelib import deps

    found: list[Any] = []
    while True:
        page = deps.groups().by_name(limit=100, after=found[-1] if found else None)
        if not page:
            return found
        found.extend(page)


def wire_connectors(accounts: list[Account], port: int, editor_id: str, site_host: str) -> None:
    """The connectors' saved settings point at the local mailboxes (what an administrator's PUT
    saves: the password encrypted with the KMS key)."""
    from chalicelib import deps
    from chalicelib.schemas.connectors import MailboxSettingsUpdate

    service = deps.mailbox_settings_service()
    for account in accounts:
        name = account.slug or "comments"
        update = MailboxSettingsUpdate.model_validate(
            {
                "serverName": HOST,
                "serverPort": port,
                "serverUsername": account.name,
                "serverPassword": account.password,
                "isEnabled": True,
                "isSSL": False,
                "deleteProcessed": True,
                "emailAddress": f"{name}@{site_host}",
            }
        )
        if account.name == COMMENTS:
            service.update_email_to_comment(update, editor_id)
        else:
            group = deps.groups().get(account.name)
            if group is None:
                raise LookupError(f"no group {account.name!r} for its local mailbox")
            service.update_email_to_post(group, update, editor_id)


def record_send_times() -> None:
    """Each mail the embedded SES takes keeps the time it was sent (`sent_on`, which its
    /moto-api/data.json page shows and `cli sent-mail` lists): moto keeps none."""
    from moto.ses.models import SESBackend

    send = SESBackend.send_raw_email
    if getattr(send, "records_send_time", False):
        return

    def send_raw_email(self: Any, *args: Any, **kwargs: Any) -> Any:
        sent = send(self, *args, **kwargs)
        sent.sent_on = datetime.now(UTC).isoformat()
        return sent

    send_raw_email.records_send_time = True  # type: ignore[attr-defined]
    SESBackend.send_raw_email = send_raw_email


def root_administrator_id(fixture: dict[str, Any]) -> str | None:
    """The fixture's first root group administrator: who saved the demo's mailbox settings (a
    failing mailbox's email goes to them)."""
    root = next((g["id"] for g in fixture.get("groups", []) if g.get("parentId") is None), None)
    for user in fixture.get("users", []):
        if any(
            m.get("groupId") == root and m.get("role") == "administrator"
            for m in user.get("memberships", [])
        ):
            return str(user["id"])
    return None


class NoMailboxes:
    """What make run stops when it serves no local mailboxes."""

    def stop_soon(self) -> None:
        pass

    def stop(self) -> None:
        pass


def serve_local_mail(
    folder: Path,
    demo_loaded: bool,
    demo: Path,
    find_dovecot: Callable[[], str | None] = dovecot_binary,
) -> LocalPop3 | NoMailboxes:
    """Start the local mailboxes: made and wired to the connectors when the demo (its fixture
    `demo`) was just loaded, served again from `mail.json` on later starts; NoMailboxes (and one
    line saying why) without them. Whatever becomes of them, the embedded SES records when it
    sends from here on."""
    from chalicelib.settings import get_settings

    record_send_times()
    state_path = folder / STATE_FILE
    binary = find_dovecot()
    if not demo_loaded and not state_path.exists():
        return NoMailboxes()
    if binary is None:
        print(
            f"mail: Dovecot is not installed, so make run serves no local mailboxes ({INSTALL_HINT})"
        )
        return NoMailboxes()
    if demo_loaded:
        accounts = _accounts(_stored_groups(), {})
        port = _free_port()
        state = {"port": port, "passwords": {a.name: a.password for a in accounts}}
        _write_private(state_path, json.dumps(state, indent=1))
    else:
        state = json.loads(state_path.read_text(encoding="utf-8"))
        port = int(state["port"])
        accounts = _accounts(
            [g for g in _stored_groups() if g.id in state["passwords"]], state["passwords"]
        )
    try:
        server = LocalPop3(folder, port, accounts, binary).start()
    except (RuntimeError, OSError) as error:
        print(f"mail: no local mailboxes: {error}")
        return NoMailboxes()
    editor_id = root_administrator_id(json.loads(demo.read_text(encoding="utf-8")))
    if demo_loaded and editor_id:
        # The demo's people write from agora.example; its groups' addresses live there too.
        host = urlsplit(get_settings().public_base_url).hostname or "localhost"
        host = "agora.example" if host in ("localhost", HOST) else host
        wire_connectors(accounts, port, editor_id, host)
    print(
        f"mail: {len(accounts)} local POP3 mailboxes on {HOST}:{port} "
        "(`python -m chalicelib.cli deliver GROUP-ID|comments FILE` puts a mail in one)"
    )
    return server
