"""Reading the audit log (CONTRACT §10, §12): a group's entries or all of them, newest first,
paged by entry id. The entries themselves are written by the services that decide each change,
in the change's own transaction (chalicelib/domain/audit.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.connectors import Connector
from chalicelib.domain.events import Event
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


class EventNames(Protocol):
    def get_many(self, event_ids: Iterable[int]) -> Mapping[int, Event]: ...


class ConnectorNames(Protocol):
    def get_many(self, connector_ids: Iterable[str]) -> Mapping[str, Connector]: ...


class AuditService:
    def __init__(
        self,
        log: AuditRepository,
        refs: ReferenceStore,
        events: EventNames | None = None,
        connectors: ConnectorNames | None = None,
    ) -> None:
        self.log = log
        self.refs = refs
        self.events = events
        self.connectors = connectors

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
            users={e.actor.user_id for e in entries if e.actor.user_id}
            | {_user_of(e) for e in entries} - {None},
            groups={e.group_id for e in entries if e.group_id}
            | {e.target_id for e in entries if e.target_type in GROUP_SCOPED},
        )
        names = self._looked_up(entries)
        return [_out(e, found.users, found.groups, names) for e in entries]

    def _looked_up(self, entries: Sequence[AuditEntry]) -> dict[tuple[str, str], str]:
        """The names of the events and connectors the entries' own changes do not name (an
        event moved, a connector switched on): one batched read of each, as they are now."""
        unnamed = [e for e in entries if _named_by_changes(e) is None]
        names: dict[tuple[str, str], str] = {}
        event_ids = {int(e.target_id) for e in unnamed if e.target_type == "event"}
        if self.events is not None and event_ids:
            for event_id, event in self.events.get_many(event_ids).items():
                names["event", str(event_id)] = event.title
        connector_ids = {e.target_id for e in unnamed if e.target_type == "connector"}
        if self.connectors is not None and connector_ids:
            for connector_id, connector in self.connectors.get_many(connector_ids).items():
                names["connector", connector_id] = connector.name
        return names


# Targets whose id is a group's: its settings and mailbox (the system ones are "system").
GROUP_SCOPED = frozenset(
    {
        "feedSettings",
        "groupEmail",
        "newsletterSettings",
        "privateLandingPage",
        "premiumLandingPage",
        "emailToPost",
    }
)
# Targets whose id is (or starts with) the id of the user they concern.
USER_SCOPED = frozenset({"user", "feedKey", "notification"})
# Targets an entry names in its own changes (created, changed or deleted with their name).
NAMED_BY_CHANGE = ("title", "name")


def _user_of(entry: AuditEntry) -> str | None:
    if entry.target_type not in USER_SCOPED:
        return None
    # A notification's id is `user:kind:target:notification`.
    return entry.target_id.split(":", 1)[0]


def _named_by_changes(entry: AuditEntry) -> str | None:
    for change in entry.changes:
        if change.field in NAMED_BY_CHANGE:
            named = change.after if change.after is not None else change.before
            if isinstance(named, str) and named:
                return named
    return None


def _target_name(
    entry: AuditEntry,
    users: Mapping[str, User],
    groups: Mapping[str, Group],
    looked_up: Mapping[tuple[str, str], str],
) -> str | None:
    """What a person calls the target: the group of its settings, the user it concerns, or the
    title or name its changes show; None where nothing names it (a comment, a fixture)."""
    if entry.target_type in GROUP_SCOPED:
        group = groups.get(entry.target_id)
        return group.name if group is not None else None
    user_id = _user_of(entry)
    if user_id is not None:
        user = users.get(user_id)
        return user.alias if user is not None else None
    return _named_by_changes(entry) or looked_up.get((entry.target_type, entry.target_id))


def _out(
    entry: AuditEntry,
    users: Mapping[str, User],
    groups: Mapping[str, Group],
    names: Mapping[tuple[str, str], str],
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
            "target": AuditTarget(
                type=entry.target_type,
                id=entry.target_id,
                name=_target_name(entry, users, groups, names),
            ),
            "changes": [
                AuditChange(field=c.field, before=c.before, after=c.after) for c in entry.changes
            ],
            "requestId": entry.actor.request_id,
        }
    )
