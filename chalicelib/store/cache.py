"""The warm container's short memory of users and groups (AGORA_CACHE_SECONDS, default 30).

Every call needs its caller (user and memberships) and the groups it touches, and most pages name
the same few authors again and again: a warm Lambda container keeps those records for a few
seconds instead of reading them on every call. A change made by this container is seen at once
(its writes forget what they change); a change made by another container is seen once the entry
expires, so a privilege change takes effect everywhere within AGORA_CACHE_SECONDS. 0 turns the
memory off. Records that were looked up and not found are not remembered.

Within one call (`one_call()`, opened by the HTTP layer around each request) a record is read at
most once whatever the setting: the caller's user, asked for by the privilege check and again by a
handler, costs one read even with AGORA_CACHE_SECONDS=0.

`read_many` reads records by key across tables, remembered ones from memory first and the rest in
one BatchGetItem (up to 100 keys, several tables at once) instead of one GetItem per key; keys
DynamoDB leaves unprocessed (throttling, the 16 MB answer limit) are asked again with a short
backoff. It names no table: a repository passes its own model (store/users.py, store/groups.py),
and store/refs.py reads what a record or page names, so neither imports the other.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from chalicelib.settings import get_settings

if TYPE_CHECKING:
    # Types only: the HTTP layer imports this module at `import app`, before any table is needed.
    from pynamodb.models import Model

# A bound on the memory of one container: a page names at most a few dozen records.
MAX_ENTRIES = 5000

_entries: dict[tuple[str, Hashable], tuple[float, Any]] = {}
_lock = threading.Lock()
# What the current call has read (None outside a call): kept until the call ends.
_this_call: ContextVar[dict[tuple[str, Hashable], Any] | None] = ContextVar(
    "agora_this_call", default=None
)


@contextmanager
def one_call() -> Iterator[None]:
    """Every record read inside is read at most once (one HTTP request, one job step)."""
    token = _this_call.set({})
    try:
        yield
    finally:
        _this_call.reset(token)


def cache_seconds() -> float:
    return get_settings().cache_seconds


def recall(kind: str, keys: Iterable[Hashable]) -> dict[Hashable, Any]:
    """The fresh records of `kind` among `keys` (the others must be read)."""
    this_call = _this_call.get()
    keep = cache_seconds() > 0
    now = time.monotonic()
    found = {}
    for key in keys:
        if this_call is not None and (kind, key) in this_call:
            found[key] = this_call[(kind, key)]
            continue
        entry = _entries.get((kind, key)) if keep else None
        if entry is not None and entry[0] > now:
            found[key] = entry[1]
    return found


def remember(kind: str, records: dict[Hashable, Any]) -> None:
    this_call = _this_call.get()
    if this_call is not None:
        this_call.update({(kind, key): record for key, record in records.items()})
    seconds = cache_seconds()
    if seconds <= 0 or not records:
        return
    expires = time.monotonic() + seconds
    with _lock:
        if len(_entries) + len(records) > MAX_ENTRIES:
            _drop_expired_or_all()
        for key, record in records.items():
            _entries[(kind, key)] = (expires, record)


class Identified(Protocol):
    @property
    def id(self) -> Hashable: ...


PageT = TypeVar("PageT", bound=Sequence[Identified])


def remember_last(kind: str, page: PageT) -> PageT:
    """`page`, its last record remembered by id: the next page's `offset` names it."""
    remember(kind, {record.id: record for record in page[-1:]})
    return page


def forget(kind: str | None = None, keys: Iterable[Hashable] | None = None) -> None:
    """Forget records this container has just changed (all of `kind`, or everything)."""
    keys = None if keys is None else list(keys)
    this_call = _this_call.get()
    if this_call is not None:
        for entry_key in list(this_call):
            if kind is None or (entry_key[0] == kind and (keys is None or entry_key[1] in keys)):
                del this_call[entry_key]
    with _lock:
        if kind is None:
            _entries.clear()
        elif keys is None:
            for entry_key in [k for k in _entries if k[0] == kind]:
                del _entries[entry_key]
        else:
            for key in keys:
                _entries.pop((kind, key), None)


def _drop_expired_or_all() -> None:
    now = time.monotonic()
    for entry_key in [k for k, (expires, _) in _entries.items() if expires <= now]:
        del _entries[entry_key]
    if len(_entries) > MAX_ENTRIES // 2:
        _entries.clear()


def read_through(kind: str, key: Hashable, read: Any) -> Any:
    """The remembered record of `kind` under `key`, or `read()` (remembered when found)."""
    remembered = recall(kind, [key])
    if key in remembered:
        return remembered[key]
    record = read()
    if record is not None:
        remember(kind, {key: record})
    return record


# --- many records by key: memory first, then one BatchGetItem ---------------------------------

MAX_KEYS_PER_REQUEST = 100
MAX_ATTEMPTS = 8
FIRST_BACKOFF_SECONDS = 0.025


class UnprocessedKeys(RuntimeError):
    """DynamoDB kept leaving keys unprocessed (sustained throttling)."""


def _cache_kind(model: type[Model]) -> str | None:
    return getattr(model, "CACHE_KIND", None)


def _key_of(model: type[Model], record: Model) -> Hashable:
    hash_name = model._hash_key_attribute().attr_name
    range_attribute = model._range_key_attribute()
    values = {a.attr_name: getattr(record, name) for name, a in model.get_attributes().items()}
    if range_attribute is None:
        return _plain(values[hash_name])
    return (_plain(values[hash_name]), _plain(values[range_attribute.attr_name]))


def _plain(value: Any) -> Any:
    # NumberAttribute answers floats or ints by what was stored; keys are compared as ints.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _serialized_key(model: type[Model], key: Hashable) -> dict[str, Any]:
    hash_attribute = model._hash_key_attribute()
    range_attribute = model._range_key_attribute()
    if range_attribute is None:
        hash_value, range_value = key, None
    else:
        hash_value, range_value = key  # type: ignore[misc]
    serialized = {
        hash_attribute.attr_name: {hash_attribute.attr_type: hash_attribute.serialize(hash_value)}
    }
    if range_attribute is not None:
        serialized[range_attribute.attr_name] = {
            range_attribute.attr_type: range_attribute.serialize(range_value)
        }
    return serialized


def read_many(wanted: Mapping[type[Model], Iterable[Hashable]]) -> dict[type[Model], dict]:
    """`{model: {key: record}}` for every key that exists; cached kinds from memory first.

    Keys are hash keys, or (hash, range) tuples for tables with a range key.
    """
    found: dict[type[Model], dict] = {model: {} for model in wanted}
    to_read: dict[type[Model], list[Hashable]] = {}
    for model, keys in wanted.items():
        unique = [_plain(k) for k in dict.fromkeys(keys) if k is not None]
        kind = _cache_kind(model)
        if kind is not None:
            found[model].update(recall(kind, unique))
        missing = [k for k in unique if k not in found[model]]
        if missing:
            to_read[model] = missing
    if not to_read:
        return found
    fetched = _batch_get(to_read)
    for model, records in fetched.items():
        found[model].update(records)
        kind = _cache_kind(model)
        if kind is not None:
            remember(kind, records)
    return found


def _batch_get(wanted: dict[type[Model], list[Hashable]]) -> dict[type[Model], dict]:
    by_table = {model.Meta.table_name: model for model in wanted}
    flat = [(model, key) for model, keys in wanted.items() for key in keys]
    found: dict[type[Model], dict] = {model: {} for model in wanted}
    connection = next(iter(wanted))._get_connection().connection
    for start in range(0, len(flat), MAX_KEYS_PER_REQUEST):
        request: dict[str, dict[str, list]] = {}
        for model, key in flat[start : start + MAX_KEYS_PER_REQUEST]:
            table = request.setdefault(model.Meta.table_name, {"Keys": []})
            table["Keys"].append(_serialized_key(model, key))
        _ask(connection, request, by_table, found)
    return found


def _ask(connection: Any, request: dict, by_table: dict, found: dict) -> None:
    backoff = FIRST_BACKOFF_SECONDS
    for attempt in range(MAX_ATTEMPTS):
        answer = connection.dispatch("BatchGetItem", {"RequestItems": request})
        for table_name, items in answer.get("Responses", {}).items():
            model = by_table[table_name]
            for item in items:
                record = model.from_raw_data(item)
                found[model][_key_of(model, record)] = record
        request = answer.get("UnprocessedKeys") or {}
        if not request:
            return
        if attempt + 1 < MAX_ATTEMPTS:
            time.sleep(backoff)
            backoff *= 2
    raise UnprocessedKeys(f"BatchGetItem left keys unprocessed after {MAX_ATTEMPTS} attempts")
