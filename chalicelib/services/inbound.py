"""Which mailbox a pushed mail's recipient is (CONTRACT §13): the addresses Agora receives itself.

On the inbound domain (AGORA_MAIL_INBOUND_DOMAIN), `<group slug>@domain` is that group's
email-to-post mailbox while its connector is enabled; the email-to-comment connector's
`emailAddress`, when it is on the domain, and its `+KEY` forms are the comments mailbox while it is
enabled. Every other address (another domain, an unknown local part, a disabled connector) is
none: make run's SMTP door refuses it at RCPT, SES's verdict function stops the mail.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from chalicelib.domain.groups import Group
from chalicelib.domain.mailboxes import EMAIL_TO_COMMENT, SYSTEM_SCOPE, Mailbox
from chalicelib.errors import ValidationFailed

if TYPE_CHECKING:
    from chalicelib.schemas.connectors import MailboxSettingsUpdate


class GroupsBySlug(Protocol):
    def by_slug(self, slug: str) -> Group | None: ...


class MailboxReader(Protocol):
    def get(self, scope: str) -> Mailbox | None: ...


def split_address(address: str) -> tuple[str, str] | None:
    """(local part, domain) of an envelope address, both lower-cased; None when it is none."""
    text = address.strip().strip("<>").strip().lower()
    local, at, domain = text.rpartition("@")
    if not at or not local or not domain:
        return None
    return local, domain.rstrip(".")


class InboundAddresses:
    def __init__(self, domain: str, groups: GroupsBySlug, mailboxes: MailboxReader) -> None:
        self.domain = domain.strip().lower().rstrip(".")
        self.groups = groups
        self.mailboxes = mailboxes

    def mailbox_of(self, address: str) -> Mailbox | None:
        """The enabled mailbox that mail to `address` goes to, or None when Agora takes none."""
        parts = split_address(address)
        if not self.domain or parts is None or parts[1] != self.domain:
            return None
        local = parts[0]
        comments = self.mailboxes.get(SYSTEM_SCOPE)
        if comments is not None and comments.is_enabled and self._is_comments(local, comments):
            return comments
        group = self.groups.by_slug(local)
        if group is None:
            return None
        mailbox = self.mailboxes.get(group.id)
        return mailbox if mailbox is not None and mailbox.is_enabled else None

    def _is_comments(self, local: str, comments: Mailbox) -> bool:
        """The comments address itself, or its `+KEY` form (a reply key, CONTRACT §9)."""
        own = split_address(comments.email_address)
        if own is None or own[1] != self.domain:
            return False
        return local == own[0] or local.startswith(own[0] + "+")

    def mailboxes_of(self, recipients: Iterable[str]) -> list[Mailbox]:
        """The mailboxes of a mail's envelope recipients, each once, in the recipients' order."""
        found: dict[str, Mailbox] = {}
        for address in recipients:
            mailbox = self.mailbox_of(address)
            if mailbox is not None:
                found.setdefault(mailbox.key, mailbox)
        return list(found.values())


def check_push_only(
    domain: str, kind: str, update: MailboxSettingsUpdate, stored: Mailbox | None
) -> None:
    """A connector saved enabled with no POP3 server receives by push only: where there is an
    inbound domain, and the comments' only at an address on it (the update's, else the
    `stored` one). Raises the 400 that says what is missing."""
    if not update.is_enabled:
        return
    if not domain:
        raise ValidationFailed.one(
            "serverName",
            "",
            "must name the POP3 server: this Agora receives no mail by push (no inbound "
            "domain is set)",
        )
    if kind != EMAIL_TO_COMMENT:
        return
    address = update.email_address
    if address is None:
        address = stored.email_address if stored is not None else ""
    parts = split_address(address)
    if parts is None or parts[1] != domain:
        raise ValidationFailed.one(
            "emailAddress",
            address,
            f"a push-only email-to-comment connector receives at an address @{domain}: "
            "give one, or name the POP3 server",
        )
