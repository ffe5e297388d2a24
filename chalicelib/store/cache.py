"""The warm container's short memory of users and groups (AGORA_CACHE_SECONDS, default 30).

Every call needs its caller (user and memberships) and the groups it touches, and most pages name
the same few authors again and again: a warm Lambda container keeps those records for a few
seconds instead of reading them on every call. A change made by this container is seen at once
(its writes forget what they change); a change made by another container is seen once the entry
expires, so a privilege change takes effect everywhere within AGORA_CACHE_SECONDS. 0 turns the
memory off. Records that were looked up and not found are not remembered.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Iterable
from typing import Any

# A bound on the memory of one container: a page names at most a few dozen records.
MAX_ENTRIES = 5000

_entries: dict[tuple[str, Hashable], tuple[float, Any]] = {}
_lock = threading.Lock()


def cache_seconds() -> float:
    from chalicelib.settings import get_settings

    return get_settings().cache_seconds


def recall(kind: str, keys: Iterable[Hashable]) -> dict[Hashable, Any]:
    """The fresh records of `kind` among `keys` (the others must be read)."""
    if cache_seconds() <= 0:
        return {}
    now = time.monotonic()
    found = {}
    for key in keys:
        entry = _entries.get((kind, key))
        if entry is not None and entry[0] > now:
            found[key] = entry[1]
    return found


def remember(kind: str, records: dict[Hashable, Any]) -> None:
    seconds = cache_seconds()
    if seconds <= 0 or not records:
        return
    expires = time.monotonic() + seconds
    with _lock:
        if len(_entries) + len(records) > MAX_ENTRIES:
            _drop_expired_or_all()
        for key, record in records.items():
            _entries[(kind, key)] = (expires, record)


def forget(kind: str | None = None, keys: Iterable[Hashable] | None = None) -> None:
    """Forget records this container has just changed (all of `kind`, or everything)."""
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
