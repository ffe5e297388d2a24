"""A group's sending identity: the name its mail goes under, its own address, its disclaimer;
and where replies by email go (the email-to-comment mailbox, while it is enabled).

The services that write letters (notify, digests, mailbox alerts) look them up here and hand them
down on the letter; chalicelib/mail/outgoing.py renders them from the values and asks nothing back.
"""

from __future__ import annotations

from typing import Any, Protocol

from chalicelib.domain.letters import Identity
from chalicelib.domain.mailboxes import SYSTEM_SCOPE
from chalicelib.services.group_email import GroupEmailService
from chalicelib.services.newsletter import NewsletterService


class Mailboxes(Protocol):
    """The mailboxes' settings (store/connectors.py `MailboxRepository.get`)."""

    def get(self, scope: str) -> Any: ...


class SendingIdentities:
    """Each group's identity and the reply address, read once per instance (a drain or a digest
    run)."""

    def __init__(
        self, group_email: GroupEmailService, newsletter: NewsletterService, mailboxes: Mailboxes
    ) -> None:
        self.group_email = group_email
        self.newsletter = newsletter
        self.mailboxes = mailboxes
        self._identities: dict[str, Identity] = {}
        self._reply_address: str | None = None

    def of(self, group: Any) -> Identity:
        if group.id not in self._identities:
            found = self.group_email.get(group)
            disclaimer = self.newsletter.get(group).disclaimer
            self._identities[group.id] = Identity(found.name, found.email, disclaimer)
        return self._identities[group.id]

    def reply_address(self) -> str:
        """The email-to-comment mailbox's `emailAddress` while it is enabled ("" otherwise):
        instant emails about posts and comments are answered there (replies by email)."""
        if self._reply_address is None:
            record = self.mailboxes.get(SYSTEM_SCOPE)
            enabled = record is not None and record.is_enabled
            self._reply_address = str(getattr(record, "email_address", "") or "") if enabled else ""
        return self._reply_address
