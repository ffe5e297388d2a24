"""`make restore` rehearsed against moto (issue 38): a table back to a point in time, in a new
table with what the stack gives its tables, and the stack switched onto it through its
TableNames parameter, which every function reads as AGORA_TABLE_NAMES."""

from __future__ import annotations

import json

import pytest

from infra.restore import PARAMETER, RestoreError, format_names, parse_names, restore

STACK = {
    "Parameters": {PARAMETER: {"Type": "String", "Default": ""}},
    "Resources": {
        "PostsTable": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "TableName": "agora-prod-posts",
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            },
        },
    },
}


@pytest.fixture
def prod(monkeypatch):
    import boto3
    from moto import mock_aws

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        session.client("cloudformation").create_stack(
            StackName="agora-prod", TemplateBody=json.dumps(STACK)
        )
        dynamodb = session.client("dynamodb")
        dynamodb.update_table(TableName="agora-prod-posts", DeletionProtectionEnabled=True)
        dynamodb.update_time_to_live(
            TableName="agora-prod-posts",
            TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"},
        )
        dynamodb.put_item(TableName="agora-prod-posts", Item={"id": {"S": "kept"}})
        yield session


def stack_parameter(session) -> str:
    [stack] = session.client("cloudformation").describe_stacks(StackName="agora-prod")["Stacks"]
    return {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]}[PARAMETER]


def test_a_table_is_restored_into_a_new_table_and_the_stack_switched_onto_it(prod, monkeypatch):
    dynamodb = prod.client("dynamodb")
    table = restore(prod, "prod", "posts", "2026-11-26T08:00:00Z")

    assert table == "agora-prod-posts.20261126T080000Z"
    assert dynamodb.scan(TableName=table)["Items"] == [{"id": {"S": "kept"}}]
    backups = dynamodb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    described = dynamodb.describe_table(TableName=table)["Table"]
    assert described["DeletionProtectionEnabled"] is True
    ttl = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expiresAt"
    # The stack now names it (every function's AGORA_TABLE_NAMES: tests/test_infra.py).
    assert stack_parameter(prod) == f"posts={table}"
    # The damaged table stays, untouched, for a person to compare with.
    assert "agora-prod-posts" in dynamodb.list_tables()["TableNames"]

    # The functions read the restored table: the store's models take the override.
    from chalicelib.settings import reload_settings
    from chalicelib.store.base import table_meta

    monkeypatch.setenv("AGORA_TABLE_PREFIX", "agora-prod-")
    monkeypatch.setenv("AGORA_TABLE_NAMES", stack_parameter(prod))
    reload_settings()
    try:
        assert table_meta("posts").table_name == table
        assert table_meta("users").table_name == "agora-prod-users"
    finally:
        monkeypatch.delenv("AGORA_TABLE_NAMES")
        monkeypatch.delenv("AGORA_TABLE_PREFIX")
        reload_settings()

    # Back to the original table, nothing restored.
    assert restore(prod, "prod", "posts", "original") == "agora-prod-posts"
    assert stack_parameter(prod) == ""


def test_what_is_not_restored_says_why(prod):
    with pytest.raises(RestoreError, match="stream"):
        restore(prod, "prod", "outbox", "2026-11-26T08:00:00Z")
    with pytest.raises(RestoreError, match="time zone"):
        restore(prod, "prod", "posts", "2026-11-26T08:00:00")
    with pytest.raises(RestoreError, match="no table agora-prod-nothing"):
        restore(prod, "prod", "nothing", "2026-11-26T08:00:00Z")
    assert stack_parameter(prod) == ""


@pytest.mark.fast
def test_table_names_round_trip():
    names = {"users": "agora-prod-users.20261126T080000Z", "posts": "agora-prod-posts.x"}
    assert parse_names(format_names(names)) == names
    assert parse_names(" , posts = p ,bad") == {"posts": "p"}
    from chalicelib.settings import Settings

    settings = Settings(table_prefix="agora-prod-", table_names="posts=agora-prod-posts.x")
    assert settings.table_name("posts") == "agora-prod-posts.x"
    assert settings.table_name("post") == "agora-prod-post"
