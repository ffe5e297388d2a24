"""A mailbox as every layer reads it: where its mail is, its settings and the rhythm of its polls.

The settings service lists mailboxes and the mail-in job polls them (services/mailboxes.py);
the POP3 session opens one (mail/pop3.py); the mail log is keyed by `mailbox_key`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

SYSTEM_SCOPE = "system"
EMAIL_TO_POST = "emailToPost"
EMAIL_TO_COMMENT = "emailToComment"

POST_KEY_PREFIX = "post#"
COMMENT_KEY = "comment#system"


def mailbox_key(scope: str) -> str:
    """The mail-in key of a mailbox: `post#<groupId>`, or `comment#system`."""
    return COMMENT_KEY if scope == SYSTEM_SCOPE else f"{POST_KEY_PREFIX}{scope}"


def account_key(host: str, port: int, username: str) -> str:
    """Which maildrop a UIDL belongs to (short hash: user names need not show in keys)."""
    text = f"{host.strip().lower()}:{int(port)}:{username}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class PollState:
    """A mailbox's rhythm: `next_poll_on` None while it is disabled (services/poll_schedule.py
    decides it)."""

    next_poll_on: datetime | None
    empty_polls: int = 0
    failures: int = 0


@dataclass(frozen=True)
class Mailbox:
    """A mailbox: its settings as the API edits them and, for a poll, its password.

    The one mailbox type: the settings service lists them (password left empty), the mail-in
    job polls them (`MailboxDirectory.mailbox` fills the password in from the same read).
    """

    scope: str  # the group id (email-to-post), or `system` (email-to-comment)
    kind: str  # emailToPost | emailToComment
    server_name: str
    server_port: int
    server_username: str
    is_enabled: bool = True
    is_ssl: bool = True
    delete_processed: bool = False
    last_processed: datetime | None = None
    has_password: bool = False
    password: str = field(default="", repr=False)
    # The address members write to ("" for none): shown on the console, Reply-To of mail out.
    email_address: str = ""
    # The rhythm of its polls (services/poll_schedule.py); next_poll_on None while disabled.
    next_poll_on: datetime | None = None
    empty_polls: int = 0
    poll_failures: int = 0

    @property
    def poll_state(self) -> PollState:
        return PollState(self.next_poll_on, self.empty_polls, self.poll_failures)

    @property
    def group_id(self) -> str | None:
        return None if self.scope == SYSTEM_SCOPE else self.scope

    @property
    def key(self) -> str:
        """The mail-in key: `post#<groupId>`, or `comment#system`."""
        return mailbox_key(self.scope)

    @property
    def is_post(self) -> bool:
        return self.kind == EMAIL_TO_POST

    @property
    def account(self) -> str:
        """Which maildrop its UIDLs belong to (server, port and user name)."""
        return account_key(self.server_name, self.server_port, self.server_username)
