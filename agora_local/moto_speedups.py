"""moto's in-process mock, made cheaper for the tests without changing what any call answers.

Each is work moto repeats on every call whose outcome cannot differ from the first time's, or work
whose result the caller throws away; `install()` applies them all once per process (the `aws`
fixture calls it). tests/services/test_moto_speedups.py checks each against moto's own.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_installed = False
_install_lock = threading.Lock()
# (owner, attribute name, moto's own) for each replaced attribute: `as_released` puts them back.
_REPLACED: list[tuple[Any, str, Any]] = []


def _replace(owner: Any, name: str, new: Any, released: Any = None) -> None:
    _REPLACED.append((owner, name, getattr(owner, name) if released is None else released))
    setattr(owner, name, new)


@contextmanager
def as_released() -> Iterator[None]:
    """moto as released, for the block (the tests that compare answers with and without)."""
    ours = [(owner, name, getattr(owner, name)) for owner, name, _ in _REPLACED]
    for owner, name, original in _REPLACED:
        setattr(owner, name, original)
    try:
        yield
    finally:
        for owner, name, new in ours:
            setattr(owner, name, new)


def install() -> None:
    global _installed
    with _install_lock:
        if _installed:
            return
        cache_handler_method_names()
        cache_regions_per_service()
        query_only_candidate_items()
        serialise_dynamodb_answers_cheaply()
        _installed = True


def cache_handler_method_names() -> None:
    """moto looks up whether a request's action is a method of its handler by listing the
    handler class's functions (`inspect.getmembers`) on every request: about 1% of the CPU of
    tests/api. The list depends on the class only, so it is kept per class."""
    import moto.core.responses as responses

    _replace(
        responses,
        "method_names_from_class",
        functools.cache(responses.method_names_from_class),
    )


def cache_regions_per_service() -> None:
    """A fresh moto backend (every test's) lists the regions of each service it is asked for
    from botocore's endpoint data, cached per backend object, so anew for every test: about 1.5%
    of the CPU of tests/api. The list depends on the service name and botocore's data only, so it
    is kept per service name."""
    from moto.core.base_backend import AccountSpecificBackend

    generate = AccountSpecificBackend._generate_regions.__wrapped__  # under moto's lru_cache

    @functools.cache
    def regions_of(service_name: str) -> tuple[str, ...]:
        return tuple(generate(None, service_name))

    def generate_regions(backend: Any, service_name: str) -> list[str]:
        return list(regions_of(service_name))

    _replace(AccountSpecificBackend, "_generate_regions", generate_regions)


def serialise_dynamodb_answers_cheaply() -> None:
    """DynamoDB's answers written without moto's per-member alias machinery, as `make run`'s
    embedded AWS writes them (agora_local/embedded_aws_answers.py). A server that a test started
    may have installed it in this process already: moto's own is what `as_released` puts back
    either way."""
    from moto.core.responses import ActionResult

    from agora_local.embedded_aws_answers import cheap_execute_result

    current = ActionResult.execute_result
    moto_own = getattr(current, "moto_own", current)
    _replace(ActionResult, "execute_result", cheap_execute_result(moto_own), released=moto_own)


# Per thread: id(table) → the items its running query may answer (see below).
_query_candidates = threading.local()


def query_only_candidate_items() -> None:
    """moto's Query lists and sorts every item of the table (`Table.all_items`), then keeps
    those under the queried key and sorts them again: 6% of the CPU of tests/api, growing with
    everything a test stored. Here a query on the table's own key reads only the items stored
    under that hash key (moto keeps them in a dict by hash key, whose equality is the one its
    Query compares with), and a query on an index reads the items unsorted. The answer is the
    same: both paths sort what they keep by a total order afterwards (the table's range key
    within one hash key; an index's keys, then the table's), so the first sort never decides
    the order, and no other item could have matched the key.

    Scan and everything else still call `all_items` unchanged."""
    from moto.dynamodb.models.table import Table

    all_items: Callable[[Any], list[Any]] = Table.all_items
    query: Callable[..., Any] = Table.query

    def candidates_or_all_items(table: Any) -> list[Any]:
        chosen = getattr(_query_candidates, "by_table", {}).get(id(table))
        if chosen is not None:
            return chosen
        return all_items(table)

    def query_with_candidates(table: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name:
            chosen = unsorted_items(table)
        elif hash_key is not None:
            chosen = items_under(table, hash_key)
        else:  # no hash key to look items up by: as released
            return query(table, hash_key, *args, **kwargs)
        by_table = _query_candidates.__dict__.setdefault("by_table", {})
        by_table[id(table)] = chosen
        try:
            return query(table, hash_key, *args, **kwargs)
        finally:
            del by_table[id(table)]

    _replace(Table, "all_items", candidates_or_all_items)
    _replace(Table, "query", query_with_candidates)


def unsorted_items(table: Any) -> list[Any]:
    """`Table.all_items` without its sort."""
    if table.range_key_attr:
        return [item for by_range in table.items.values() for item in by_range.values()]
    return list(table.items.values())


def items_under(table: Any, hash_key: Any) -> list[Any]:
    """The items stored under `hash_key`: what `Table.all_items` holds whose hash key equals it."""
    stored = table.items.get(hash_key)
    if stored is None:
        return []
    if table.range_key_attr:
        return list(stored.values())
    return [stored]
