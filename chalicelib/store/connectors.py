"""Connectors: the local connector catalogue and their per-group configurations.

- `connectors`: one item per local connector (chat, CRM), all under one catalogue key, so the
  catalogue is one Query.
- `connector-groups`: one item per (group, connector) configuration, keyed by group so a group's
  configurations are one Query; the sparse `enabled` index holds only enabled configurations,
  ordered by connector then group, so "groups where a connector is enabled" is one Query.

The mailboxes (email-to-post, email-to-comment) are in store/mailboxes.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from pynamodb.attributes import (
    BinaryAttribute,
    BooleanAttribute,
    JSONAttribute,
    UnicodeAttribute,
)
from pynamodb.expressions.update import Action
from pynamodb.indexes import GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.connectors import Connector, ConnectorConfiguration
from chalicelib.store import outbox
from chalicelib.store.base import (
    UtcAttribute,
    frozen,
    index_meta,
    register,
    table_meta,
)

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

    def as_connector(self) -> Connector:
        return frozen(self, Connector, description=self.description or "")


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

    @classmethod
    def of(cls, config: ConnectorConfiguration) -> ConnectorGroupRecord:
        """The item that stores `config`, its index keys derived."""
        settings = {"applicationId": config.application_id, "allowGuest": config.allow_guest}
        record = cls(
            config.group_id,
            config.connector_id,
            is_enabled=config.is_enabled,
            inherit_settings=config.inherit_settings,
            # A connector without settings of its own (a CRM's) stores none.
            settings=settings if any(v is not None for v in settings.values()) else {},
            secret=config.secret,
            editor_id=config.editor_id,
            modified_on=config.modified_on,
        )
        record.refresh_index_keys()
        return record

    def as_configuration(self) -> ConnectorConfiguration:
        settings = self.settings or {}
        return frozen(
            self,
            ConnectorConfiguration,
            is_enabled=bool(self.is_enabled),
            application_id=settings.get("applicationId"),
            allow_guest=settings.get("allowGuest"),
            secret=bytes(self.secret) if self.secret else None,
        )

    def refresh_index_keys(self) -> None:
        if self.is_enabled:
            self.enabled_key = ENABLED
            self.connector_group = f"{self.connector_id}#{self.group_id}"
        else:
            self.enabled_key = None
            self.connector_group = None


class ConnectorRepository:
    def catalogue(self) -> list[Connector]:
        return [record.as_connector() for record in ConnectorRecord.query(CATALOGUE)]

    def get(self, connector_id: str) -> Connector | None:
        try:
            return ConnectorRecord.get(CATALOGUE, connector_id).as_connector()
        except ConnectorRecord.DoesNotExist:
            return None

    def get_many(self, connector_ids: Iterable[str]) -> dict[str, Connector]:
        keys = [(CATALOGUE, connector_id) for connector_id in set(connector_ids)]
        if not keys:
            return {}
        return {c.id: c.as_connector() for c in ConnectorRecord.batch_get(keys)}

    def put_connectors(self, records: list[ConnectorRecord]) -> None:
        with ConnectorRecord.batch_write() as batch:
            for record in records:
                batch.save(record)

    # --- per-group configurations ----------------------------------------------------------------

    def configuration(self, group_id: str, connector_id: str) -> ConnectorConfiguration | None:
        try:
            return ConnectorGroupRecord.get(group_id, connector_id).as_configuration()
        except ConnectorGroupRecord.DoesNotExist:
            return None

    def configurations_of_group(self, group_id: str) -> dict[str, ConnectorConfiguration]:
        return {c.connector_id: c.as_configuration() for c in ConnectorGroupRecord.query(group_id)}

    def configurations(
        self, keys: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], ConnectorConfiguration]:
        """Configurations by (group id, connector id), e.g. of a group's parents: one BatchGet."""
        unique = list(set(keys))
        if not unique:
            return {}
        return {
            (c.group_id, c.connector_id): c.as_configuration()
            for c in ConnectorGroupRecord.batch_get(unique)
        }

    def save_configuration(
        self, config: ConnectorConfiguration, audit: Sequence[AuditEntry] = ()
    ) -> None:
        """Store the configuration; `audit` (the change's entries) in the same transaction."""
        record = ConnectorGroupRecord.of(config)
        if not audit:
            record.save()
            return
        outbox.save_with(record, audit)

    def set_enabled(
        self,
        group_id: str,
        connector_id: str,
        enabled: bool,
        editor_id: str | None = None,
        modified_on: datetime | None = None,
        audit: Sequence[AuditEntry] = (),
    ) -> None:
        """Switch a configuration on or off, keeping its settings (one UpdateItem, an upsert;
        with `audit`, the change's entries, one transaction)."""
        record = ConnectorGroupRecord(group_id, connector_id, is_enabled=enabled)
        record.refresh_index_keys()
        actions: list[Action] = [ConnectorGroupRecord.is_enabled.set(enabled)]
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
        if audit:
            outbox.update_with(record, actions, audit)
        else:
            record.update(actions=actions)

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
