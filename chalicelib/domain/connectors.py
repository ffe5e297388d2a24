"""A local connector (chat, CRM) and one group's configuration of it, as the store reads them once
and the rules hold them: frozen records, not the PynamoDB items (store/connectors.py maps one to
the other).

A change to a configuration is a changed copy (`dataclasses.replace`) handed to the store whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Connector:
    """One connector of the catalogue the fixture loads."""

    id: str
    kind: str  # chat | crm
    name: str
    description: str
    author_id: str | None
    created_on: datetime


@dataclass(frozen=True)
class ConnectorConfiguration:
    """A group's configuration of a connector; never saved, a group has none (disabled)."""

    group_id: str
    connector_id: str
    is_enabled: bool = False
    # None: the group's default (a subgroup inherits from its parent; the root cannot).
    inherit_settings: bool | None = None
    # The chat's settings without its secret (None: never set, as a CRM's).
    application_id: str | None = None
    allow_guest: bool | None = None
    # KMS ciphertext of the chat applicationSecret.
    secret: bytes | None = None
    editor_id: str | None = None
    modified_on: datetime | None = None
