"""The audit log's vocabulary (CONTRACT §12): who acts, and the entry a change records.

A service that decides a write builds its entry with `entry` (before and after as the write read
and wrote them) and hands it down with the write's domain events; the store puts it in the same
TransactWriteItems (store/outbox.py `records`), so an acknowledged change always has its entry and
a refused or failed one none. `entry` answers no entry when nothing changed.

Who acts is the context of the call, set once where a call enters: the API's router (the signed-in
user, `api`, the request id), the CLI (the command, `cli`) and the jobs (the job, `job`); a
service reads it with `acting()` rather than taking it through every signature.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeAlias

from chalicelib.domain.json import JsonValue

# A value longer than this is cut (CONTRACT §12).
LONGEST_VALUE = 200
SET, CHANGED, REMOVED = "(set)", "(changed)", "(removed)"
VIAS = ("api", "cli", "job")

# A thing's fields by the API's names, as a service read or wrote them: any value (a date, a
# ciphertext, a number); an entry shows each as JSON (`_shown`).
Fields: TypeAlias = Mapping[str, object]


@dataclass(frozen=True)
class Actor:
    """Who makes the changes of the current call: a user (`user_id`) or Agora itself (`system`,
    the job or CLI command), through `via`; `request_id` is the API request's."""

    user_id: str | None = None
    system: str | None = None
    via: str = "job"
    request_id: str | None = None


# Outside any call that says who it is (a test calling a service), Agora acts as itself.
UNNAMED = Actor(system="agora", via="job")
_acting: ContextVar[Actor] = ContextVar("agora_acting", default=UNNAMED)


def acting() -> Actor:
    return _acting.get()


@contextmanager
def acting_as(actor: Actor) -> Iterator[Actor]:
    """The changes made inside are `actor`'s."""
    token = _acting.set(actor)
    try:
        yield actor
    finally:
        _acting.reset(token)


@contextmanager
def acting_as_job(name: str) -> Iterator[Actor]:
    """A job's changes are its own, unless a caller already said whose they are (the CLI
    command that runs the job)."""
    current = acting()
    if current != UNNAMED:
        yield current
        return
    with acting_as(Actor(system=name, via="job")) as actor:
        yield actor


@dataclass(frozen=True)
class Change:
    field: str
    before: JsonValue
    after: JsonValue


@dataclass(frozen=True)
class AuditEntry:
    id: str
    at: datetime
    actor: Actor
    action: str
    group_id: str | None
    target_type: str
    target_id: str
    changes: tuple[Change, ...]


def entry(
    action: str,
    *,
    target: tuple[str, str | int],
    group_id: str | None,
    before: Fields | None,
    after: Fields | None,
    secrets: Collection[str] = (),
    always: bool = False,
    at: datetime | None = None,
) -> list[AuditEntry]:
    """The entry of one change (a list: empty when nothing changed, unless `always`, for a state
    change that has no field of its own, such as a poll asked for).

    `before` (None: the thing is new) and `after` (None: it is gone) map the API's field names to
    values; `secrets` names the fields whose values are never shown, only that they were set,
    changed or removed (compared as given: a ciphertext, or a new plaintext)."""
    changes = diff(before, after, secrets)
    if not changes and not always:
        return []
    kind, target_id = target
    return [
        AuditEntry(
            id=str(uuid.uuid4()),
            at=at or datetime.now(UTC),
            actor=acting(),
            action=action,
            group_id=group_id,
            target_type=kind,
            target_id=str(target_id),
            changes=changes,
        )
    ]


def fields_of(source: object, names: Mapping[str, str]) -> dict[str, object] | None:
    """The API's fields of a stored record or a mapping of attribute values: `names` maps each
    attribute to its API name. None stays None (a thing that does not exist)."""
    if source is None:
        return None
    if isinstance(source, Mapping):
        return {api: source[attr] for attr, api in names.items() if attr in source}
    return {api: getattr(source, attr, None) for attr, api in names.items()}


def diff(
    before: Fields | None,
    after: Fields | None,
    secrets: Collection[str] = (),
) -> tuple[Change, ...]:
    """One change per field whose value differs, in the order the fields are first named."""
    old, new = before or {}, after or {}
    names = list(dict.fromkeys([*old, *new]))
    found = []
    for name in names:
        was, now = old.get(name), new.get(name)
        if name in secrets:
            change = _secret_change(name, was, now)
            if change is not None:
                found.append(change)
        elif _shown(was) != _shown(now):
            found.append(Change(name, _shown(was), _shown(now)))
    return tuple(found)


def _secret_change(name: str, was: object, now: object) -> Change | None:
    if was == now or (not was and not now):
        return None
    if not now:
        return Change(name, SET, REMOVED)
    return Change(name, SET if was else None, CHANGED if was else SET)


def _shown(value: object) -> JsonValue:
    """A value as an entry shows it: JSON's types, dates in ISO 8601 UTC, long texts cut."""
    if isinstance(value, datetime):
        text = value.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return text
    if isinstance(value, str):
        return value if len(value) <= LONGEST_VALUE else value[: LONGEST_VALUE - 1] + "…"
    if isinstance(value, float) and value.is_integer():
        return int(value)  # DynamoDB's numbers come back as floats: 995.0 is the port 995
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_shown(v) for v in value]
    return _shown(str(value))
