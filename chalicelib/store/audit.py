"""The audit log (CONTRACT §12): one item per change, written in the change's own transaction.

Table `audit`, hash `id` (a random GUID). A table of its own rather than items in the outbox: the
outbox's items live 7 days and its stream drives the subscribers, while entries are read back by
the API, by group and by time, for 400 days (TTL `expires`).

- `by-group` (sparse: entries of a group only): hash `group_id`, range `at_key`
  (`<at>#<id>`, unique and in time order), newest first for a group's log.
- `all-by-time`: hash `log` (one key, `all`), range `at_key`, for the root's whole log. Changes
  are made by people and a few jobs, far below the 1,000 writes a second one index partition
  takes, so the key is not sharded (a shard per write would cost a page one Query per shard).

A page is one Query sized by its page; `action` and `actorId` filter it (`query_page`: a bounded
read, the page going on from the last item read). `offset` is an entry id, turned into the
Query's ExclusiveStartKey with one GetItem.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta

from pynamodb.attributes import TTLAttribute, UnicodeAttribute
from pynamodb.expressions.condition import Condition
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.domain.audit import Actor, AuditEntry, Change
from chalicelib.store.base import (
    Page,
    UtcAttribute,
    global_index,
    moment_key,
    query_page,
    register,
    table_meta,
)

KEEP_FOR = timedelta(days=400)
ALL = "all"


@register
class AuditRecord(Model):
    Meta = table_meta("audit")

    id = UnicodeAttribute(hash_key=True)
    at = UtcAttribute()
    at_key = UnicodeAttribute()
    log = UnicodeAttribute(default=ALL)
    actor_id = UnicodeAttribute(null=True)
    actor_system = UnicodeAttribute(null=True)
    via = UnicodeAttribute()
    action = UnicodeAttribute()
    group_id = UnicodeAttribute(null=True)
    target_type = UnicodeAttribute()
    target_id = UnicodeAttribute()
    changes = UnicodeAttribute()  # JSON text: numbers stay ints, never Decimals
    request_id = UnicodeAttribute(null=True)
    expires = TTLAttribute()

    by_group = global_index("by-group", "group_id", "at_key", range_type=UnicodeAttribute)
    all_by_time = global_index("all-by-time", "log", "at_key", range_type=UnicodeAttribute)


def record_of(entry: AuditEntry) -> AuditRecord:
    """The unsaved item of an entry (store/outbox.py `records` puts it in the transaction)."""
    changes = [{"field": c.field, "before": c.before, "after": c.after} for c in entry.changes]
    return AuditRecord(
        entry.id,
        at=entry.at,
        at_key=moment_key(entry.at, entry.id),
        log=ALL,
        actor_id=entry.actor.user_id,
        actor_system=entry.actor.system if entry.actor.user_id is None else None,
        via=entry.actor.via,
        action=entry.action,
        group_id=entry.group_id,
        target_type=entry.target_type,
        target_id=entry.target_id,
        changes=json.dumps(changes, ensure_ascii=False, separators=(",", ":")),
        request_id=entry.actor.request_id,
        expires=entry.at + KEEP_FOR,
    )


def entry_of(record: AuditRecord) -> AuditEntry:
    return AuditEntry(
        id=record.id,
        at=record.at,
        actor=Actor(
            user_id=record.actor_id,
            system=record.actor_system,
            via=record.via,
            request_id=record.request_id,
        ),
        action=record.action,
        group_id=record.group_id,
        target_type=record.target_type,
        target_id=record.target_id,
        changes=tuple(
            Change(c["field"], c["before"], c["after"]) for c in json.loads(record.changes)
        ),
    )


def add_to(write: TransactWrite, entries: Sequence[AuditEntry]) -> None:
    """Put the entries in the transaction being built (new ids: no condition needed)."""
    for entry in entries:
        write.save(record_of(entry))


class AuditRepository:
    def get(self, entry_id: str) -> AuditEntry | None:
        try:
            return entry_of(AuditRecord.get(entry_id))
        except AuditRecord.DoesNotExist:
            return None

    def save(self, entries: Sequence[AuditEntry]) -> None:
        """Entries of a change that is not a transaction of its own (a CLI load's batch, written
        after it): one BatchWriteItem per 25."""
        if not entries:
            return
        with AuditRecord.batch_write() as batch:
            for entry in entries:
                batch.save(record_of(entry))

    def page(
        self,
        group_id: str | None,
        *,
        limit: int,
        after: AuditEntry | None,
        action: str | None = None,
        actor_id: str | None = None,
    ) -> tuple[list[AuditEntry], str | None]:
        """Newest first: a group's entries (or every entry when `group_id` is None), after the
        entry `after`; answers the page and, for a filtered page that stopped before the list's
        end, the id of the last entry it read."""
        index = AuditRecord.all_by_time if group_id is None else AuditRecord.by_group
        start = None
        if after is not None:
            start = {
                "id": {"S": after.id},
                "at_key": {"S": moment_key(after.at, after.id)},
                **({"log": {"S": ALL}} if group_id is None else {"group_id": {"S": group_id}}),
            }
        found: Page = query_page(
            index,
            ALL if group_id is None else group_id,
            limit=limit,
            forward=False,
            start_key=start,
            filter_condition=_filter(action, actor_id),
        )
        return [entry_of(r) for r in found], found.last_read_id


def _filter(action: str | None, actor_id: str | None) -> Condition | None:
    condition: Condition | None = None
    if action:
        condition = (
            AuditRecord.action == action
            if "." in action
            else AuditRecord.action.startswith(action + ".")
        )
    if actor_id:
        by_actor = (AuditRecord.actor_id == actor_id) | (AuditRecord.actor_system == actor_id)
        condition = by_actor if condition is None else condition & by_actor
    return condition
