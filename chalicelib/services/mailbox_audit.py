"""What a mailbox's changes record in the audit log (CONTRACT §12): a settings save, "poll now",
and the poll job's email to the administrators of a mailbox that keeps failing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chalicelib.domain import audit
from chalicelib.domain.mailboxes import EMAIL_TO_COMMENT, EMAIL_TO_POST, SYSTEM_SCOPE
from chalicelib.schemas.connectors import POP3S_PORT

# Stored attribute → the API's field name.
AUDITED = {
    "server_name": "serverName",
    "server_port": "serverPort",
    "server_username": "serverUsername",
    "password": "serverPassword",
    "is_enabled": "isEnabled",
    "is_ssl": "isSSL",
    "delete_processed": "deleteProcessed",
    "email_address": "emailAddress",
}
# A mailbox never saved, as its settings answer shows it.
NEVER_SAVED: dict[str, Any] = {
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
    kind: str, scope: str, stored: Any, values: dict[str, Any], now: datetime
) -> list[audit.AuditEntry]:
    """`stored` the settings read (None: never saved), `values` the attributes written (a
    `password` of None keeps the stored one); the password is only said to have changed."""
    before = audit.fields_of(stored, AUDITED) or dict(NEVER_SAVED)
    before["emailAddress"] = before.get("emailAddress") or ""
    after = {**before, **(audit.fields_of(values, AUDITED) or {})}
    if values.get("password") is None:  # kept
        after["serverPassword"] = before["serverPassword"]
    return audit.entry(
        f"{kind}.update",
        target=(kind, scope),
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


def failure_emailed(mailbox: Any, message: str, when: datetime) -> list[audit.AuditEntry]:
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
