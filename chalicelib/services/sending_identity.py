"""A group's sending identity: the name its mail goes under, its own address, its disclaimer;
and where replies by email go (the email-to-comment mailbox, while it is enabled).

The services that write letters (notify, digests, mailbox alerts) look them up here and hand them
down on the letter; chalicelib/mail/outgoing.py renders them from the values and asks nothing back.
"""

from __future__ import annotations

from typing import Any, Protocol

from chalicelib.domain.letters import Identity
from chalicelib.domain.mailboxes import SYSTEM_SCOPE
from chalicelib.domain.ports.content import DocumentStore
from chalicelib.services.group_email import KIND as GROUP_EMAIL
from chalicelib.services.newsletter import KIND as NEWSLETTER


class Mailboxes(Protocol):
    """The mailboxes' settings (store/connectors.py `MailboxRepository.get`)."""

    def get(self, scope: str) -> Any: ...


class SendingIdentities:
    """Each group's identity and the reply address, read once per instance (a drain or a digest
    run)."""

    def __init__(self, documents: DocumentStore, mailboxes: Mailboxes) -> None:
        self.documents = documents
        self.mailboxes = mailboxes
        self._identities: dict[str, Identity] = {}
        self._reply_address: str | None = None

    def of(self, group: Any) -> Identity:
        if group.id not in self._identities:
            # The documents as GroupEmailService and NewsletterService keep them, read here
            # without their API records: unsaved, a group's mail goes under its name, from no
            # address of its own, with no disclaimer.
            email = self.documents.get(group.id, GROUP_EMAIL) or {}
            newsletter = self.documents.get(group.id, NEWSLETTER) or {}
            self._identities[group.id] = Identity(
                email.get("name") or group.name,
                email.get("email", ""),
                newsletter.get("disclaimer", ""),
            )
        return self._identities[group.id]

    def reply_address(self) -> str:
        """The email-to-comment mailbox's `emailAddress` while it is enabled ("" otherwise):
        instant emails about posts and comments are answered there (replies by email)."""
        if self._reply_address is None:
            record = self.mailboxes.get(SYSTEM_SCOPE)
            enabled = record is not None and record.is_enabled
            self._reply_address = str(getattr(record, "email_address", "") or "") if enabled else ""
        return self._reply_address
