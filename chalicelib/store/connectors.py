"""Connectors: the local connector catalogue, their per-group configurations, and the mailboxes.

- `connectors`: one item per local connector (chat, CRM), all under one catalogue key, so the
  catalogue is one Query.
- `connector-groups`: one item per (group, connector) configuration, keyed by group so a group's
  configurations are one Query; the sparse `enabled` index holds only enabled configurations,
  ordered by connector then group, so "groups where a connector is enabled" is one Query.
- `mailboxes`: the email-to-post settings of a group (scope = group id) and the system-wide
  email-to-comment settings (scope `system`); the sparse `enabled-mailboxes` index holds only the
  enabled ones, for the mail-in schedule (no Scan).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from pynamodb.attributes import (
    BinaryAttribute,
    BooleanAttribute,
    JSONAttribute,
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.expressions.update import Action
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from chalicelib.store.base import UtcAttribute, conditionally, index_meta, register, table_meta

CATALOGUE = "local"
ENABLED = "enabled"


@register
class ConnectorRecord(Model):
    Meta = table_meta("connectors")

    # One catalogue key: a handful of connectors, read whole with one Query.
    catalogue = UnicodeAttribute(hash_key=True, default=CATALOGUE)
    id = UnicodeAttribute(range_key=True)
    kind = UnicodeAttribute()  # chat | crm
    name = UnicodeAttribute()
    description = UnicodeAttribute(default="")
    author_id = UnicodeAttribute(null=True)
    created_on = UtcAttribute()


class EnabledConnectorIndex(GlobalSecondaryIndex):
    Meta = index_meta("enabled", KeysOnlyProjection())
    enabled_key = UnicodeAttribute(hash_key=True)
    connector_group = UnicodeAttribute(range_key=True)


@register
class ConnectorGroupRecord(Model):
    Meta = table_meta("connector-groups")

    group_id = UnicodeAttribute(hash_key=True)
    connector_id = UnicodeAttribute(range_key=True)
    is_enabled = BooleanAttribute(default=False)
    # None: the group's default (a subgroup inherits from its parent; the root cannot).
    inherit_settings = BooleanAttribute(null=True)
    # The kind's settings without secrets (chat: applicationId, allowGuest).
    settings = JSONAttribute(default=dict)
    # KMS ciphertext of the chat applicationSecret.
    secret = BinaryAttribute(null=True, legacy_encoding=False)
    editor_id = UnicodeAttribute(null=True)
    modified_on = UtcAttribute(null=True)
    # Present only while enabled: the `enabled` index is sparse.
    enabled_key = UnicodeAttribute(null=True)
    connector_group = UnicodeAttribute(null=True)

    enabled = EnabledConnectorIndex()

    def refresh_index_keys(self) -> None:
        if self.is_enabled:
            self.enabled_key = ENABLED
            self.connector_group = f"{self.connector_id}#{self.group_id}"
        else:
            self.enabled_key = None
            self.connector_group = None


class ConnectorRepository:
    def catalogue(self) -> list[ConnectorRecord]:
        return list(ConnectorRecord.query(CATALOGUE))

    def get(self, connector_id: str) -> ConnectorRecord | None:
        try:
            return ConnectorRecord.get(CATALOGUE, connector_id)
        except ConnectorRecord.DoesNotExist:
            return None

    def get_many(self, connector_ids: Iterable[str]) -> dict[str, ConnectorRecord]:
        keys = [(CATALOGUE, connector_id) for connector_id in set(connector_ids)]
        if not keys:
            return {}
        return {c.id: c for c in ConnectorRecord.batch_get(keys)}

    def put_connectors(self, records: list[ConnectorRecord]) -> None:
        with ConnectorRecord.batch_write() as batch:
            for record in records:
                batch.save(record)

    # --- per-group configurations ----------------------------------------------------------------

    def new_configuration(self, group_id: str, connector_id: str) -> ConnectorGroupRecord:
        """An unsaved configuration of a connector in a group, for save_configuration."""
        return ConnectorGroupRecord(group_id, connector_id)

    def configuration(self, group_id: str, connector_id: str) -> ConnectorGroupRecord | None:
        try:
            return ConnectorGroupRecord.get(group_id, connector_id)
        except ConnectorGroupRecord.DoesNotExist:
            return None

    def configurations_of_group(self, group_id: str) -> dict[str, ConnectorGroupRecord]:
        return {c.connector_id: c for c in ConnectorGroupRecord.query(group_id)}

    def configurations(
        self, keys: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], ConnectorGroupRecord]:
        """Configurations by (group id, connector id), e.g. of a group's parents: one BatchGet."""
        unique = list(set(keys))
        if not unique:
            return {}
        return {(c.group_id, c.connector_id): c for c in ConnectorGroupRecord.batch_get(unique)}

    def save_configuration(self, record: ConnectorGroupRecord) -> ConnectorGroupRecord:
        record.refresh_index_keys()
        record.save()
        return record

    def set_enabled(
        self,
        group_id: str,
        connector_id: str,
        enabled: bool,
        editor_id: str | None = None,
        modified_on: datetime | None = None,
    ) -> ConnectorGroupRecord:
        """Switch a configuration on or off, keeping its settings (one UpdateItem, an upsert)."""
        record = ConnectorGroupRecord(group_id, connector_id, is_enabled=enabled)
        record.refresh_index_keys()
        actions: list[Any] = [ConnectorGroupRecord.is_enabled.set(enabled)]
        if editor_id is not None and modified_on is not None:
            actions += [
                ConnectorGroupRecord.editor_id.set(editor_id),
                ConnectorGroupRecord.modified_on.set(modified_on),
            ]
        if enabled:
            actions += [
                ConnectorGroupRecord.enabled_key.set(record.enabled_key),
                ConnectorGroupRecord.connector_group.set(record.connector_group),
            ]
        else:
            actions += [
                ConnectorGroupRecord.enabled_key.remove(),
                ConnectorGroupRecord.connector_group.remove(),
            ]
        record.update(actions=actions)
        return record

    def enabled_groups(self, connector_id: str | None = None) -> dict[str, list[str]]:
        """Group ids where each connector is enabled: one Query (paged by DynamoDB) on the index.

        Without a connector id it answers every connector's groups, for a list that shows them all.
        """
        condition = None
        if connector_id is not None:
            condition = EnabledConnectorIndex.connector_group.startswith(f"{connector_id}#")
        found: dict[str, list[str]] = {}
        for key in ConnectorGroupRecord.enabled.query(ENABLED, range_key_condition=condition):
            found.setdefault(key.connector_id, []).append(key.group_id)
        return found


# --- mailboxes (email-to-post per group, email-to-comment for the system) ----------------------


class EnabledMailboxIndex(GlobalSecondaryIndex):
    Meta = index_meta("enabled-mailboxes", AllProjection())
    enabled_kind = UnicodeAttribute(hash_key=True)
    scope = UnicodeAttribute(range_key=True)


@register
class MailboxRecord(Model):
    Meta = table_meta("mailboxes")

    scope = UnicodeAttribute(hash_key=True)  # group id, or `system`
    kind = UnicodeAttribute()  # emailToPost | emailToComment
    server_name = UnicodeAttribute(default="")
    server_port = NumberAttribute(default=995)
    server_username = UnicodeAttribute(default="")
    # KMS ciphertext of the POP3 password.
    password = BinaryAttribute(null=True, legacy_encoding=False)
    is_enabled = BooleanAttribute(default=False)
    is_ssl = BooleanAttribute(default=True)
    delete_processed = BooleanAttribute(default=False)
    last_processed = UtcAttribute(null=True)
    # The last poll that could not reach the mailbox, in plain words; a good poll removes both.
    last_error = UnicodeAttribute(null=True)
    last_error_on = UtcAttribute(null=True)
    editor_id = UnicodeAttribute(null=True)
    modified_on = UtcAttribute(null=True)
    # The kind while enabled, absent otherwise: the `enabled-mailboxes` index is sparse.
    enabled_kind = UnicodeAttribute(null=True)

    enabled = EnabledMailboxIndex()


class MailboxRepository:
    def get(self, scope: str) -> MailboxRecord | None:
        try:
            return MailboxRecord.get(scope)
        except MailboxRecord.DoesNotExist:
            return None

    def save_settings(self, scope: str, kind: str, values: dict[str, Any]) -> MailboxRecord:
        """Write the settings an administrator edits; `last_processed` (the poller's) is kept.

        `values` holds attribute names; a `password` of None keeps the stored ciphertext.
        """
        record = MailboxRecord(scope)
        actions: list[Action] = [MailboxRecord.kind.set(kind)]
        for name, value in values.items():
            attribute = getattr(MailboxRecord, name)
            if name == "password" and value is None:
                continue
            actions.append(attribute.set(value))
        if values.get("is_enabled"):
            actions.append(MailboxRecord.enabled_kind.set(kind))
        else:
            actions.append(MailboxRecord.enabled_kind.remove())
        record.update(actions=actions)
        return record

    def record_last_processed(self, scope: str, when: datetime) -> bool:
        """Set `last_processed` of an existing mailbox and clear its last error (the same
        UpdateItem); False when it has no settings."""
        return conditionally(
            lambda: MailboxRecord(scope).update(
                actions=[
                    MailboxRecord.last_processed.set(when),
                    MailboxRecord.last_error.remove(),
                    MailboxRecord.last_error_on.remove(),
                ],
                condition=MailboxRecord.scope.exists(),
            )
        )

    def record_poll_failed(self, scope: str, when: datetime, message: str) -> bool:
        """Note the poll at `when` that could not reach the mailbox; False without settings."""
        return conditionally(
            lambda: MailboxRecord(scope).update(
                actions=[
                    MailboxRecord.last_error.set(message),
                    MailboxRecord.last_error_on.set(when),
                ],
                condition=MailboxRecord.scope.exists(),
            )
        )

    def enabled(self, kind: str) -> Iterator[MailboxRecord]:
        """Every enabled mailbox of a kind, paged through the sparse index."""
        return iter(MailboxRecord.enabled.query(kind))
