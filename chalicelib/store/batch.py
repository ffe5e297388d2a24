"""Batched reads by key across tables: one BatchGetItem (up to 100 keys, several tables at once)
instead of one GetItem per key. Users and groups come from the warm container's memory first
(chalicelib.store.cache). Keys DynamoDB leaves unprocessed (throttling, the 16 MB answer limit) are
asked again with a short backoff.

It names no table: a repository passes its own model (store/users.py, store/groups.py), and
store/refs.py reads what a record or page names, so neither imports the other (no import cycle).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from pynamodb.models import Model

from chalicelib.store import cache

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
            found[model].update(cache.recall(kind, unique))
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
            cache.remember(kind, records)
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
