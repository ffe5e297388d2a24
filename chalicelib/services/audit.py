"""Reading the audit log (CONTRACT §10, §12): a group's entries or all of them, newest first,
paged by entry id. The entries themselves are written by the services that decide each change,
in the change's own transaction (chalicelib/domain/audit.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.groups import Group
from chalicelib.domain.ports.content import ReferenceStore
from chalicelib.domain.ports.people import User
from chalicelib.schemas.audit import (
    AuditChange,
    AuditEntryOut,
    AuditPage,
    AuditQuery,
    AuditTarget,
    SystemActor,
)
from chalicelib.schemas.common import UserRef
from chalicelib.services.links import group_ref, user_ref
from chalicelib.services.posts import unknown_offset

if TYPE_CHECKING:
    from chalicelib.store.audit import AuditRepository


class AuditService:
    def __init__(self, log: AuditRepository, refs: ReferenceStore) -> None:
        self.log = log
        self.refs = refs

    def page(self, group_id: str | None, query: AuditQuery) -> AuditPage:
        """`group_id` None: every entry (the root group administrator's log)."""
        after = None
        if query.offset:
            after = self.log.get(query.offset)
            if after is None or (group_id is not None and after.group_id != group_id):
                raise unknown_offset(query.offset)
        entries, read_up_to = self.log.page(
            group_id,
            limit=query.page_size,
            after=after,
            action=query.action,
            actor_id=query.actor_id,
        )
        return AuditPage(
            offset=read_up_to or (entries[-1].id if entries else query.offset),
            entries=self.present(entries),
        )

    def present(self, entries: Sequence[AuditEntry]) -> list[AuditEntryOut]:
        found = self.refs.read(
            users={e.actor.user_id for e in entries if e.actor.user_id},
            groups={e.group_id for e in entries if e.group_id},
        )
        return [_out(e, found.users, found.groups) for e in entries]


def _out(
    entry: AuditEntry, users: Mapping[str, User], groups: Mapping[str, Group]
) -> AuditEntryOut:
    actor: UserRef | SystemActor
    if entry.actor.user_id is not None:
        actor = user_ref(users.get(entry.actor.user_id))
        # A user gone since still names the id the entry recorded.
        actor.id = entry.actor.user_id
    else:
        actor = SystemActor(name=entry.actor.system or "agora")
    group = groups.get(entry.group_id) if entry.group_id else None
    return AuditEntryOut.model_validate(
        {
            "id": entry.id,
            "at": entry.at,
            "actor": actor,
            "via": entry.actor.via,
            "action": entry.action,
            "group": group_ref(group) if group is not None else None,
            "target": AuditTarget(type=entry.target_type, id=entry.target_id),
            "changes": [
                AuditChange(field=c.field, before=c.before, after=c.after) for c in entry.changes
            ],
            "requestId": entry.actor.request_id,
        }
    )
