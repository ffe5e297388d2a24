"""moto's DynamoDB (and DynamoDB Streams) answers, written by the cheap serializer of
agora_local/embedded_aws_answers.py as the tests' moto and `make run`'s embedded AWS run it, are
byte for byte what released moto's serializer writes, and botocore parses them into the same
answer: for every operation Agora uses, over a stored community and a table holding every kind
of attribute."""

from __future__ import annotations

import base64
import datetime
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.parsers import create_parser

from agora_local.embedded_aws import start_moto_server, stop_moto_server
from agora_local.embedded_aws_answers import cheap_answer
from chalicelib.aws import client
from chalicelib.store.outbox import streams_client
from tests.fixtures import moto_dynamodb
from tests.services.test_moto_speedups import stored_community
from tests.support import (
    PK_SK_ATTRIBUTES,
    PK_SK_KEY_SCHEMA,
    create_pk_sk_table,
    suite_key_pair,
)

SCRATCH = "answers-scratch"
BLOB = bytes(range(256))  # every byte value, not valid UTF-8


class Recorder:
    """Each answer moto gave (what the client received) with what released moto writes for the
    same result, and the answer botocore parsed from it."""

    def __init__(self) -> None:
        self.answers: list[dict[str, Any]] = []


@contextmanager
def recording() -> Iterator[Recorder]:
    """Wraps moto's `ActionResult.execute_result` (whatever is installed: ours, with moto's own
    underneath) to keep each answer and what moto's own writes for the same result."""
    from moto.core.responses import ActionResult
    from moto.core.serialize import ResponseSerializer

    installed = ActionResult.execute_result
    moto_own = installed.moto_own  # ours is installed, keeping moto's own
    moto_serialize = ResponseSerializer.serialize
    recorder = Recorder()
    serialized_by_moto: list[int] = []

    def counted_serialize(serializer: Any, result: Any) -> Any:
        serialized_by_moto.append(1)
        return moto_serialize(serializer, result)

    def execute_result(action_result: Any, context: Any) -> Any:
        before = len(serialized_by_moto)
        sent = installed(action_result, context)
        by_moto = len(serialized_by_moto) > before
        recorder.answers.append(
            {
                "service": context.service_model.service_name,
                "operation": context.operation_model.name,
                "by_moto": by_moto,
                "sent": copied(sent),  # moto adds its headers to the dict afterwards
                "released": copied(moto_own(action_result, context)),
                "cheap": copied(cheap_answer(action_result.result, context)),
            }
        )
        return sent

    ActionResult.execute_result = execute_result  # type: ignore[method-assign]
    ResponseSerializer.serialize = counted_serialize  # type: ignore[method-assign]
    try:
        yield recorder
    finally:
        ActionResult.execute_result = installed  # type: ignore[method-assign]
        ResponseSerializer.serialize = moto_serialize  # type: ignore[method-assign]


def copied(answer: Any) -> Any:
    if answer is None:
        return None
    status, headers, body = answer
    return status, dict(headers), body


class Calls:
    """Calls a client, pairing each parsed answer (or parsed error) with the one moto answer."""

    def __init__(self, recorder: Recorder, clients: dict[str, Any]) -> None:
        self.recorder = recorder
        self.clients = clients
        self.pairs: list[tuple[Any, str, Any, dict[str, Any]]] = []

    def __call__(self, service: str, operation: str, **params: Any) -> Any:
        api = self.clients[service]
        before = len(self.recorder.answers)
        try:
            parsed = getattr(api, operation)(**params)
        except ClientError as error:
            parsed = error.response
            if len(self.recorder.answers) == before:
                return parsed  # an error moto answers without its serializer (not ours either)
        assert len(self.recorder.answers) == before + 1, operation  # one answer, no retry
        parsed = dict(parsed)
        parsed.pop("ResponseMetadata", None)
        self.pairs.append((api, operation, parsed, self.recorder.answers[-1]))
        return parsed


def released_parsed(api: Any, answer: dict[str, Any]) -> dict[str, Any]:
    """What botocore parses from released moto's answer."""
    status, headers, body = answer["released"]
    model = api.meta.service_model.operation_model(answer["operation"])
    parser = create_parser(api.meta.service_model.metadata["protocol"])
    parsed = parser.parse(
        {"status_code": status, "headers": headers, "body": body.encode()}, model.output_shape
    )
    parsed.pop("ResponseMetadata", None)
    return dict(parsed)


def check(calls: Calls) -> set[str]:
    """Every answer equals released moto's; every successful one was written by ours. The
    operations answered so."""
    for api, operation, parsed, answer in calls.pairs:
        status = answer["released"][0]
        assert answer["sent"] == answer["released"], operation
        assert parsed == released_parsed(api, answer), operation
        if status == 200:  # written by ours, not by moto's serializer
            assert answer["cheap"] == answer["released"], operation
            assert not answer["by_moto"], operation
        else:
            assert answer["cheap"] is None and answer["by_moto"], operation  # errors: moto's own
    return {answer["operation"] for _, _, _, answer in calls.pairs}


def every_kind_of_item(pk: str, sk: str) -> dict[str, Any]:
    return {
        "pk": {"S": pk},
        "sk": {"S": sk},
        "gsi": {"S": "one"},
        "blob": {"B": BLOB},
        "blobs": {"BS": [BLOB, b"\x00", b"\xff\xfe"]},
        "number": {"N": "-12.50"},
        "numbers": {"NS": ["1", "2.5", "-3e2"]},
        "strings": {"SS": ["a", "ü", "\u2603"]},
        "yes": {"BOOL": True},
        "no": {"BOOL": False},
        "nothing": {"NULL": True},
        "empty": {"S": ""},
        "nested": {
            "M": {
                "list": {"L": [{"S": "x"}, {"N": "1"}, {"B": b"\x01\x02"}, {"M": {}}, {"L": []}]},
                "map": {"M": {"deeper": {"M": {"blob": {"B": b"\x00"}}}}},
            }
        },
    }


def scratch_table_scenario(call: Calls) -> None:
    """Creating, describing, writing and reading a table with a GSI, a stream and a TTL; items
    with every kind of attribute; a cancelled transaction; streams' records of it all."""
    key = {"pk": {"S": "p"}, "sk": {"S": "1"}}
    call(
        "dynamodb",
        "create_table",
        TableName=SCRATCH,
        KeySchema=PK_SK_KEY_SCHEMA,
        AttributeDefinitions=[*PK_SK_ATTRIBUTES, {"AttributeName": "gsi", "AttributeType": "S"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-gsi",
                "KeySchema": [
                    {"AttributeName": "gsi", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    described = call("dynamodb", "describe_table", TableName=SCRATCH)
    assert isinstance(described["Table"]["CreationDateTime"], datetime.datetime)
    call("dynamodb", "list_tables")
    call("dynamodb", "list_tables", Limit=1)
    ttl = {"Enabled": True, "AttributeName": "expires"}
    call("dynamodb", "update_time_to_live", TableName=SCRATCH, TimeToLiveSpecification=ttl)
    call("dynamodb", "describe_time_to_live", TableName=SCRATCH)

    for sk in ("1", "2", "3"):
        call(
            "dynamodb",
            "put_item",
            TableName=SCRATCH,
            Item=every_kind_of_item("p", sk),
            ReturnConsumedCapacity="TOTAL",
        )
    overwritten = call(
        "dynamodb",
        "put_item",
        TableName=SCRATCH,
        Item=every_kind_of_item("p", "3"),
        ReturnValues="ALL_OLD",
    )
    assert overwritten["Attributes"]["blob"]["B"] == BLOB
    got = call("dynamodb", "get_item", TableName=SCRATCH, Key=key, ConsistentRead=True)
    assert got["Item"]["blobs"]["BS"] == [BLOB, b"\x00", b"\xff\xfe"]
    assert got["Item"]["numbers"]["NS"] and got["Item"]["nested"]["M"]["list"]["L"][2]
    call("dynamodb", "get_item", TableName=SCRATCH, Key={"pk": {"S": "p"}, "sk": {"S": "none"}})
    call(
        "dynamodb",
        "get_item",
        TableName=SCRATCH,
        Key=key,
        ProjectionExpression="#b, nested.#l[2], numbers",
        ExpressionAttributeNames={"#b": "blob", "#l": "list"},
        ReturnConsumedCapacity="TOTAL",
    )
    for values in ("ALL_NEW", "ALL_OLD", "UPDATED_NEW", "UPDATED_OLD", "NONE"):
        call(
            "dynamodb",
            "update_item",
            TableName=SCRATCH,
            Key=key,
            UpdateExpression="SET #n = #n + :one, #b = :b ADD numbers :more",
            ExpressionAttributeNames={"#n": "number", "#b": "blob"},
            ExpressionAttributeValues={
                ":one": {"N": "1"},
                ":b": {"B": b"\x00\x01"},
                ":more": {"NS": ["7"]},
            },
            ReturnValues=values,
            ReturnConsumedCapacity="INDEXES",
        )
    call(
        "dynamodb",
        "update_item",
        TableName=SCRATCH,
        Key=key,
        UpdateExpression="SET gone = :x",
        ConditionExpression="attribute_not_exists(pk)",
        ExpressionAttributeValues={":x": {"S": "x"}},
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    for index in (None, "by-gsi"):
        start: dict[str, Any] | None = None
        while True:
            page = call(
                "dynamodb",
                "query",
                TableName=SCRATCH,
                KeyConditionExpression="#h = :h",
                ExpressionAttributeNames={"#h": "gsi" if index else "pk"},
                ExpressionAttributeValues={":h": {"S": "one" if index else "p"}},
                Limit=2,
                ReturnConsumedCapacity="TOTAL",
                **({"IndexName": index} if index else {}),
                **({"ExclusiveStartKey": start} if start else {}),
            )
            start = page.get("LastEvaluatedKey")
            if not start:
                break
    call("dynamodb", "scan", TableName=SCRATCH, Select="COUNT")
    batch = call(
        "dynamodb",
        "batch_get_item",
        RequestItems={
            SCRATCH: {
                "Keys": [
                    key,
                    {"pk": {"S": "p"}, "sk": {"S": "2"}},
                    {"pk": {"S": "no"}, "sk": key["sk"]},
                ],
                "ProjectionExpression": "pk, sk, #b",
                "ExpressionAttributeNames": {"#b": "blob"},
            }
        },
        ReturnConsumedCapacity="TOTAL",
    )
    assert batch["UnprocessedKeys"] == {}
    written = call(
        "dynamodb",
        "batch_write_item",
        RequestItems={
            SCRATCH: [
                {"PutRequest": {"Item": every_kind_of_item("b", "1")}},
                {"DeleteRequest": {"Key": {"pk": {"S": "p"}, "sk": {"S": "2"}}}},
            ]
        },
        ReturnConsumedCapacity="TOTAL",
    )
    assert written["UnprocessedItems"] == {}
    call(
        "dynamodb",
        "transact_write_items",
        TransactItems=[
            {"Put": {"TableName": SCRATCH, "Item": every_kind_of_item("t", "1")}},
            {
                "Update": {
                    "TableName": SCRATCH,
                    "Key": key,
                    "UpdateExpression": "SET yes = :f",
                    "ExpressionAttributeValues": {":f": {"BOOL": False}},
                }
            },
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    cancelled = call(
        "dynamodb",
        "transact_write_items",
        TransactItems=[
            {"Put": {"TableName": SCRATCH, "Item": every_kind_of_item("t", "2")}},
            {
                "ConditionCheck": {
                    "TableName": SCRATCH,
                    "Key": key,
                    "ConditionExpression": "attribute_not_exists(pk)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        ],
    )
    assert cancelled["Error"]["Code"] == "TransactionCanceledException"
    call(
        "dynamodb",
        "transact_get_items",
        TransactItems=[
            {"Get": {"TableName": SCRATCH, "Key": key}},
            {"Get": {"TableName": SCRATCH, "Key": {"pk": {"S": "t"}, "sk": {"S": "1"}}}},
            {"Get": {"TableName": SCRATCH, "Key": {"pk": {"S": "t"}, "sk": {"S": "9"}}}},
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    call(
        "dynamodb",
        "delete_item",
        TableName=SCRATCH,
        Key={"pk": {"S": "t"}, "sk": {"S": "1"}},
        ReturnValues="ALL_OLD",
    )
    call("dynamodb", "delete_item", TableName=SCRATCH, Key={"pk": {"S": "t"}, "sk": {"S": "1"}})
    call("dynamodb", "get_item", TableName="no-such-table", Key=key)  # an error: moto's own

    arn = described["Table"]["LatestStreamArn"]
    stream = call("dynamodbstreams", "describe_stream", StreamArn=arn)
    assert isinstance(stream["StreamDescription"]["CreationRequestDateTime"], datetime.datetime)
    shard = stream["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = call(
        "dynamodbstreams",
        "get_shard_iterator",
        StreamArn=arn,
        ShardId=shard,
        ShardIteratorType="TRIM_HORIZON",
    )["ShardIterator"]
    records = call("dynamodbstreams", "get_records", ShardIterator=iterator, Limit=1000)
    assert len(records["Records"]) > 10
    assert any("OldImage" in record["dynamodb"] for record in records["Records"])
    call("dynamodbstreams", "list_streams", TableName=SCRATCH)


AGORA_OPERATIONS = {"Query", "GetItem", "BatchGetItem", "DescribeTable", "ListTables"}
SCRATCH_OPERATIONS = {
    "CreateTable",
    "DescribeTable",
    "ListTables",
    "UpdateTimeToLive",
    "DescribeTimeToLive",
    "PutItem",
    "GetItem",
    "UpdateItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "BatchWriteItem",
    "TransactWriteItems",
    "TransactGetItems",
    "DeleteItem",
    "DescribeStream",
    "GetShardIterator",
    "GetRecords",
    "ListStreams",
}


def stored_tables_scenario(call: Calls) -> None:
    """Reading Agora's tables as a stored community left them: each table described, its items
    got one by one and in batches, queried on the table and on each index, in pages."""
    _, backend = moto_dynamodb()
    filled = [table for table in backend.tables.values() if table.items]
    assert len(filled) > 5
    call("dynamodb", "list_tables")
    for table in filled:
        call("dynamodb", "describe_table", TableName=table.name)
        keys = [_key_of(table, item) for item in table.all_items()[:30]]
        call("dynamodb", "get_item", TableName=table.name, Key=keys[0])
        call(
            "dynamodb",
            "batch_get_item",
            RequestItems={table.name: {"Keys": keys}},
            ReturnConsumedCapacity="TOTAL",
        )
        for index in [None, *(index.name for index in table.all_indexes())]:
            _query_a_page(call, table, index)


def _key_of(table: Any, item: Any) -> dict[str, Any]:
    """An item's key, as a request names it (moto's table and item)."""
    return {
        name: item.attrs[name].to_json()
        for name in (table.hash_key_attr, table.range_key_attr)
        if name
    }


def _query_a_page(call: Calls, table: Any, index: str | None) -> None:
    """A page of the table (or of one of its indexes) for the hash key of its first item that
    has one; nothing when no item has it."""
    hash_attr = table.hash_key_attr
    if index:
        schema = next(i.schema for i in table.all_indexes() if i.name == index)
        hash_attr = next(p["AttributeName"] for p in schema if p["KeyType"] == "HASH")
    holders = [item for item in table.all_items() if hash_attr in item.attrs]
    if not holders:
        return
    call(
        "dynamodb",
        "query",
        TableName=table.name,
        KeyConditionExpression="#h = :h",
        ExpressionAttributeNames={"#h": hash_attr},
        ExpressionAttributeValues={":h": holders[0].attrs[hash_attr].to_json()},
        Limit=3,
        **({"IndexName": index} if index else {}),
    )


def test_every_dynamodb_answer_is_released_motos(community):
    stored_community(community)
    clients = {"dynamodb": client("dynamodb"), "dynamodbstreams": streams_client()}
    with recording() as recorder:
        call = Calls(recorder, clients)
        stored_tables_scenario(call)
        scratch_table_scenario(call)
    answered = check(call)
    assert AGORA_OPERATIONS | SCRATCH_OPERATIONS <= answered
    assert len(call.pairs) > 60


def test_a_blob_is_written_as_moto_writes_it(aws):
    """The base64 of the raw bytes, never of their base64 (what the item holds on the wire)."""
    dynamodb = client("dynamodb")
    stored = every_kind_of_item("p", "1")
    create_pk_sk_table(dynamodb, SCRATCH)
    dynamodb.put_item(TableName=SCRATCH, Item=stored)
    with recording() as recorder:
        got = dynamodb.get_item(TableName=SCRATCH, Key={"pk": {"S": "p"}, "sk": {"S": "1"}})
    _, _, body = recorder.answers[0]["sent"]
    assert base64.b64encode(BLOB).decode() in body
    assert got["Item"] == stored


class Stored:
    """An object, not a dict: moto's picker reads its attributes (snake_case ones too)."""

    def __init__(self, **attributes: Any) -> None:
        self.__dict__.update(attributes)


WHEN = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC)

# (operation, a result as a handler might hand it over, whether ours writes it or leaves it to
# moto's own serializer; None: moto's fails)
HOSTILE_RESULTS: list[tuple[str, Any, bool | None]] = [
    ("GetItem", None, True),
    ("GetItem", {}, True),
    ("GetItem", {"Item": None}, True),
    ("GetItem", {"Item": {"a": None, "b": {"S": None, "N": "1"}, "c": {"L": [None, {}]}}}, True),
    ("GetItem", {"Item": {"b": {"B": "not bytes", "BS": ["x", b"\x00"]}}}, True),
    ("GetItem", {"ConsumedCapacity": {"TableName": "t", "CapacityUnits": 1, "Table": None}}, True),
    ("GetItem", {"Item": {"x": {"NULL": True, "BOOL": 0, "SS": [], "M": {}}}, "Extra": 1}, True),
    (
        "Query",
        {"Items": [{"a": {"S": "x"}}], "Count": True, "ScannedCount": "3"},
        True,
    ),
    ("Query", {"ItemList": [{"a": {"S": "x"}}], "consumed_capacity": {"capacity_units": 2}}, True),
    (
        "Query",
        {"Items": [], "LastEvaluatedKey": {}, "ConsumedCapacity": {"ReadCapacityUnits": 0.5}},
        True,
    ),
    (
        "DescribeTable",
        {
            "Table": {
                "TableName": "t",
                "TableStatus": 5,
                "CreationDateTime": WHEN,
                "TableSizeBytes": "12",
                "ItemCount": 1.0,
                "KeySchema": ({"AttributeName": "pk", "KeyType": "HASH"},),
                "StreamSpecification": None,
                "BillingModeSummary": {"LastUpdateToPayPerRequestDateTime": 1767225600.5},
            }
        },
        True,
    ),
    ("DescribeTable", {"Table": {"CreationDateTime": "2026-01-01T00:00:00Z"}}, True),
    ("DescribeTable", {"Table": Stored(table_name="t", item_count=3)}, False),
    ("DescribeTable", Stored(Table={"TableName": "t"}), False),
    ("GetItem", {"Item": {"": {"S": "x"}}}, False),
    # moto's picker indexes it, so a missing member reads as the default
    (
        "GetItem",
        defaultdict(dict, {"Item": {"a": {"S": "x"}}}),
        False,
    ),  # moto writes the members into the map
    ("GetItem", {"Item": "not a map"}, None),
    ("Query", {"Items": [None]}, None),
    (
        "BatchGetItem",
        {
            "Responses": {"t": [{"a": {"N": "1"}}], "u": []},
            "UnprocessedKeys": {"t": {"Keys": [{"a": {"S": "k"}}], "AttributesToGet": None}},
        },
        True,
    ),
    (
        "TransactGetItems",
        {"Responses": [{"Item": {"a": {"S": "x"}}}, {}, {"Item": None}], "ConsumedCapacity": []},
        True,
    ),
    ("ListTables", {"TableNames": ["a", 1, None], "LastEvaluatedTableName": "a"}, True),
]


@pytest.mark.parametrize(("operation", "result", "ours"), HOSTILE_RESULTS)
def test_an_odd_result_is_written_as_released_moto_writes_it(aws, operation, result, ours):
    """None members, values of other types, aliases moto's picker finds (snake_case, the shape's
    name), tuples, timestamps of each form: ours writes them as moto's does; objects, a map's
    empty key and a structure that is not one are moto's own to write."""
    import copy

    from moto.core.responses import ActionContext, ActionResult
    from moto.core.serialize import JSONSerializer
    from moto.core.utils import get_service_model
    from moto.dynamodb.responses import DynamoHandler

    service = get_service_model("dynamodb")
    context = ActionContext(
        service, service.operation_model(operation), JSONSerializer, DynamoHandler()
    )
    moto_own = ActionResult.execute_result.moto_own
    written = cheap_answer(result, context)
    if ours is None:  # moto fails to write it: so does the answer
        with pytest.raises(AttributeError):
            moto_own(ActionResult(copy.deepcopy(result)), context)
        with pytest.raises(AttributeError):
            ActionResult.execute_result(ActionResult(result), context)
        assert written is None
        return
    released = moto_own(ActionResult(copy.deepcopy(result)), context)
    sent = ActionResult.execute_result(ActionResult(result), context)
    assert sent == released
    if ours:
        assert written == released
    else:
        assert written is None


@pytest.fixture
def embedded() -> Iterator[Callable[[str], Any]]:
    server = start_moto_server(suite_key_pair())
    host, port = server.get_host_and_port()

    def make(service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=f"http://{host}:{port}",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"max_attempts": 1}),
        )

    yield make
    stop_moto_server(server)


def test_the_embedded_server_sends_released_motos_answers(embedded):
    """`make run`'s embedded AWS (a ThreadedMotoServer of start_moto_server) writes its DynamoDB
    answers with the cheap serializer, and they are released moto's, bytes and parsed."""
    from moto.core.responses import ActionResult

    assert ActionResult.execute_result.moto_own is not None  # start_moto_server installed ours
    clients = {"dynamodb": embedded("dynamodb"), "dynamodbstreams": embedded("dynamodbstreams")}
    with recording() as recorder:
        call = Calls(recorder, clients)
        scratch_table_scenario(call)
    assert check(call) == SCRATCH_OPERATIONS
