"""A group's sending identity: the name its mail goes under, its own address, its disclaimer.

The services that write letters (notify, digests, mailbox alerts) look it up here and hand it
down on the letter; chalicelib/mail/outgoing.py renders it from the value and asks nothing back.
"""

from __future__ import annotations

from typing import Any

from chalicelib.domain.letters import Identity
from chalicelib.services.group_email import GroupEmailService
from chalicelib.services.newsletter import NewsletterService


class SendingIdentities:
    """Each group's identity, read once per instance (a drain or a digest run)."""

    def __init__(self, group_email: GroupEmailService, newsletter: NewsletterService) -> None:
        self.group_email = group_email
        self.newsletter = newsletter
        self._identities: dict[str, Identity] = {}

    def of(self, group: Any) -> Identity:
        if group.id not in self._identities:
            found = self.group_email.get(group)
            disclaimer = self.newsletter.get(group).disclaimer
            self._identities[group.id] = Identity(found.name, found.email, disclaimer)
        return self._identities[group.id]
