"""The transactional outbox: what must follow from a change, written in the same request as it.

Table `outbox`, hash `id` (a random GUID: the domain event's stable id, in its EventBridge detail).
An item holds one domain event (domain/announcements.py): `kind` its class name, `fields` its
fields as JSON. The write of a post, a comment, an event or a moderation and its outbox item are
one TransactWriteItems (`add_to`), so a crash or an AWS failure can never keep one without the
other; a rejected mail's item is put before its log entry (`save_all`), so a retry after a crash
writes it again rather than never.

The table's DynamoDB stream (new images) triggers the `drain-outbox` function (jobs/outbox.py),
which tells the subscribers. Items are never read back by the API and expire after `KEEP_FOR`
(TTL; the stream's REMOVE records of expiry are ignored). `make run`, the CLI and the tests read
the same stream with `StreamReader`, since moto runs no event source mapping.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pynamodb.attributes import TTLAttribute, UnicodeAttribute
from pynamodb.exceptions import TransactWriteError
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib import aws
from chalicelib.aws import cancellation_codes, client
from chalicelib.clock import utc_now
from chalicelib.domain.announcements import announcement_from_json, announcement_to_json
from chalicelib.domain.audit import AuditEntry
from chalicelib.store import audit
from chalicelib.store.base import UtcAttribute, register, table_meta

KEEP_FOR = timedelta(days=7)  # past the stream's 24 h and the drain's retries


@register
class OutboxRecord(Model):
    Meta = table_meta("outbox", stream_view_type="NEW_IMAGE")

    id = UnicodeAttribute(hash_key=True)
    kind = UnicodeAttribute()
    fields = UnicodeAttribute()  # JSON text: numbers stay ints, never Decimals
    recorded_on = UtcAttribute()
    expires = TTLAttribute()


def records(announcements: Iterable[Any], now: datetime) -> list[Model]:
    """One unsaved outbox item per announcement, each with a new id; an audit entry among them
    (domain/audit.py) is its audit log item instead, so that it rides in the same transaction."""
    made: list[Model] = []
    for announcement in announcements:
        if isinstance(announcement, AuditEntry):
            made.append(audit.record_of(announcement))
            continue
        data = announcement_to_json(announcement)
        kind = data.pop("type")
        made.append(
            OutboxRecord(
                str(uuid.uuid4()),
                kind=kind,
                fields=json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                recorded_on=now,
                expires=now + KEEP_FOR,
            )
        )
    return made


def add_to(write: TransactWrite, items: Sequence[Model]) -> None:
    """Put the items in the transaction being built (new ids: no condition needed)."""
    for item in items:
        write.save(item)


def save_with(record: Model, riders: Sequence[Any]) -> None:
    """A put of `record` and the items of `riders` (domain events, audit entries) in one
    transaction."""

    items = records(riders, utc_now())
    with TransactWrite(connection=record._get_connection().connection) as write:
        write.save(record)
        add_to(write, items)


def update_with(
    record: Model, actions: list[Any], riders: Sequence[Any], condition: Any = None
) -> bool:
    """An update of `record` and the items of `riders` (domain events, audit entries) in one
    transaction; False, with nothing written, when `condition` did not hold."""

    items = records(riders, utc_now())
    try:
        with TransactWrite(connection=record._get_connection().connection) as write:
            write.update(record, actions=actions, condition=condition)
            add_to(write, items)
    except TransactWriteError as error:
        # PynamoDB sends the puts (the riders, new ids) before the update: wherever DynamoDB
        # lists the update's failed condition, it is the only condition of the transaction.
        if condition is None or "ConditionalCheckFailed" not in cancellation_codes(error):
            raise
        return False
    return True


def save_all(items: Sequence[Model]) -> None:
    """Put items outside a transaction (BatchWriteItem): before the change they announce."""
    if not items:
        return
    with OutboxRecord.batch_write() as batch:
        for item in items:
            batch.save(item)


class Outbox:
    """Records announcements outside a store transaction (a rejected mail: before its log
    entry)."""

    def save(self, announcements: Sequence[Any]) -> None:
        save_all(records(announcements, utc_now()))


def from_image(image: dict[str, Any]) -> tuple[str, Any]:
    """(outbox id, domain event) of a stream record's NewImage (DynamoDB JSON)."""
    record = OutboxRecord.from_raw_data(image)
    return str(record.id), announcement_from_json(
        {"type": record.kind, **json.loads(record.fields)}
    )


class OutboxMissing(RuntimeError):
    """The outbox table, or its stream, does not exist (yet)."""


def stream_arn(streams: Any = None) -> str:
    """The outbox table's latest stream (asked of DynamoDB Streams, whose ListStreams also
    answers under moto's in-process mock; `streams`: the client to ask)."""
    streams = (streams or streams_client()).list_streams(TableName=OutboxRecord.Meta.table_name)[
        "Streams"
    ]
    if not streams:
        raise OutboxMissing(f"{OutboxRecord.Meta.table_name} has no stream: run create-tables")
    return str(streams[-1]["StreamArn"])


class StreamReader:
    """Reads the outbox stream where no event source mapping runs (`make run`, the CLI, tests).

    It keeps, per shard, where the next read starts; `commit` moves that past what was handled,
    so a failed record is read again by the next `read`, as Lambda's checkpoint does. `latest`
    starts at the stream's end (a CLI command drains what it itself wrote); `position` where
    another reader of the stream got to (`position()`: `make run` keeps it in its snapshot, as
    Lambda's event source mapping keeps its own across deploys); otherwise at its beginning.
    `told` counts the records committed, the position's included. One client per reader
    (`streams`: the one it is given).
    """

    def __init__(
        self,
        arn: str | None = None,
        *,
        latest: bool = False,
        position: ReaderPosition | None = None,
        streams: Any = None,
    ) -> None:
        self._streams = streams or streams_client()
        self.arn = arn or stream_arn(self._streams)
        self.latest = latest
        # shard -> sequence number handled last
        self._after: dict[str, str | None] = dict(position.after) if position else {}
        self.told = position.told if position else 0
        if latest:
            for shard in self._shards():
                self._after[shard] = self._last_sequence(shard)

    def _shards(self) -> list[str]:
        shards, start = [], None
        while True:
            kwargs: dict[str, Any] = {"StreamArn": self.arn}
            if start:
                kwargs["ExclusiveStartShardId"] = start
            description = self._streams.describe_stream(**kwargs)["StreamDescription"]
            shards += [shard["ShardId"] for shard in description.get("Shards", [])]
            start = description.get("LastEvaluatedShardId")
            if not start:
                return shards

    def _last_sequence(self, shard: str) -> str | None:
        last = None
        for record in self._records(shard, None):
            last = record["dynamodb"]["SequenceNumber"]
        return last

    def _records(self, shard: str, after: str | None) -> list[dict[str, Any]]:
        streams = self._streams
        kwargs: dict[str, Any] = {"StreamArn": self.arn, "ShardId": shard}
        if after is None:
            kwargs["ShardIteratorType"] = "TRIM_HORIZON"
        else:
            kwargs["ShardIteratorType"] = "AFTER_SEQUENCE_NUMBER"
            kwargs["SequenceNumber"] = after
        iterator = streams.get_shard_iterator(**kwargs)["ShardIterator"]
        found: list[dict[str, Any]] = []
        while iterator:
            answer = streams.get_records(ShardIterator=iterator, Limit=1000)
            found += answer.get("Records", [])
            if not answer.get("Records"):
                break
            iterator = answer.get("NextShardIterator")
        return found

    def read(self) -> list[tuple[str, list[dict[str, Any]]]]:
        """(shard, its records not yet committed, in order) for every shard with some."""
        batches = []
        for shard in self._shards():
            if shard not in self._after:
                self._after[shard] = None  # a shard made since: all of it is new
            found = self._records(shard, self._after[shard])
            if found:
                batches.append((shard, found))
        return batches

    def commit(self, shard: str, sequence_number: str, records: int = 1) -> None:
        """`records` up to `sequence_number` of `shard` are handled: none is read again."""
        self._after[shard] = sequence_number
        self.told += records

    def position(self) -> ReaderPosition:
        return ReaderPosition(after=tuple(self._after.items()), told=self.told)


@dataclass(frozen=True)
class ReaderPosition:
    """Where a stream reader got to: per shard the sequence number handled last (None: none
    yet), and how many records it has handled in all."""

    after: tuple[tuple[str, str | None], ...]
    told: int


def streams_client() -> Any:
    """DynamoDB Streams at the endpoint DynamoDB itself uses.

    With a custom endpoint (`make run`'s moto server) botocore sends both services there. Without
    one, the streams endpoint is named outright: moto's in-process mock only answers it under
    that host (notes/moto-dynamodb-streams.md), and it is the real one in AWS too."""

    dynamodb = client("dynamodb")
    endpoint = dynamodb.meta.endpoint_url
    region = dynamodb.meta.region_name
    if endpoint == f"https://dynamodb.{region}.amazonaws.com":
        return client("dynamodbstreams", f"https://streams.dynamodb.{region}.amazonaws.com")
    return client("dynamodbstreams")


# -----------------------------------------------------------------------------------------------
# The drain's place in the stream, where no event source mapping keeps it (`make run`, the CLI,
# tests): one reader per stream and process (a test's fresh embedded AWS, or a table made again,
# has a new one), kept across drains.

_readers: dict[str, StreamReader] = {}


@aws.on_reset
def forget_readers() -> None:
    _readers.clear()


def reader() -> StreamReader:
    """This process's reader of the outbox's latest stream, made on first use and kept."""
    streams = streams_client()
    arn = stream_arn(streams)
    found = _readers.get(arn)
    if found is None:
        found = _readers[arn] = StreamReader(arn, streams=streams)
    return found


def drain_position() -> dict[str, dict[str, Any]]:
    """Where this process's drain got to in each stream, as plain data (`make run` keeps it in
    its snapshot: without it a restart would tell every record again, mailing a member about
    posts made before he subscribed)."""
    positions = {arn: reader.position() for arn, reader in _readers.items()}
    return {arn: {"after": dict(p.after), "told": p.told} for arn, p in positions.items()}


def resume_drain(checkpoint: Mapping[str, Mapping[str, Any]]) -> None:
    """Drain from where `drain_position` said another process had got to."""
    _readers.clear()
    for arn, place in checkpoint.items():
        after = tuple((str(shard), sequence) for shard, sequence in place["after"].items())
        _readers[arn] = StreamReader(arn, position=ReaderPosition(after, int(place["told"])))


def resume_drain_at_end() -> None:
    """Drain only what is written from now on (a snapshot kept no checkpoint: its records were
    told by the process that wrote them). Without an outbox stream yet (data older than the
    outbox; `create-tables` makes it after the restore) there is nothing to pass over."""
    _readers.clear()
    try:
        found = reader()
    except OutboxMissing:
        return
    for shard, records in found.read():
        found.commit(shard, records[-1]["dynamodb"]["SequenceNumber"], len(records))


def records_told(arn: str) -> int:
    """How many records of the stream `arn` this process's drain has told (its checkpoint's
    included)."""
    found = _readers.get(arn)
    return 0 if found is None else found.told
