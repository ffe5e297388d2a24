"""moto as the tests run it (agora_local/moto_speedups.py) answers every query as released moto
does: each table and index of a stored community, every stored key and one never stored, both
directions, in pages and whole, with a range condition."""

from __future__ import annotations

from typing import Any

from agora_local import moto_speedups
from chalicelib.aws import client
from tests.fixtures import Community, moto_dynamodb, two_groups


def stored_community(c: Community) -> None:
    two_groups(c)
    for number in range(3):
        post = c.post(c.garden if number % 2 else c.other, c.member, f"Post {number}")
        for _ in range(3):
            c.comment(post, c.moderator)
    c.load()


def keys_of(table: Any) -> list[tuple[str | None, str, str | None]]:
    """(index name or None, hash key, range key) of the table and of each of its indexes."""
    keys: list[tuple[str | None, str, str | None]] = [
        (None, table.hash_key_attr, table.range_key_attr)
    ]
    for index in table.all_indexes():
        by_type = {part["KeyType"]: part["AttributeName"] for part in index.schema}
        keys.append((index.name, by_type["HASH"], by_type.get("RANGE")))
    return keys


def queries(table: Any) -> list[dict[str, Any]]:
    """Every query below, for one table."""
    made = []
    items = table.all_items()
    for index_name, hash_attr, range_attr in keys_of(table):
        hash_values = [item.attrs[hash_attr].to_json() for item in items if hash_attr in item.attrs]
        unique = list({repr(value): value for value in hash_values}.values())
        for hash_value in [*unique[:2], {"S": "never-stored"}]:
            base = {
                "TableName": table.name,
                "KeyConditionExpression": "#h = :h",
                "ExpressionAttributeNames": {"#h": hash_attr},
                "ExpressionAttributeValues": {":h": hash_value},
                **({"IndexName": index_name} if index_name else {}),
            }
            for forward in (True, False):
                made.append({**base, "ScanIndexForward": forward})
                made.append({**base, "ScanIndexForward": forward, "Limit": 2})
            under = [i for i in items if i.attrs.get(hash_attr) and range_attr in i.attrs]
            if range_attr and under:
                lowest = min(i.attrs[range_attr] for i in under)
                made.append(
                    {
                        **base,
                        "KeyConditionExpression": "#h = :h AND #r > :r",
                        "ExpressionAttributeNames": {"#h": hash_attr, "#r": range_attr},
                        "ExpressionAttributeValues": {":h": hash_value, ":r": lowest.to_json()},
                    }
                )
    return made


def answers(requests: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Each query's pages, followed to the end."""
    dynamodb = client("dynamodb")
    all_pages = []
    for request in requests:
        pages = []
        start: dict[str, Any] | None = None
        while True:
            page = dynamodb.query(**request, **({"ExclusiveStartKey": start} if start else {}))
            page.pop("ResponseMetadata")
            pages.append(page)
            start = page.get("LastEvaluatedKey")
            if not start:
                break
        all_pages.append(pages)
    return all_pages


def test_every_query_answers_as_released_moto_answers(community):
    stored_community(community)
    _, backend = moto_dynamodb()
    filled = [table for table in backend.tables.values() if table.items]
    requests = [request for table in filled for request in queries(table)]
    assert len(filled) > 5 and len(requests) > 100
    assert any("IndexName" in request for request in requests)

    ours = answers(requests)
    with moto_speedups.as_released():
        released = answers(requests)

    assert ours == released
    assert sum(page["Count"] for pages in ours for page in pages) > 100


def test_an_action_moto_has_no_method_for_is_still_refused(aws):
    from moto.core.responses import method_names_from_class
    from moto.dynamodb.responses import DynamoHandler

    ours = method_names_from_class(DynamoHandler)
    with moto_speedups.as_released():
        from moto.core.responses import method_names_from_class as released

        assert ours == released(DynamoHandler)
    assert "query" in ours and "not_an_action" not in ours


def test_a_fresh_backend_lists_the_regions_released_moto_lists(aws):
    from moto.core.base_backend import AccountSpecificBackend

    def regions(service: str) -> list[str]:
        return AccountSpecificBackend(service, "123456789012", object, True, ["extra-1"]).regions

    for service in ("dynamodb", "sqs", "kms", "s3"):
        ours = regions(service)
        with moto_speedups.as_released():
            assert ours == regions(service)
        assert "us-east-1" in ours and ours[-1] == "extra-1"
