"""Connectors: the local connector catalogue, their per-group configurations, and the mailboxes.

- `connectors`: one item per local connector (chat, CRM), all under one catalogue key, so the
  catalogue is one Query.
- `connector-groups`: one item per (group, connector) configuration, keyed by group so a group's
  configurations are one Query; the sparse `enabled` index holds only enabled configurations,
  ordered by connector then group, so "groups where a connector is enabled" is one Query.
- `mailboxes`: the email-to-post settings of a group (scope = group id) and the system-wide
  email-to-comment settings (scope `system`); the sparse `enabled-mailboxes` index holds only the
  enabled ones (`poll-mail` polls them all, no Scan).

The rhythm of polls (services/poll_schedule.py) is kept on the mailbox item:
- `next_poll_on` (when it is due), `empty_polls` and `poll_failures` (how many polls in a row
  found nothing, or failed at the mailbox's own server);
- `due_shard` (`due#00` … `due#15`, a hash of the scope) and `due_key` (`<next_poll_on as
  sort_moment>#<scope>`): the keys of the sparse, keys-only index `due-mailboxes`, present only
  while the mailbox is enabled. The 5-minute dispatch Queries each shard for `due_key <=` its
  horizon, so it reads about as many items as are due, and 100,000 mailboxes spread over 16
  partitions rather than one;
- `failing` (`failing`, only while enabled and `poll_failures` > 0): the hash of the sparse,
  keys-only index `failing-mailboxes`, whose count feeds the share-failing alarm.
An enabled mailbox written before these existed has none of them: `migrate` gives it `due_shard`
and `due_key` (due now), `empty_polls` and `poll_failures` 0 (`due_index_values` says how).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Sequence
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

from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.connectors import Connector, ConnectorConfiguration
from chalicelib.store import outbox
from chalicelib.store.base import (
    UtcAttribute,
    conditionally,
    frozen,
    index_meta,
    register,
    sort_moment,
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


# --- mailboxes (email-to-post per group, email-to-comment for the system) ----------------------


class EnabledMailboxIndex(GlobalSecondaryIndex):
    Meta = index_meta("enabled-mailboxes", AllProjection())
    enabled_kind = UnicodeAttribute(hash_key=True)
    scope = UnicodeAttribute(range_key=True)


# The due index's partitions: 16 keep 100,000 mailboxes (a few hundred due a minute) far below a
# partition's limits, and cost a dispatch 16 small Queries.
DUE_SHARDS = 16
FAILING = "failing"


def due_shard(scope: str) -> str:
    """The `due-mailboxes` partition of a mailbox: a stable hash of its scope."""
    return f"due#{zlib.crc32(scope.encode('utf-8')) % DUE_SHARDS:02d}"


def due_key(scope: str, next_poll_on: datetime) -> str:
    """The `due-mailboxes` sort key: due time order, unique per mailbox."""
    return f"{sort_moment(next_poll_on)}#{scope}"


def due_index_values(scope: str, next_poll_on: datetime) -> dict[str, str]:
    """The attributes that put an enabled mailbox in the due index (for `migrate` too)."""
    return {"due_shard": due_shard(scope), "due_key": due_key(scope, next_poll_on)}


class DueMailboxIndex(GlobalSecondaryIndex):
    Meta = index_meta("due-mailboxes", KeysOnlyProjection())
    due_shard = UnicodeAttribute(hash_key=True)
    due_key = UnicodeAttribute(range_key=True)


class FailingMailboxIndex(GlobalSecondaryIndex):
    Meta = index_meta("failing-mailboxes", KeysOnlyProjection())
    failing = UnicodeAttribute(hash_key=True)
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
    # The address members write to ("" or absent: none).
    email_address = UnicodeAttribute(null=True)
    # The rhythm of polls (module docstring): absent on items written before it.
    next_poll_on = UtcAttribute(null=True)
    empty_polls = NumberAttribute(null=True)
    poll_failures = NumberAttribute(null=True)
    due_shard = UnicodeAttribute(null=True)
    due_key = UnicodeAttribute(null=True)
    failing = UnicodeAttribute(null=True)
    # When "poll now" last made the mailbox due: the next one waits a minute (CONTRACT §5).
    poll_now_on = UtcAttribute(null=True)

    enabled = EnabledMailboxIndex()
    due = DueMailboxIndex()
    failing_index = FailingMailboxIndex()


class MailboxRepository:
    def prepare(self) -> None:
        """Create the table's client now, in this thread, before worker threads use it."""
        _ = MailboxRecord._get_connection().connection.client

    def get(self, scope: str) -> MailboxRecord | None:
        try:
            return MailboxRecord.get(scope)
        except MailboxRecord.DoesNotExist:
            return None

    def save_settings(
        self,
        scope: str,
        kind: str,
        values: dict[str, Any],
        next_poll_on: datetime | None = None,
        audit: Sequence[Any] = (),
        read: MailboxRecord | None = None,
    ) -> MailboxRecord:
        """Write the settings an administrator edits; `last_processed` (the poller's) is kept.

        `values` holds attribute names; a `password` of None keeps the stored ciphertext.
        An enabled mailbox is due at `next_poll_on` with its streaks reset; a disabled one
        leaves the due and failing indexes. `audit` (its entries) go in the same transaction,
        which answers no item: the record answered is then `read` (the item as the caller read
        it) with the update applied.
        """
        record = MailboxRecord(scope)
        actions: list[Action] = [MailboxRecord.kind.set(kind)]
        for name, value in values.items():
            attribute = getattr(MailboxRecord, name)
            if name == "password" and value is None:
                continue
            actions.append(attribute.set(value))
        actions += [
            MailboxRecord.empty_polls.set(0),
            MailboxRecord.poll_failures.set(0),
            MailboxRecord.failing.remove(),
        ]
        if values.get("is_enabled") and next_poll_on is not None:
            actions.append(MailboxRecord.enabled_kind.set(kind))
            actions += _due_actions(scope, next_poll_on)
        else:
            actions += [
                MailboxRecord.enabled_kind.remove(),
                MailboxRecord.next_poll_on.remove(),
                MailboxRecord.due_shard.remove(),
                MailboxRecord.due_key.remove(),
            ]
        if not audit:
            record.update(actions=actions)
            return record
        outbox.update_with(record, actions, audit)
        return _applied(read, scope, kind, values, next_poll_on)

    def poll_due_at(
        self, scope: str, when: datetime, *, not_since: datetime, audit: Sequence[Any] = ()
    ) -> tuple[MailboxRecord | None, bool]:
        """Make an enabled mailbox due at `when` ("poll now"), its empty streak reset, unless
        "poll now" already did after `not_since`: (the record, True) when written, (the record
        as stored, False) when too soon, (None, False) when it is not enabled. One conditional
        write, so two requests at once make it due once; `audit` (the change's entries) in the
        same transaction, after which the record is read (a transaction answers no item)."""
        record = MailboxRecord(scope)
        actions = [
            *_due_actions(scope, when),
            MailboxRecord.empty_polls.set(0),
            MailboxRecord.poll_now_on.set(when),
        ]
        condition = MailboxRecord.enabled_kind.exists() & (
            MailboxRecord.poll_now_on.does_not_exist() | (MailboxRecord.poll_now_on <= not_since)
        )
        if not audit:
            done = conditionally(lambda: record.update(actions=actions, condition=condition))
        else:
            done = outbox.update_with(record, actions, audit, condition)
        if done:
            return (self.get(scope) if audit else record), True
        stored = self.get(scope)
        if stored is None or not stored.enabled_kind:
            return None, False
        return stored, False

    def record_poll(
        self,
        scope: str,
        when: datetime,
        *,
        next_poll_on: datetime,
        empty_polls: int,
        failures: int,
        error: str | None = None,
        announcements: Sequence[Any] = (),
    ) -> bool:
        """One poll's outcome and the mailbox's next poll, in one write: a good poll (`error`
        None) sets `last_processed` and clears the last error; a failed one keeps the error.
        `announcements` (domain events) go to the outbox in the same transaction.

        Only while the mailbox is enabled (a mailbox disabled meanwhile keeps out of the due
        index): False, and only the outcome is noted, when it is not.
        """
        actions: list[Action] = [
            *_due_actions(scope, next_poll_on),
            MailboxRecord.empty_polls.set(empty_polls),
            MailboxRecord.poll_failures.set(failures),
        ]
        if failures:
            actions.append(MailboxRecord.failing.set(FAILING))
        else:
            actions.append(MailboxRecord.failing.remove())
        if error is None:
            actions += [
                MailboxRecord.last_processed.set(when),
                MailboxRecord.last_error.remove(),
                MailboxRecord.last_error_on.remove(),
            ]
        else:
            actions += [MailboxRecord.last_error.set(error), MailboxRecord.last_error_on.set(when)]
        condition = MailboxRecord.enabled_kind.exists()
        record = MailboxRecord(scope)
        if not announcements:
            written = conditionally(lambda: record.update(actions=actions, condition=condition))
        else:
            written = outbox.update_with(record, actions, announcements, condition)
        if not written:
            if error is None:
                self.record_last_processed(scope, when)
            else:
                self.record_poll_failed(scope, when, error)
        return written

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

    def due_scopes(self, horizon: datetime) -> Iterator[str]:
        """The scopes of the enabled mailboxes due at or before `horizon`: one Query per shard
        of the keys-only due index, reading only the due items (no Scan)."""
        # `~` sorts after every character of a scope: every mailbox due at `horizon` itself.
        upper = f"{sort_moment(horizon)}#~"
        for shard in range(DUE_SHARDS):
            for key in MailboxRecord.due.query(
                f"due#{shard:02d}", range_key_condition=DueMailboxIndex.due_key <= upper
            ):
                yield key.scope

    def count_enabled(self) -> int:
        """Enabled mailboxes (the due index's items, counted shard by shard: keys only)."""
        return sum(MailboxRecord.due.count(f"due#{shard:02d}") for shard in range(DUE_SHARDS))

    def count_failing(self) -> int:
        """Enabled mailboxes whose last poll failed at their own server (a sparse index)."""
        return int(MailboxRecord.failing_index.count(FAILING))


def _applied(read: Any, scope: str, kind: str, values: dict[str, Any], next_poll_on: Any) -> Any:
    """`read` (or a new item) as `save_settings`'s update leaves it."""
    record = MailboxRecord.from_raw_data(read.serialize()) if read else MailboxRecord(scope)
    for name, value in {"kind": kind, **values}.items():
        if not (name == "password" and value is None):
            setattr(record, name, value)
    record.empty_polls, record.poll_failures, record.failing = 0, 0, None
    enabled = bool(values.get("is_enabled")) and next_poll_on is not None
    due = due_index_values(scope, next_poll_on) if enabled else {}
    record.enabled_kind, record.next_poll_on = (kind, next_poll_on) if enabled else (None, None)
    record.due_shard, record.due_key = due.get("due_shard"), due.get("due_key")
    return record


def _due_actions(scope: str, next_poll_on: datetime) -> list[Action]:
    values = due_index_values(scope, next_poll_on)
    return [
        MailboxRecord.next_poll_on.set(next_poll_on),
        MailboxRecord.due_shard.set(values["due_shard"]),
        MailboxRecord.due_key.set(values["due_key"]),
    ]
