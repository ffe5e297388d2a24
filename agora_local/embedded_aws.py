"""moto's server as the embedded AWS of `make run` and of the tests that speak to a real endpoint.

moto's DynamoDB is not thread-safe, and its threaded server answers each request on its own
thread: a query iterating a table's dict while another thread inserts fails with "dictionary
changed size during iteration", and `TransactWriteItems` deep-copies every table it touches to be
able to roll back, so it races with every other write and costs time in proportion to the table.
DynamoDB itself serialises nothing a client can see, so one lock around moto's DynamoDB handler
gives the guarantees DynamoDB gives (each call atomic) at no cost that matters: moto is pure
Python under the GIL either way. The rollback keeps moto's own logic and copies only the items the
transaction names.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, NamedTuple

from agora_local.key_pair import KeyPair

# Reentrant: the transaction wrapper below also runs inside the handler's lock.
DYNAMODB_LOCK = threading.RLock()
_patched = False


def serialise_moto_dynamodb() -> None:
    """Make moto's DynamoDB safe for concurrent requests (idempotent, process-wide)."""
    global _patched
    with DYNAMODB_LOCK:
        if _patched:
            return
        import moto.dynamodb.models as backend_module
        from moto.dynamodb.models import DynamoDBBackend
        from moto.dynamodb.models.table import Table
        from moto.dynamodb.responses import DynamoHandler

        call_action = DynamoHandler.call_action

        def one_call_at_a_time(handler: Any) -> Any:
            with DYNAMODB_LOCK:
                return call_action(handler)

        DynamoHandler.call_action = one_call_at_a_time

        transact = DynamoDBBackend.transact_write_items

        def transact_with_item_rollback(backend: Any, transact_items: list[dict[str, Any]]) -> None:
            with DYNAMODB_LOCK:
                saved = _touched_items(backend, transact_items)
                try:
                    transact(backend, transact_items)
                except Exception:
                    # moto "restored" each table to itself (see _NoTableCopy); put back the items
                    # the transaction named, last saved first, as they were before it began.
                    for table, hash_key, range_key, item in reversed(saved):
                        _restore(table, hash_key, range_key, item)
                    raise

        # moto's method, replaced on its class (typed with moto's own `self`): a boundary mypy
        # cannot follow.
        DynamoDBBackend.transact_write_items = transact_with_item_rollback
        # moto's transaction takes `copy.deepcopy(table)` as its snapshot: that one copy (and only
        # that: items are still deep-copied where moto copies them) becomes the table itself. An
        # object stands in for the module moto imported (mypy sees a module-typed name).
        backend_module.copy = _NoTableCopy(Table)
        _patched = True


class _NoTableCopy:
    """Stands in for the `copy` module inside moto's DynamoDB backend."""

    def __init__(self, table_class: type) -> None:
        self._table_class = table_class

    def deepcopy(self, value: Any, memo: Any = None) -> Any:
        if isinstance(value, self._table_class):
            return value
        return copy.deepcopy(value, memo)

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


def _touched_items(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple]:
    """(table, hash key, range key, deep copy of the item or None) for each item named."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    saved = []
    for entry in transact_items:
        for op_type, op in entry.items():
            table = backend.tables.get(op.get("TableName")) if isinstance(op, dict) else None
            if table is None:
                continue
            key = op.get("Item") if op_type == "Put" else op.get("Key")
            try:
                hash_key = DynamoType(key[table.hash_key_attr])
                range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
                current = table.get_item(hash_key, range_key)
            except Exception:
                continue  # moto rejects the malformed key itself, before writing anything of it
            saved.append((table, hash_key, range_key, copy.deepcopy(current)))
    return saved


def _restore(table: Any, hash_key: Any, range_key: Any, item: Any) -> None:
    if range_key is not None:
        if item is None:
            table.items.get(hash_key, {}).pop(range_key, None)
        else:
            table.items[hash_key][range_key] = item
    elif item is None:
        table.items.pop(hash_key, None)
    else:
        table.items[hash_key] = item


class StreamState(NamedTuple):
    """A table's stream in the embedded AWS: its ARN and how many records it holds."""

    arn: str
    records: int


def stream_state(table_name: str) -> StreamState | None:
    """The stream of the embedded DynamoDB's table `table_name` (None: no such table with a
    stream, or more than one, in any account and region), read in this process without a call.
    Its ARN is the one DescribeTable answers (a table made again has a new one)."""
    from moto.dynamodb.models import dynamodb_backends

    tables = [
        backend.tables[table_name]
        for by_region in list(dynamodb_backends.values())
        for backend in list(by_region.values())
        if table_name in backend.tables
    ]
    if len(tables) != 1 or tables[0].stream_shard is None:
        return None
    [table] = tables
    return StreamState(
        f"{table.table_arn}/stream/{table.latest_stream_label}", len(table.stream_shard.items)
    )


def start_moto_server(key_pair: KeyPair, port: int = 0) -> Any:
    """A ThreadedMotoServer on loopback (port 0: a free one), safe for concurrent clients, that
    answers only requests signed with `key_pair` and never a browser (embedded_aws_gate)."""
    from agora_local.embedded_aws_answers import serialise_dynamodb_answers_cheaply
    from agora_local.embedded_aws_gate import GatedMotoServer

    serialise_moto_dynamodb()
    serialise_dynamodb_answers_cheaply()
    share_data_loader_with_moto()
    remember_each_hosts_backend()
    server = GatedMotoServer(key_pair, ip_address="127.0.0.1", port=port)
    server.start()
    return server


def remember_each_hosts_backend() -> None:
    """moto's server finds the backend of each request anew: it lists moto's package folder (some
    250 `isdir` calls) and tries each of 180 URL patterns, 1 to 3 ms a request, under the lock that
    every request of the server takes. The answer depends only on the host and on moto's installed
    files, so each server remembers it per host (idempotent, process-wide)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    find = DomainDispatcherApplication.get_backend_for_host
    if getattr(find, "remembers", False):
        return

    def remembered(dispatcher: Any, host: str | None) -> Any:
        known = dispatcher.__dict__.setdefault("_agora_backend_by_host", {})
        if host not in known:
            backend = find(dispatcher, host)
            if not backend:
                return backend  # asked again next time: moto may infer the host otherwise
            known[host] = backend
        return known[host]

    remembered.remembers = True  # type: ignore[attr-defined]
    DomainDispatcherApplication.get_backend_for_host = remembered


def share_data_loader_with_moto() -> None:
    """moto's own botocore session (each service's backend asks it for the service's regions) reads
    botocore's JSON through the data loader Agora's sessions share (aws.session): the endpoints
    file, which Agora's first client reads too, is parsed once a process, not twice (50 ms of CPU
    a make run start)."""
    from moto.core.base_backend import AccountSpecificBackend

    from chalicelib.aws import session

    # A boto3 Session, made once and cached by moto; its botocore session takes components.
    moto_session = AccountSpecificBackend.get_session()._session
    moto_session.register_component("data_loader", session().get_component("data_loader"))


def stop_moto_server(server: Any) -> None:
    """Stop a server of start_moto_server and forget what it held.

    moto's backends are process-wide, so every ThreadedMotoServer of a process serves the same
    state: a stack, bucket or table left by one server would greet the next one (a test of
    `make deploy` left stack agora-dev for the stack test in the same worker).
    """
    from moto.moto_api._internal.models import moto_api_backend

    server.stop()
    moto_api_backend.reset()
