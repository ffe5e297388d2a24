"""Load a fixture document once per worker, then restore what the loader stored.

Most in-process tests start by loading their cast (`tests.fixtures.Community`) through the real
loader into a fresh moto backend: about 0.15 s of CPU a test, the same document for every test that
builds the same cast. `FixtureCopies.load` loads a document for real the first time it meets it in
a fresh backend and keeps moto's items of every table the load filled (pickled, as `empty_tables`
keeps the empty tables); the next time the same document goes into a fresh backend it puts a copy
of those items back instead of loading, and forgets the process caches as the loader does.

Exactly equivalent to loading (tests/services/test_fixture_copies.py), because:
- the loader's outcome depends only on the document, the settings and the stored items, and in a
  fresh backend (every table empty) there are none: the copy is keyed by document and settings;
- it writes DynamoDB items only (no SQS, KMS or S3), by BatchWriteItem and UpdateItem on tables
  without a stream; a document whose load fills a table with a stream (records a reader would see)
  is never copied;
- what depends on the moment or on chance is the same in the copy as in one load: password hashes
  (random salt: the copy's verify the same passwords), and the load time of connectors and players
  (the copy would keep the first load's: documents with either are always loaded for real).
A backend that holds items gets the real loader, so writing then loading behaves as it always did,
unless it holds exactly what the worker's last load or restore left there (every table's items
pickle to the same bytes as that load's copy, and the other tables are empty): a fixture that loads
a cast and then a larger one (`with_two_groups`, then more people) starts its second load from a
state the same document sequence always leaves, so that load is copied too, keyed by both.
Anything else written in between (the test, a request) changes the bytes: the loader runs.
"""

from __future__ import annotations

import copyreg
import io
import json
import pickle
from typing import Any

# The sections whose load stores the time of the load (ConnectorRecord.created_on, the players'
# last_modified): never copied.
TIMED_SECTIONS = ("connectors", "players", "events")


def item_count(table: Any) -> int:
    """How many items a moto table holds (a range-keyed table maps hash key → {range key: item})."""
    if table.range_key_attr is None:
        return len(table.items)
    return sum(len(by_range) for by_range in table.items.values())


def fresh(backend: Any) -> bool:
    """No table holds an item: what a fresh backend's load starts from."""
    return all(item_count(table) == 0 for table in backend.tables.values())


def limited_size_dict(values: Any) -> tuple[Any, tuple[dict[str, Any]]]:
    """An item's attributes (moto's LimitedSizeDict) made again from a plain dict: unpickled key by
    key, each key would sum the size of all the others (60 ms of CPU for a small community)."""
    return type(values), (dict(values),)


def dumps(items: Any) -> bytes:
    """A table's items, pickled so that they unpickle quickly (`limited_size_dict`)."""
    from moto.dynamodb.models.dynamo_type import LimitedSizeDict

    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, LimitedSizeDict: limited_size_dict}
    pickler.dump(items)
    return buffer.getvalue()


def forget_process_caches() -> None:
    """What the loader forgets as it writes (groups, then users): here everything, which in a
    backend that held no item can only have been records nobody stored."""
    from chalicelib.store import base
    from chalicelib.store.groups import GroupRepository

    GroupRepository.forget_cache()
    base.forget()


class FixtureCopies:
    """Per process: document and settings → the pickled items of each table its load filled
    (None: the document is always loaded for real)."""

    def __init__(self) -> None:
        self.copies: dict[str, dict[str, bytes] | None] = {}
        self.restored = 0
        self.loaded = 0
        # The key and copy of what the last load or restore left in the backend.
        self.last: tuple[str, dict[str, bytes]] | None = None

    @staticmethod
    def key(where: tuple[str, str], document: dict[str, Any], before: str = "") -> str:
        from chalicelib.settings import get_settings

        return json.dumps(
            [where, repr(get_settings()), document, before], sort_keys=True, default=str
        )

    def state(self, backend: Any) -> str | None:
        """ "" for a fresh backend; the key of the last load when the backend holds exactly what
        it left; None for anything else."""
        if fresh(backend):
            return ""
        if self.last is None:
            return None
        key, copy = self.last
        for name, table in backend.tables.items():
            if name in copy:
                if dumps(table.items) != copy[name]:
                    return None
            elif item_count(table):
                return None
        return key if copy.keys() <= backend.tables.keys() else None

    def load(self, document: dict[str, Any]) -> None:
        from tests.fixtures import moto_dynamodb

        where, backend = moto_dynamodb()
        before = self.state(backend)
        self.last = None
        if before is None:
            self._load(document)
            return
        key = self.key(where, document, before)
        copy = self.copies.get(key)
        if copy is not None and copy.keys() <= backend.tables.keys():
            for name, table in backend.tables.items():
                if name in copy:
                    table.items = pickle.loads(copy[name])
                elif item_count(table):
                    table.items.clear()  # emptied by the load the copy was taken after
            forget_process_caches()
            self.restored += 1
            self.last = (key, copy)
            return
        self._load(document)
        if key not in self.copies:
            self.copies[key] = self.copy_of(backend, document)
        copy = self.copies[key]
        if copy is not None:
            self.last = (key, copy)

    def _load(self, document: dict[str, Any]) -> None:
        from chalicelib import deps

        deps.fixture_service().load(document)
        self.loaded += 1

    @staticmethod
    def copy_of(backend: Any, document: dict[str, Any]) -> dict[str, bytes] | None:
        if any(document.get(section) for section in TIMED_SECTIONS):
            return None
        if document.get("datesRelativeTo"):
            return None  # its dates are moved to the day of the load
        filled = {name: table for name, table in backend.tables.items() if table.items}
        if any(table.stream_shard is not None for table in filled.values()):
            return None
        return {name: dumps(table.items) for name, table in filled.items()}


# The workers' own: tests that load a `Community` go through it.
COPIES = FixtureCopies()
