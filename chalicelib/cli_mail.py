"""`cli deliver` and `cli sent-mail`: mail in and out of `make run`, tried by hand (CONTRACT §3).

`deliver MAILBOX FILE` puts a mail into one of the POP3 mailboxes `make run` serves with its own
Dovecot: it writes the maildir that `make run` names in its data folder (`mailboxes.json`), as a
mail server delivers (written in `tmp/`, renamed into `new/`). `sent-mail` lists what the embedded
AWS's SES holds, read from its `/moto-api/data.json` page with `make run`'s key pair (HTTP Basic).
Neither imports moto: they speak to files and HTTP only.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import EmailMessage
from itertools import count
from pathlib import Path
from typing import Any

# What `make run` writes into its data folder: each local mailbox, its Dovecot user and maildir.
MAILBOXES_FILE = "mailboxes.json"
# Where `make run` keeps its data when AGORA_DATA_DIR is not set (agora_local's default too).
DEFAULT_DATA_DIR = Path(__file__).resolve().parent.parent / ".agora-run"
# A mail server takes a few tens of MB at most; a file larger than this is not a mail.
MAX_MAIL_BYTES = 25 * 1024 * 1024
COMMENTS = "comments"

_deliveries = count(1)


class MailCommandError(Exception):
    """What the command cannot do, in one line for the person who ran it."""


@dataclass(frozen=True)
class LocalMailbox:
    name: str  # a group id, or `comments`
    label: str  # the group's name and slug, or "email-to-comment"
    slug: str
    maildir: Path


def data_folder() -> Path:
    from chalicelib.settings import get_settings

    configured = get_settings().data_dir
    return Path(configured).expanduser() if configured else DEFAULT_DATA_DIR


def local_mailboxes(folder: Path) -> list[LocalMailbox]:
    """The mailboxes `make run` serves, as its data folder names them."""
    path = folder / MAILBOXES_FILE
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MailCommandError(
            f"no local mailboxes in {folder} ({MAILBOXES_FILE} is missing): start `make run`"
            " (with Dovecot installed: apt-get install dovecot-pop3d), or set AGORA_DATA_DIR"
            " to its data folder"
        ) from None
    except (OSError, ValueError) as error:
        raise MailCommandError(f"{path} cannot be read: {error}") from None
    return [
        LocalMailbox(
            name=str(entry["name"]),
            label=str(entry.get("label", entry["name"])),
            slug=str(entry.get("slug", "")),
            maildir=Path(entry["maildir"]),
        )
        for entry in listed.get("mailboxes", [])
    ]


def find_mailbox(mailboxes: list[LocalMailbox], wanted: str) -> LocalMailbox:
    """By group id or `comments` (CONTRACT §3), or by the group's slug."""
    for mailbox in mailboxes:
        if wanted in (mailbox.name, mailbox.slug) and wanted:
            return mailbox
    known = ", ".join(f"{m.name} ({m.label})" for m in mailboxes) or "none"
    raise MailCommandError(f"no local mailbox {wanted!r}; make run serves: {known}")


def read_mail(source: str) -> bytes:
    try:
        if source == "-":
            raw = sys.stdin.buffer.read(MAX_MAIL_BYTES + 1)
        else:
            with open(source, "rb") as file:
                raw = file.read(MAX_MAIL_BYTES + 1)
    except OSError as error:
        raise MailCommandError(f"{source}: {error.strerror or error}") from None
    if not raw.strip():
        raise MailCommandError(f"{source} is empty: a mail has headers, a blank line, a body")
    if len(raw) > MAX_MAIL_BYTES:
        raise MailCommandError(f"{source} is over {MAX_MAIL_BYTES // (1024 * 1024)} MB")
    return raw


def crlf(raw: bytes) -> bytes:
    """CRLF line ends, ending with one: what a POP3 RETR hands back."""
    lines = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return b"".join(line + b"\r\n" for line in lines)


def write_to_maildir(maildir: Path, raw: bytes) -> Path:
    """Deliver as a mail server does: into `tmp/`, then renamed into `new/`, owned like the
    maildir (Dovecot reads it as the mailbox's user), readable by that user alone."""
    if not (maildir / "new").is_dir() or not (maildir / "tmp").is_dir():
        raise MailCommandError(f"{maildir} is not a maildir: is make run still running?")
    name = f"{time.time_ns()}.P{os.getpid()}Q{next(_deliveries)}.agora-cli"
    staging = maildir / "tmp" / name
    descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(raw)
    owner = maildir.stat()
    if os.geteuid() == 0 and (owner.st_uid, owner.st_gid) != (0, 0):
        os.chown(staging, owner.st_uid, owner.st_gid)
    target = maildir / "new" / name
    staging.rename(target)
    return target


def deliver(mailbox: str, source: str, folder: Path | None = None) -> str:
    """Put the mail of `source` (a file, or - for stdin) into a local mailbox; the line to print."""
    chosen = find_mailbox(local_mailboxes(folder or data_folder()), mailbox)
    raw = crlf(read_mail(source))
    write_to_maildir(chosen.maildir, raw)
    subject = message_from_bytes(raw, policy=policy.compat32).get("Subject", "(no subject)")
    return (
        f"delivered {len(raw):,} bytes ({_one_line(str(subject))}) to {chosen.label}; "
        "Poll now on the console's Settings, or `cli poll-mail`, reads it at once"
    )


# --- sent mail ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SentMail:
    id: str
    sent_on: str
    recipients: list[str]
    subject: str
    reason: str
    raw: bytes


REASON = re.compile(
    r"You receive this email because (?:of your subscription: )?(?P<why>.+?)\.?\s*$", re.M
)


def read_ses(endpoint: str, key_id: str, secret: str) -> list[dict[str, Any]]:
    """The raw messages the embedded SES holds, oldest first, from `/moto-api/data.json`."""
    request = urllib.request.Request(f"{endpoint.rstrip('/')}/moto-api/data.json")
    pair = base64.b64encode(f"{key_id}:{secret}".encode()).decode()
    request.add_header("Authorization", f"Basic {pair}")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            data = json.loads(answer.read())
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            raise MailCommandError(
                f"{endpoint} refused the key pair: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY to the ones make run printed"
            ) from None
        raise MailCommandError(f"{endpoint}/moto-api/data.json answered {error.code}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise MailCommandError(f"cannot reach {endpoint}: {reason}; is make run running?") from None
    except ValueError:
        raise MailCommandError(f"{endpoint}/moto-api/data.json is not JSON") from None
    ses = data.get("ses", {}) if isinstance(data, dict) else {}
    return list(ses.get("RawMessage", []))


def sent_mail(records: list[dict[str, Any]]) -> list[SentMail]:
    """Newest first."""
    found = []
    for record in records:
        raw_data = record.get("raw_data") or ""
        raw = raw_data.encode("utf-8", "surrogateescape") if isinstance(raw_data, str) else b""
        message = message_from_bytes(raw, policy=policy.default)
        assert isinstance(message, EmailMessage)
        recipients = [_one_line(str(d)) for d in record.get("destinations") or []]
        found.append(
            SentMail(
                id=_one_line(str(record.get("id") or record.get("message_id") or "")),
                sent_on=_one_line(str(record.get("sent_on") or _header(message, "Date"))),
                recipients=recipients or [_one_line(_header(message, "To"))],
                subject=_one_line(_header(message, "Subject")),
                reason=_reason(message),
                raw=raw,
            )
        )
    return found[::-1]


def _header(message: EmailMessage, name: str) -> str:
    try:
        return str(message.get(name, ""))
    except (ValueError, TypeError, LookupError):
        return ""


def _reason(message: EmailMessage) -> str:
    try:
        part = message.get_body(preferencelist=("plain",))
        text = part.get_content() if part is not None else ""
    except (KeyError, LookupError, ValueError, TypeError):
        return ""
    match = REASON.search(str(text))
    return _one_line(match.group("why")) if match else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _matches(mail: SentMail, address: str) -> bool:
    wanted = address.strip().lower()
    return any(wanted in recipient.lower() for recipient in mail.recipients)


def show_sent_mail(
    mails: list[SentMail], to: str | None, last: int, raw_id: str | None
) -> list[str]:
    if raw_id is not None:
        for mail in mails:
            if mail.id == raw_id:
                return [mail.raw.decode("utf-8", "replace")]
        raise MailCommandError(f"no sent mail has the id {raw_id!r} (`cli sent-mail` lists them)")
    chosen = [m for m in mails if to is None or _matches(m, to)][:last]
    if not chosen:
        return ["no mail sent" + (f" to {to}" if to else "") + " yet"]
    lines = []
    for mail in chosen:
        lines.append(f"{mail.id}  {_when(mail.sent_on)}  to {', '.join(mail.recipients)}")
        lines.append(f"    {mail.subject or '(no subject)'}")
        if mail.reason:
            lines.append(f"    why: {mail.reason}")
    return lines


def _when(text: str) -> str:
    try:
        return datetime.fromisoformat(text).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return text or "(date unknown)"


def sent_mail_lines(to: str | None, last: int, raw_id: str | None) -> list[str]:
    endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
    if not endpoint:
        raise MailCommandError(
            "sent-mail reads make run's embedded AWS: set AWS_ENDPOINT_URL (make run prints it)"
        )
    key_id = os.environ.get("AWS_ACCESS_KEY_ID", "")
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
    return show_sent_mail(sent_mail(read_ses(endpoint, key_id, secret)), to, last, raw_id)


def print_lines(lines: Sequence[str]) -> None:
    try:
        for line in lines:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:
        # A reader that stopped early (`| head -1`) had what it wanted; nothing more to say.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class MailboxNames:
    """A poll's line as people name its mailbox: `Gardening (gardening): …` for a group's
    email-to-post mailbox, `comments: …` for the email-to-comment one (as `deliver` names it),
    rather than the store's key (`post#<group id>`)."""

    def __init__(self) -> None:
        self.known: dict[str, str] = {}

    def __call__(self, line: str) -> str:
        key, colon, rest = line.partition(": ")
        return f"{self.name(key)}{colon}{rest}"

    def name(self, key: str) -> str:
        if key not in self.known:
            self.known[key] = self._look_up(key)
        return self.known[key]

    @staticmethod
    def _look_up(key: str) -> str:
        from chalicelib import deps
        from chalicelib.domain.mailboxes import COMMENT_KEY, POST_KEY_PREFIX

        if key == COMMENT_KEY:
            return COMMENTS
        if not key.startswith(POST_KEY_PREFIX):
            return key
        group = deps.groups().get(key.removeprefix(POST_KEY_PREFIX))
        return key if group is None else f"{group.name} ({group.slug})"
