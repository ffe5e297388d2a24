"""`create_tables` makes each table as PynamoDB's `Model.create_table` would (it skips only
PynamoDB's DescribeTable asking whether the table exists)."""

from __future__ import annotations

from typing import Any

from chalicelib.aws import client
from chalicelib.store.tables import all_models, create_tables

# What differs between two creations of the same table.
VOLATILE = {"CreationDateTime", "LatestStreamLabel", "LatestStreamArn", "TableId"}


def tables_as_described() -> dict[str, Any]:
    dynamodb = client("dynamodb")
    described = {}
    for name in dynamodb.list_tables()["TableNames"]:
        table = dynamodb.describe_table(TableName=name)["Table"]
        ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        described[name] = ({k: v for k, v in table.items() if k not in VOLATILE}, ttl)
    return described


def delete_every_table() -> None:
    dynamodb = client("dynamodb")
    for name in dynamodb.list_tables()["TableNames"]:
        dynamodb.delete_table(TableName=name)


def test_create_tables_makes_the_tables_pynamodb_makes(aws):
    delete_every_table()
    created = create_tables(wait=True)
    ours = tables_as_described()
    assert sorted(created) == sorted(ours) == sorted(m.Meta.table_name for m in all_models())
    delete_every_table()
    for model in all_models():
        model.create_table(wait=True, billing_mode="PAY_PER_REQUEST")
    pynamodbs = tables_as_described()
    assert ours == pynamodbs
    # What the comparison covers: indexes, a stream, TTL.
    outbox = next(t for name, (t, _) in ours.items() if name.endswith("outbox"))
    assert outbox["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    assert any(t.get("GlobalSecondaryIndexes") for t, _ in ours.values())
    assert any(ttl["TimeToLiveStatus"] == "ENABLED" for _, ttl in ours.values())
    assert create_tables(wait=True) == []
