"""A real Dovecot POP3 server on loopback for tests (see shared/notes/dovecot.md).

Dovecot runs from its own config in a temp folder: plain POP3 and POP3S on free 127.0.0.1 ports,
a throwaway self-signed certificate (point `SSL_CERT_FILE` at `cert_path` to trust it), and
maildir mailboxes for as many users as a test suite wants. It has to run as root: Dovecot starts
its login processes as `dovenull` and the mailboxes belong to the system user `mail`.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from itertools import count as counter
from pathlib import Path
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from chalicelib.services.mailboxes import Mailbox

HOST = "127.0.0.1"
START_TIMEOUT_SECONDS = 15.0
STOP_TIMEOUT_SECONDS = 10.0


class DovecotUnavailable(RuntimeError):
    """Dovecot is not installed here, or we are not root; the caller decides skip or fail."""


class DovecotStartError(RuntimeError):
    """Dovecot was there but did not come up; the message carries its log."""


def dovecot_binary() -> str:
    """Path of the `dovecot` binary, or `DovecotUnavailable` saying why it cannot run."""
    # /usr/sbin is not on every PATH (e.g. a non-login shell in CI), so look there too.
    binary = shutil.which("dovecot") or shutil.which("dovecot", path="/usr/sbin:/usr/local/sbin")
    if binary is None:
        raise DovecotUnavailable(
            "dovecot is not installed (apt-get install -y dovecot-pop3d; `make` does it)"
        )
    if os.geteuid() != 0:
        raise DovecotUnavailable("the test Dovecot must run as root (see shared/notes/dovecot.md)")
    return binary


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


class Dovecot:
    """Start with `start()` (or `with Dovecot() as server:`), stop with `stop()`."""

    def __init__(self) -> None:
        self.binary = dovecot_binary()
        self.host = HOST
        self.root = Path(tempfile.mkdtemp(prefix="agora-dovecot-"))
        # The unprivileged login and mail processes must be able to walk into the folder.
        self.root.chmod(0o755)
        self.config_path = self.root / "dovecot.conf"
        self.passwd_dir = self.root / "passwd.d"
        self.log_path = self.root / "dovecot.log"
        self.base_dir = self.root / "run"
        self.state_dir = self.root / "state"
        self.mail_root = self.root / "mail"
        self.cert_path = self.root / "cert.pem"
        self.key_path = self.root / "key.pem"
        self.pop3_port = free_loopback_port()
        self.pop3s_port = free_loopback_port()
        self.mail_uid = pwd.getpwnam("mail").pw_uid
        self.mail_gid = grp.getgrnam("mail").gr_gid
        self._passwords: dict[str, str] = {}
        self._delivery_numbers = counter(1)
        self._is_running = False

    # --- life cycle -------------------------------------------------------------------------

    def start(self) -> Self:
        for folder in (self.base_dir, self.state_dir, self.mail_root):
            folder.mkdir(mode=0o755, exist_ok=True)
        self.passwd_dir.mkdir(mode=0o755, exist_ok=True)
        self._make_certificate()
        self.config_path.write_text(self._config())
        # `dovecot -c` checks the config, then daemonises; its pid lands in base_dir/master.pid.
        # Its output goes to a file, not a pipe: the daemon inherits the pipe and would keep
        # `run` waiting for an end of file that never comes.
        startup_output = self.root / "startup.out"
        with startup_output.open("wb") as output:
            started = subprocess.run(
                [self.binary, "-c", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=START_TIMEOUT_SECONDS,
                check=False,
            )
        if started.returncode != 0:
            said = startup_output.read_text(errors="replace").strip()
            raise DovecotStartError(
                f"dovecot exited {started.returncode}: {said}\nlog:\n{self.log_text()}"
            )
        self._is_running = True
        try:
            self._wait_until_listening()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server and remove its temp folder (mailboxes included)."""
        if self._is_running:
            self._is_running = False
            pid = self._master_pid()
            if pid is not None:
                self._terminate(pid)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no dovecot log)"

    # --- mailboxes --------------------------------------------------------------------------

    def add_user(self, name: str, password: str) -> None:
        """A mailbox user, usable at once (no reload needed)."""
        if not re.fullmatch(r"[A-Za-z0-9._-]+", name) or name.startswith("."):
            raise ValueError("a mailbox user name is letters, digits, '.', '_' or '-'")
        if ":" in password or "\n" in password:
            raise ValueError("a passwd-file password cannot hold ':' or newlines")
        if name in self._passwords:
            raise ValueError(f"user {name!r} exists already")
        home = self.mail_root / name
        for folder in ("new", "cur", "tmp"):
            (home / "Maildir" / folder).mkdir(parents=True, exist_ok=True)
        for path in (home, *home.rglob("*")):
            os.chown(path, self.mail_uid, self.mail_gid)
        self._passwords[name] = password
        line = f"{name}:{{PLAIN}}{password}:{self.mail_uid}:{self.mail_gid}::{home}\n"
        # One passwd-file per user (`args = …/%u`): Dovecot checks a loaded passwd-file for
        # changes at most once a second, so a user appended to a shared file right after a login
        # stays unknown for a while; a file it has never read has no such delay.
        (self.passwd_dir / name).write_text(line)

    def deliver(self, user: str, raw: bytes, *, as_sent: bool = False) -> bytes:
        """Put a mail into the user's `Maildir/new` and return the bytes as stored.

        Line ends become CRLF and the mail ends with one, so what is stored is exactly what a
        POP3 RETR hands back; `as_sent` stores the bytes untouched instead (a bare CR, as a
        mail path that keeps them delivers it). Written in `tmp/` and renamed, as the maildir
        format asks, so the server never sees half a file.
        """
        maildir = self._maildir(user)
        stored = raw if as_sent else normalise_line_ends(raw)
        name = f"{time.time_ns()}.P{os.getpid()}Q{next(self._delivery_numbers)}.agora-tests"
        staging = maildir / "tmp" / name
        staging.write_bytes(stored)
        os.chown(staging, self.mail_uid, self.mail_gid)
        staging.rename(maildir / "new" / name)
        return stored

    def count(self, user: str) -> int:
        """Messages on disk for the user (new and seen), whatever POP3 sessions are open."""
        maildir = self._maildir(user)
        return sum(
            1
            for folder in ("new", "cur")
            for path in (maildir / folder).iterdir()
            if path.is_file()
        )

    def password(self, user: str) -> str:
        return self._passwords[user]

    # --- internals --------------------------------------------------------------------------

    def _maildir(self, user: str) -> Path:
        if user not in self._passwords:
            raise KeyError(f"no mailbox user {user!r}; call add_user first")
        return self.mail_root / user / "Maildir"

    def _make_certificate(self) -> None:
        # The SAN lets clients that connect to 127.0.0.1 or localhost verify the hostname.
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                str(self.key_path),
                "-out",
                str(self.cert_path),
                "-days",
                "2",
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ],
            capture_output=True,
            check=True,
            timeout=60,
        )

    def _config(self) -> str:
        return f"""\
protocols = pop3
listen = {self.host}
base_dir = {self.base_dir}
state_dir = {self.state_dir}
log_path = {self.log_path}
default_login_user = dovenull
default_internal_user = dovecot
first_valid_uid = 1
mail_location = maildir:~/Maildir
# UIDLs from the message's IMAP UID alone: every mailbox's first mail is 00000001, as two
# accounts on different servers can collide in real life (RFC 1939: unique per maildrop only).
pop3_uidl_format = %08Xu
disable_plaintext_auth = no
auth_mechanisms = plain
# A wrong password is answered at once, not after Dovecot's default 2 seconds.
auth_failure_delay = 0
auth_verbose = yes
# Dovecot's children keep its clock: under `faketime` (the suite's date tests) a child started
# without libfaketime's variables runs at the real date, the master sees time move back years,
# and launches no service for 180 s (every login then times out).
import_environment = TZ CORE_OUTOFMEM CORE_ERROR LISTEN_PID LISTEN_FDS LD_PRELOAD FAKETIME
ssl = yes
ssl_cert = <{self.cert_path}
ssl_key = <{self.key_path}
passdb {{
  driver = passwd-file
  args = {self.passwd_dir}/%u
}}
userdb {{
  driver = passwd-file
  args = {self.passwd_dir}/%u
}}
# No auth penalty: Dovecot delays every login from an address after a failed one (2, 4, 8 s, up
# to 15 s, until one succeeds), and every test connects from 127.0.0.1, so one test's wrong
# password slowed the next tests' logins. The socket closed is Dovecot's documented way to turn
# the penalty off; each failure still fails.
service anvil {{
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
service pop3-login {{
  inet_listener pop3 {{
    port = {self.pop3_port}
  }}
  inet_listener pop3s {{
    port = {self.pop3s_port}
    ssl = yes
  }}
}}
"""

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        waiting_for = {self.pop3_port, self.pop3s_port}
        while waiting_for:
            for port in sorted(waiting_for):
                try:
                    with socket.create_connection((self.host, port), timeout=1):
                        waiting_for.discard(port)
                except OSError:
                    pass
            if not waiting_for:
                return
            if time.monotonic() > deadline:
                raise DovecotStartError(
                    f"dovecot did not listen on {sorted(waiting_for)} within "
                    f"{START_TIMEOUT_SECONDS:.0f}s; log:\n{self.log_text()}"
                )
            time.sleep(0.05)

    def _master_pid(self) -> int | None:
        try:
            return int((self.base_dir / "master.pid").read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _terminate(self, pid: int) -> None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if not _is_alive(pid):
                return
            time.sleep(0.05)
        # The master ignored SIGTERM for too long: do not leave it holding the ports.
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclass(frozen=True)
class DovecotMailbox:
    """A user's mailbox on the test Dovecot, and the settings that point mail in at it."""

    server: Dovecot
    user: str
    password: str

    def deliver(self, raw: bytes, *, as_sent: bool = False) -> bytes:
        return self.server.deliver(self.user, raw, as_sent=as_sent)

    def count(self) -> int:
        return self.server.count(self.user)

    def api_settings(self) -> dict[str, object]:
        """The connector settings (CONTRACT §8, as the API takes them) that name this mailbox."""
        return {
            "serverName": self.server.host,
            "serverPort": self.server.pop3_port,
            "serverUsername": self.user,
            "serverPassword": self.password,
            "isEnabled": True,
            "isSSL": False,
            "deleteProcessed": True,
        }

    def connector(self, scope: str, *, delete: bool = True, ssl: bool = False) -> Mailbox:
        """The mailbox settings that point mail in at this mailbox: email-to-post of the group
        `scope`, or email-to-comment when `scope` is "system"."""
        from chalicelib.services.mailboxes import Mailbox

        return Mailbox(
            scope=scope,
            kind="emailToComment" if scope == "system" else "emailToPost",
            server_name=self.server.host,
            server_port=self.server.pop3s_port if ssl else self.server.pop3_port,
            server_username=self.user,
            password=self.password,
            is_ssl=ssl,
            delete_processed=delete,
        )


def _is_alive(pid: int) -> bool:
    # The daemonised master is not our child, so we cannot wait() for it; where PID 1 does not
    # reap orphans (containers) it stays a zombie, which is as good as gone.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def normalise_line_ends(raw: bytes) -> bytes:
    """CRLF everywhere, ending with one (a bare CR or LF becomes CRLF)."""
    lines = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return b"".join(line + b"\r\n" for line in lines)
