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
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from chalicelib.settings import get_settings

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
