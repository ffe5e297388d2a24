"""What a mailbox's changes record in the audit log (CONTRACT §12): a settings save, "poll now",
and the poll job's email to the administrators of a mailbox that keeps failing."""

from __future__ import annotations

from datetime import datetime

from chalicelib.domain import audit
from chalicelib.domain.mailboxes import (
    EMAIL_TO_COMMENT,
    EMAIL_TO_POST,
    SYSTEM_SCOPE,
    Mailbox,
    MailboxEdit,
)
from chalicelib.schemas.connectors import POP3S_PORT

# Attribute → the API's field name (the password compared as its ciphertext).
AUDITED = {
    "server_name": "serverName",
    "server_port": "serverPort",
    "server_username": "serverUsername",
    "is_enabled": "isEnabled",
    "is_ssl": "isSSL",
    "delete_processed": "deleteProcessed",
    "email_address": "emailAddress",
}
# A mailbox never saved, as its settings answer shows it.
NEVER_SAVED: audit.Fields = {
    "serverName": "",
    "serverPort": POP3S_PORT,
    "serverUsername": "",
    "serverPassword": None,
    "isEnabled": False,
    "isSSL": True,
    "deleteProcessed": False,
    "emailAddress": "",
}


def _group_of(scope: str) -> str | None:
    return None if scope == SYSTEM_SCOPE else scope


def settings_saved(
    scope: str, stored: Mailbox | None, edit: MailboxEdit, now: datetime
) -> list[audit.AuditEntry]:
    """`stored` the settings read (None: never saved), `edit` what is written (a password or
    address of None keeps the stored one); the password is only said to have changed."""
    before = dict(NEVER_SAVED)
    if stored is not None:
        before = {
            **(audit.fields_of(stored, AUDITED) or {}),
            "serverPassword": stored.password_ciphertext,
        }
    before["emailAddress"] = before.get("emailAddress") or ""
    after = {**before, **(audit.fields_of(edit, AUDITED) or {})}
    if edit.password is not None:
        after["serverPassword"] = edit.password
    if edit.email_address is None:  # kept
        after["emailAddress"] = before["emailAddress"]
    return audit.entry(
        f"{edit.kind}.update",
        target=(edit.kind, scope),
        group_id=_group_of(scope),
        before=before,
        after=after,
        secrets={"serverPassword"},
        at=now,
    )


def poll_asked(scope: str, now: datetime) -> list[audit.AuditEntry]:
    kind = EMAIL_TO_COMMENT if scope == SYSTEM_SCOPE else EMAIL_TO_POST
    return audit.entry(
        "mailbox.poll",
        target=(kind, scope),
        group_id=_group_of(scope),
        before=None,
        after=None,
        always=True,
        at=now,
    )


def failure_emailed(mailbox: Mailbox, message: str, when: datetime) -> list[audit.AuditEntry]:
    """The poll job's own decision to tell the administrators, recorded with it."""
    return audit.entry(
        "mailbox.failureEmail",
        target=(mailbox.kind, mailbox.scope),
        group_id=mailbox.group_id,
        before={"lastError": None},
        after={"lastError": message},
        always=True,
        at=when,
    )
