"""The embedded AWS of `make run` (moto's threaded server) under concurrent clients."""

from __future__ import annotations

import threading

import boto3
import pytest
from botocore.config import Config

from agora_local.embedded_aws import start_moto_server, stop_moto_server
from tests.support import create_pk_sk_table, suite_key_pair

TABLE = "embedded-aws-test"


@pytest.fixture(scope="module")
def dynamodb():
    server = start_moto_server(suite_key_pair())
    host, port = server.get_host_and_port()
    client = boto3.client(
        "dynamodb",
        endpoint_url=f"http://{host}:{port}",
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, max_pool_connections=16),
    )
    create_pk_sk_table(client, TABLE)
    yield client
    # Forgets the table too: the module's slow test runs first, apart from its other test, and
    # each sets this fixture up (moto's backends outlive a server).
    stop_moto_server(server)


def item(pk: str, sk: str, **values: str) -> dict:
    return {"pk": {"S": pk}, "sk": {"S": sk}, **{k: {"S": v} for k, v in values.items()}}


def put(pk: str, sk: str, **values: str) -> dict:
    return {
        "Put": {
            "TableName": TABLE,
            "Item": item(pk, sk, **values),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


@pytest.mark.slow
def test_concurrent_transactions_puts_and_queries_all_succeed(dynamodb):
    workers, rounds = 6, 15
    errors: list[BaseException] = []
    start = threading.Barrier(workers)

    def work(worker: int) -> None:
        try:
            start.wait()
            for n in range(rounds):
                dynamodb.transact_write_items(
                    TransactItems=[
                        put("race", f"{worker}-{n}-a", v="1"),
                        put("race", f"{worker}-{n}-b", v="2"),
                    ]
                )
                dynamodb.put_item(TableName=TABLE, Item=item("race", f"{worker}-{n}-c"))
                # COUNT: moto iterates the whole partition as for any query (the race this is
                # about) without sending every item of it back each time (CPU for nothing).
                counted = dynamodb.query(
                    TableName=TABLE,
                    KeyConditionExpression="pk = :pk",
                    ExpressionAttributeValues={":pk": {"S": "race"}},
                    Select="COUNT",
                )
                assert counted["Count"] >= 3  # this worker's own items of this round at least
        except BaseException as error:  # noqa: BLE001 - the test reports every failure
            errors.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    pages = dynamodb.get_paginator("query").paginate(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "race"}},
    )
    assert sum(page["Count"] for page in pages) == workers * rounds * 3


def test_a_cancelled_transaction_restores_exactly_the_items_it_named(dynamodb):
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType

    dynamodb.put_item(TableName=TABLE, Item=item("roll", "updated", v="before"))
    dynamodb.put_item(TableName=TABLE, Item=item("roll", "deleted", v="before"))
    dynamodb.put_item(TableName=TABLE, Item=item("roll", "bystander", v="before"))
    dynamodb.put_item(TableName=TABLE, Item=item("roll", "guard", v="taken"))
    table = dynamodb_backends["123456789012"]["us-east-1"].tables[TABLE]
    bystander_key = (DynamoType({"S": "roll"}), DynamoType({"S": "bystander"}))
    bystander = table.get_item(*bystander_key)

    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": {"pk": {"S": "roll"}, "sk": {"S": "updated"}},
                        "UpdateExpression": "SET v = :v",
                        "ExpressionAttributeValues": {":v": {"S": "after"}},
                    }
                },
                {
                    "Delete": {
                        "TableName": TABLE,
                        "Key": {"pk": {"S": "roll"}, "sk": {"S": "deleted"}},
                    }
                },
                put("roll", "inserted", v="after"),
                put("roll", "guard", v="after"),  # exists: cancels the whole transaction
            ]
        )

    pages = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "roll"}},
    )["Items"]
    assert {i["sk"]["S"]: i["v"]["S"] for i in pages} == {
        "bystander": "before",
        "deleted": "before",
        "guard": "taken",
        "updated": "before",
    }
    # Nothing else was copied or replaced: the cost of the rollback is the items it named.
    assert dynamodb_backends["123456789012"]["us-east-1"].tables[TABLE] is table
    assert table.get_item(*bystander_key) is bystander
