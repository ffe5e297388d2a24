"""The outbox drain's dead letters, driven again (`python -m chalicelib.cli redrive-outbox`).

After its retries the drain's event source puts the place of a batch it gave up on in
`<prefix>outbox-dead` (infra/build.py): not the records, but their shard, first and last
sequence numbers and arrival times (`DDBStreamBatchInfo`). Each message is driven again through
the same `drain_records` the function runs: from the stream while it holds the records (24
hours), else from the outbox table (its items are kept 7 days), by their arrival times. A message
whose records are all told is deleted; one that fails again stays, and its line says where.
Delivery is at least once and notifications are claimed per recipient, so a record told twice
sends no mail twice (jobs/outbox.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from chalicelib import aws
from chalicelib.jobs.outbox import drain_records
from chalicelib.logs import get_logger
from chalicelib.settings import get_settings

log = get_logger("jobs.outbox_redrive")

# Outbox items recorded this long before the batch's first record or after its last arrival
# are taken too when the stream no longer holds the batch (arrival follows the write).
ARRIVAL_SLACK = timedelta(minutes=1)
# A message being driven is hidden from other readers this long (the next run sees it again).
VISIBILITY_S = 300


def dead_letter_queue() -> str:
    return f"{get_settings().table_prefix}outbox-dead"


@dataclass
class Redriven:
    messages: int = 0  # dead letters whose records were all told (deleted)
    told: int = 0  # records told
    left: list[str] = field(default_factory=list)  # one line per dead letter that stays

    def line(self) -> str:
        said = f"redrive-outbox: {self.messages} dead letter(s) driven again, {self.told} record(s) told"
        return said + (f"; {len(self.left)} left in {dead_letter_queue()}" if self.left else "")


def redrive(limit: int = 1000) -> Redriven:
    """Drive every dead letter of the outbox drain again (at most `limit` of them)."""
    sqs = aws.client("sqs")
    url = sqs.get_queue_url(QueueName=dead_letter_queue())["QueueUrl"]
    done = Redriven()
    seen = 0
    while seen < limit:
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=VISIBILITY_S
        ).get("Messages", [])
        if not messages:
            return done
        for message in messages:
            seen += 1
            failure, told = _drive(message)
            if failure is None:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                done.messages += 1
                done.told += told
            else:
                done.left.append(f"{message['MessageId']}: {failure}")
    return done


def _drive(message: dict[str, Any]) -> tuple[str | None, int]:
    """(None, records told) when every record of the dead letter was told, else (why, 0)."""
    try:
        info = json.loads(message["Body"])["DDBStreamBatchInfo"]
    except (ValueError, KeyError, TypeError):
        return "not the place of an outbox stream batch: left for a person", 0
    records = stream_records(info) or table_records(info)
    if not records:
        return "its records are neither in the stream nor in the outbox table (over 7 days)", 0
    failed = drain_records(records)
    if failed is not None:
        return f"record {failed} failed again (drain-outbox's log says why)", 0
    log.info("outbox dead letter driven again", extra={"records": len(records)})
    return None, len(records)


def stream_records(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The batch's records while the stream holds them (none once trimmed, after 24 hours)."""
    from chalicelib.store.outbox import streams_client

    streams = streams_client()
    last = int(info["endSequenceNumber"])
    try:
        iterator = streams.get_shard_iterator(
            StreamArn=info["streamArn"],
            ShardId=info["shardId"],
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            SequenceNumber=info["startSequenceNumber"],
        )["ShardIterator"]
        found: list[dict[str, Any]] = []
        while iterator:
            answer = streams.get_records(ShardIterator=iterator, Limit=1000)
            batch = answer.get("Records", [])
            found += [r for r in batch if int(r["dynamodb"]["SequenceNumber"]) <= last]
            if not batch or int(batch[-1]["dynamodb"]["SequenceNumber"]) >= last:
                return found
            iterator = answer.get("NextShardIterator")
        return found
    except Exception as error:  # noqa: BLE001 - trimmed, expired or gone: the table is asked
        log.info("the stream no longer holds the batch", extra={"error": str(error)})
        return []


def table_records(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The outbox items recorded while the batch arrived, as stream records, oldest first."""
    from chalicelib.store.outbox import OutboxRecord

    try:
        first = _moment(info["approximateArrivalOfFirstRecord"]) - ARRIVAL_SLACK
        last = _moment(info["approximateArrivalOfLastRecord"]) + ARRIVAL_SLACK
    except (KeyError, ValueError):
        return []
    dynamodb = aws.client("dynamodb")
    found = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=OutboxRecord.Meta.table_name):
        for item in page["Items"]:
            recorded = OutboxRecord.from_raw_data(item).recorded_on
            if first <= recorded <= last:
                found.append((recorded, item))
    found.sort(key=lambda pair: pair[0])
    return [
        {"eventName": "INSERT", "dynamodb": {"SequenceNumber": f"table-{n}", "NewImage": item}}
        for n, (_, item) in enumerate(found)
    ]


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
