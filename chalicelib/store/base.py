"""What every table shares: names and timeouts from settings, the model registry, paging; the
text the `filter` of posts and comments searches; and the warm container's memory of records,
with records read by key in batches (last)."""

from __future__ import annotations

import dataclasses
import functools
import random
import threading
import time
import types
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar, cast

from pynamodb.attributes import Attribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.connection import base as pynamodb_connection
from pynamodb.exceptions import DeleteError, PutError, TransactWriteError, UpdateError
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    Index,
    KeysOnlyProjection,
    Projection,
)
from pynamodb.models import MetaProtocol, Model
from pynamodb.transactions import TransactWrite

from chalicelib import aws
from chalicelib.aws import error_code, is_cancelled_by_race
from chalicelib.errors import ValidationFailed
from chalicelib.settings import get_settings
from chalicelib.store.per_call import this_call_memory

MODELS: list[type[Model]] = []

# PynamoDB makes a botocore session per table connection and thread through this module-level
# name. Ours is one session per thread (botocore sessions are not thread-safe), shared by every
# table's connection, with the data loader every session shares (aws.session): a cold start parses
# botocore's JSON once, not once per table, and sets up one session and one client class, not one
# per table (24 tables' first clients cost 0.66 s of CPU on sessions of their own, 0.10 s on one).
# `aws.reset()` forgets them with the connections.
_sessions = threading.local()
_session_generation = [0]


def thread_session() -> Any:
    found = getattr(_sessions, "found", None)
    if found is None or found[0] != _session_generation[0]:
        found = _sessions.found = (_session_generation[0], aws.session())
    return found[1]


pynamodb_connection.get_session = thread_session

# PynamoDB also makes a botocore client per table connection: about 10 ms of CPU each, 0.25 s for
# the 24 tables of a `make run` start, a CLI load or export, or a function's cold start touching
# them. botocore clients are thread-safe, and every table's connection asks for the same client
# (same region, endpoint and table_meta's timeouts and retries), so the connections share one,
# made on the first connection's thread. A connection that sends extra headers (none of ours)
# keeps a client of its own: PynamoDB adds them with a hook on the client it made.
# PynamoDB's own `Connection.client` (a property) makes a client when the connection has none. A
# reload of this module (infra/build.py loads the store under a stage's table names) finds ours in
# its place, which keeps PynamoDB's.
_found_client = vars(pynamodb_connection.Connection)["client"]
_make_pynamodb_client: Callable[[Any], Any] = (
    getattr(_found_client, "make", None) or _found_client.fget
)
_shared_clients: dict[tuple[Any, ...], Any] = {}
_shared_clients_lock = threading.Lock()


def _lacks_credentials(client: Any) -> bool:
    """PynamoDB's own test: a client whose credentials came back empty is made again."""
    return bool(client._request_signer and not client._request_signer._credentials)


def shared_client(connection: Any) -> Any:
    """`Connection.client`, shared by the connections that would make the same client."""
    if connection._extra_headers is not None:
        return _make_pynamodb_client(connection)
    key = (
        _session_generation[0],
        connection.region,
        connection.host,
        connection._connect_timeout_seconds,
        connection._read_timeout_seconds,
        connection._max_pool_connections,
        repr(connection._retry_configuration),
        connection._max_retry_attempts_exception,
    )
    with _shared_clients_lock:
        shared = _shared_clients.get(key)
        if shared is None or _lacks_credentials(shared):
            connection._client = None
            shared = _shared_clients[key] = _make_pynamodb_client(connection)
        connection._client = shared
    return shared


class _SharedClient:
    """`Connection.client` as a descriptor that gives way to the instance: once a connection has
    its client (with credentials) it holds it as a plain attribute, read on each call as
    PynamoDB's own `_client` was, without coming back here."""

    make = staticmethod(_make_pynamodb_client)

    def __get__(self, connection: Any, owner: type | None = None) -> Any:
        if connection is None:
            return self
        client = shared_client(connection)
        if not _lacks_credentials(client):
            connection.__dict__["client"] = client
        return client


pynamodb_connection.Connection.client = _SharedClient()  # type: ignore[method-assign,assignment]

M = TypeVar("M", bound=type[Model])


class UtcAttribute(UTCDateTimeAttribute):
    """UTC datetimes stored as sortable strings (`2026-01-02T10:00:00.000000+0000`)."""


T = TypeVar("T")


def nullable(attribute: Attribute[T]) -> Attribute[T | None]:
    """`attribute` (made with `null=True`) typed as holding None too: PynamoDB's stubs type every
    attribute as never None, so a record would not match the Protocol it serves (domain/ports).
    """
    return cast(Attribute[T | None], attribute)


def table_meta(stem: str, **extra: Any) -> MetaProtocol:
    """A PynamoDB `Meta` for table `{AGORA_TABLE_PREFIX}{stem}`.

    No region or host: botocore takes them from AWS_DEFAULT_REGION and AWS_ENDPOINT_URL. Timeouts
    are short, since PynamoDB's defaults wait longer than API Gateway's 29 s.
    """
    attrs = {
        "table_name": get_settings().table_name(stem),
        "billing_mode": "PAY_PER_REQUEST",
        "connect_timeout_seconds": 2,
        "read_timeout_seconds": 5,
        "max_retry_attempts": 3,
        # Every table's connection shares one client (above), and so one pool of connections to
        # DynamoDB: as many as the 24 tables' own pools of PynamoDB's default 10 held in total
        # would be more than a `make run` under load opens; a function uses one at a time.
        "max_pool_connections": 50,
        **extra,
    }
    # PynamoDB reads `Meta` as a class holding these attributes; its stubs call that a protocol.
    return cast(MetaProtocol, type("Meta", (), attrs))


def index_meta(name: str, projection: Projection) -> type:
    return type("Meta", (), {"index_name": name, "projection": projection})


def global_index(
    name: str,
    hash_key: str,
    range_key: str | None = None,
    *,
    range_type: Callable[..., Attribute[Any]] = UtcAttribute,
    keys_only: bool = False,
) -> GlobalSecondaryIndex[Any]:
    """A model's global secondary index `name`: a text hash key, and a range key that is a moment
    (`range_type` otherwise); every attribute projected unless `keys_only`."""
    namespace: dict[str, Any] = {
        "Meta": index_meta(name, KeysOnlyProjection() if keys_only else AllProjection()),
        hash_key: UnicodeAttribute(hash_key=True),
    }
    if range_key is not None:
        namespace[range_key] = range_type(range_key=True)
    # The class statement, with PynamoDB's metaclass collecting the key attributes.
    index_class = types.new_class(
        f"{name.title().replace('-', '')}Index",
        (GlobalSecondaryIndex,),
        exec_body=lambda body: body.update(namespace),
    )
    return cast(GlobalSecondaryIndex[Any], index_class())


def register(model: M) -> M:
    MODELS.append(model)
    return model


@aws.on_reset
def reset_connections() -> None:
    _session_generation[0] += 1
    with _shared_clients_lock:
        _shared_clients.clear()
    for model in MODELS:
        model._connection = None


def conditionally(write: Callable[[], Any]) -> bool:
    """Run a conditional write: True when it happened, False when its condition did not hold.

    Any other failure raises. Every "only if new", "only if still in this state" write of the
    store goes through here, so a lost race is an answer, never an exception to interpret.
    """
    try:
        write()
    except (PutError, UpdateError, DeleteError) as error:
        if error_code(error) == "ConditionalCheckFailedException":
            return False
        raise
    return True


# DynamoDB's limit on one item: attribute names and values together (an index copy of the item
# is the same size, so it fits when the item does).
ITEM_LIMIT_BYTES = 400 * 1024


def item_size(record: Model) -> int:
    """The size DynamoDB counts for `record` as it would be written (a close upper estimate)."""
    return sum(len(name.encode("utf-8")) + _value_size(v) for name, v in record.serialize().items())


def _value_size(value: dict[str, Any]) -> int:
    (kind, data), *_ = value.items()
    if kind in ("S", "N"):
        return len(str(data).encode("utf-8"))
    if kind == "B":
        return len(data)
    if kind in ("SS", "NS"):
        return sum(len(str(v).encode("utf-8")) for v in data)
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + 1 + _value_size(v) for k, v in data.items())
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in data)
    return 1  # BOOL, NULL


def ensure_fits(record: Model, texts: dict[str, str]) -> None:
    """Refuse a record too large for one item (CONTRACT §6: 400 with the key of the text).

    `texts` maps the record's long text attributes to their keys in the API; the largest one is
    named. A text under the advertised limit can still overflow the item with its copies (an
    event's search text repeats its content)."""
    if item_size(record) <= ITEM_LIMIT_BYTES:
        return

    name = max(texts, key=lambda attr: len((getattr(record, attr) or "").encode("utf-8")))
    raise ValidationFailed.one(
        texts[name],
        getattr(record, name),
        f"is too long to store with the rest of the record: at most {ITEM_LIMIT_BYTES} bytes "
        "in all",
    )


# A transaction cancelled by another one on the same items runs again this many times in all.
TRANSACTION_ATTEMPTS = 3


def transact(connection: Any, fill: Callable[[TransactWrite], None]) -> None:
    """Run one TransactWriteItems built by `fill`, all or nothing.

    DynamoDB cancels a transaction that meets another one in progress on the same item
    (`TransactionConflict`) although its own conditions held, and botocore does not retry that:
    it runs again here, a bounded number of times after a short random pause, and then the
    cancellation is raised like any other (the API answers 409 with key `state`).
    """

    for attempt in range(TRANSACTION_ATTEMPTS):
        try:
            with TransactWrite(connection=connection) as write:
                fill(write)
            return
        except TransactWriteError as error:
            if attempt + 1 < TRANSACTION_ATTEMPTS and is_cancelled_by_race(error):
                time.sleep(random.uniform(0, 0.01 * 2**attempt))
                continue
            raise


def sort_moment(moment: datetime) -> str:
    """Fixed-width UTC text, so that string order is time order (isoformat drops zero
    microseconds, so its strings are not all the same width)."""
    # The year padded here: strftime writes year 1 as "1" on Linux (bugs.python.org/issue13305).
    utc = moment.astimezone(UTC)
    return f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%S.%fZ")


def moment_key(moment: datetime, item_id: object) -> str:
    """`<moment>#<id>`: a sort key in time order that stays unique when moments tie."""
    return f"{sort_moment(moment)}#{item_id}"


def serialized_key(record: Model, names: Iterable[str], overrides: dict[str, Any] | None = None):
    """The DynamoDB key `{name: {type: value}}` of a record for an ExclusiveStartKey.

    `overrides` supplies attribute values the record no longer has (an item that left a sparse
    index keeps its place in a list: CONTRACT §7).
    """
    attributes = record.get_attributes()
    key: dict[str, dict[str, Any]] = {}
    for python_name, attribute in attributes.items():
        if attribute.attr_name not in names and python_name not in names:
            continue
        value = (overrides or {}).get(python_name, getattr(record, python_name))
        if value is None:
            continue
        key[attribute.attr_name] = {attribute.attr_type: attribute.serialize(value)}
    return key


def index_start_key(
    record: Model, index: Index, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """ExclusiveStartKey that continues an index Query right after `record`'s position."""
    attributes = record.get_attributes().values()
    table_keys = [a.attr_name for a in attributes if a.is_hash_key or a.is_range_key]
    index_keys = [a.attr_name for a in index.Meta.attributes.values()]
    return serialized_key(record, [*table_keys, *index_keys], overrides)


# A filtered page reads at most this many items, in one Query: DynamoDB filters after reading, so a
# filter that matches little would otherwise read the whole list (CONTRACT §7: page-sized work).
FILTER_READ_LIMIT = 100


class Page(list):
    """The items of one page. `last_read_id` is the id of the last item a filtered read looked at
    when it stopped before the list's end with room left on the page: the next page goes on from
    there, even when this one matched nothing."""

    last_read_id: Any = None

    def mapped(self, as_record: Callable[[Any], object]) -> Page:
        """The same page, each item as the rules hold it (a frozen domain record)."""
        page = Page(as_record(item) for item in self)
        page.last_read_id = self.last_read_id
        return page


def query_page(
    index: Index | type[Model],
    hash_key: Any,
    *,
    limit: int,
    forward: bool,
    start_key: dict[str, Any] | None = None,
    after: Model | None = None,
    range_key_condition: Any = None,
    filter_condition: Any = None,
    last_read_id_of: Callable[[dict[str, Any]], Any] | None = None,
) -> Page:
    """One page of a Query, in index order, from `start_key` or right after `after`'s place in
    the index.

    Without a filter a page is one request of `limit` items. With one it is still one request,
    of at most `FILTER_READ_LIMIT` items (never fewer than `limit`): the page holds the matches
    among them, and may hold fewer than `limit` while the list goes on (see `Page.last_read_id`).
    `last_read_id_of` reads the item id out of a LastEvaluatedKey where it is not the hash key.
    """
    if after is not None:
        assert isinstance(index, Index), "`after` continues an index's Query"
        start_key = index_start_key(after, index)
    if filter_condition is None:
        return Page(
            index.query(
                hash_key,
                range_key_condition=range_key_condition,
                scan_index_forward=forward,
                limit=limit,
                page_size=limit,
                last_evaluated_key=start_key,
            )
        )
    results = index.query(
        hash_key,
        range_key_condition=range_key_condition,
        filter_condition=filter_condition,
        scan_index_forward=forward,
        page_size=max(limit, FILTER_READ_LIMIT),
        last_evaluated_key=start_key,
    )
    raw = next(results.page_iter)  # exactly one request
    model: Any = index if isinstance(index, type) else index._model
    matched = [model.from_raw_data(item) for item in raw.get("Items", [])]
    page = Page(matched[:limit])
    last_read = raw.get("LastEvaluatedKey")
    if last_read and len(matched) <= limit:
        page.last_read_id = (last_read_id_of or functools.partial(_hash_key_value, model))(
            last_read
        )
    return page


def _hash_key_value(model: Any, key: dict[str, Any]) -> Any:
    for attribute in model.get_attributes().values():
        if attribute.is_hash_key:
            return attribute.deserialize(key[attribute.attr_name][attribute.attr_type])
    raise ValueError(f"{model.__name__} has no hash key")


Frozen = TypeVar("Frozen")


def frozen(record: Model, kind: type[Frozen], **shaped: Any) -> Frozen:
    """`record` as the rules hold it: the frozen domain record `kind` (chalicelib/domain), each
    field read from the record's attribute of the same name, or taken from `shaped` where the
    value needs shaping (a JSON list made a tuple)."""

    names = [f.name for f in dataclasses.fields(cast(Any, kind))]
    return kind(
        **{name: shaped[name] if name in shaped else getattr(record, name) for name in names}
    )


# -----------------------------------------------------------------------------------------------
# What the `filter` of posts and comments searches: one rule, applied by the records' index-key
# hooks (store/posts.py, store/comments.py) whoever writes them (API, fixture loader, mail in).


# DynamoDB's item limit is 400 KB; a post or comment from mail keeps its content under 150,000
# bytes (services/mail_in/rules.py), which leaves this much for its search copy.
MAX_SEARCH_TEXT_BYTES = 60_000


def search_text(*parts: str) -> str:
    """The parts' text (HTML reduced to its text), lower-cased (DynamoDB's `contains` is
    case-sensitive), cut to `MAX_SEARCH_TEXT_BYTES` of UTF-8."""
    text = "\n".join(parts).lower()
    data = text.encode("utf-8")
    if len(data) <= MAX_SEARCH_TEXT_BYTES:
        return text
    return data[:MAX_SEARCH_TEXT_BYTES].decode("utf-8", "ignore")


# -----------------------------------------------------------------------------------------------
# The warm container's short memory of users and groups (AGORA_CACHE_SECONDS, default 30).
#
# Every call needs its caller (user and memberships) and the groups it touches, and most pages name
# the same few authors again and again: a warm Lambda container keeps those records for a few
# seconds instead of reading them on every call. A change made by this container is seen at once
# (its writes forget what they change); a change made by another container is seen once the entry
# expires, so a privilege change takes effect everywhere within AGORA_CACHE_SECONDS. 0 turns the
# memory off. Records that were looked up and not found are not remembered.
#
# Within one call (store/per_call.py `one_call()`, opened by the HTTP layer around each request) a
# record is read at most once whatever the setting: the caller's user, asked for by the privilege
# check and again by a handler, costs one read even with AGORA_CACHE_SECONDS=0.
#
# `read_many` reads records by key across tables, remembered ones from memory first and the rest in
# one BatchGetItem (up to 100 keys, several tables at once) instead of one GetItem per key; keys
# DynamoDB leaves unprocessed (throttling, the 16 MB answer limit) are asked again with a short
# backoff. It names no table: a repository passes its own model (store/users.py, store/groups.py),
# and store/refs.py reads what a record or page names, so neither imports the other.


# A bound on the memory of one container: a page names at most a few dozen records.
MAX_ENTRIES = 5000

_entries: dict[tuple[str, Hashable], tuple[float, Any]] = {}
_lock = threading.Lock()


def cache_seconds() -> float:
    return get_settings().cache_seconds


def recall(kind: str, keys: Iterable[Hashable]) -> dict[Hashable, Any]:
    """The fresh records of `kind` among `keys` (the others must be read)."""
    this_call = this_call_memory.get()
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
    this_call = this_call_memory.get()
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
    this_call = this_call_memory.get()
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


Cached = TypeVar("Cached", bound=Model)


def cached_get(model: type[Cached], key: Hashable) -> Cached | None:
    """The item of a model the container remembers (its `CACHE_KIND`: users, groups) under its
    hash `key`: from memory when it has it, else one GetItem; None when there is none."""

    def read() -> Cached | None:
        try:
            return model.get(key)
        except model.DoesNotExist:
            return None

    kind = _cache_kind(model)
    assert kind is not None, f"{model.__name__} names no CACHE_KIND"
    found: Cached | None = read_through(kind, key, read)
    return found


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
