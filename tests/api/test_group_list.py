"""The group list (CONTRACT §10): who sees which groups, the order by name, paging, bad offsets,
and its cost (one Query a page, whatever the number of groups)."""

from __future__ import annotations

import pytest

from tests.fixtures import new_id, with_two_groups

LIST = "/api/v1/en_US/group/list"


@pytest.fixture
def people(community):
    c = community
    c.zinnia = c.group("zinnia")  # named after a later letter than every other group
    c.alpine = c.group("alpine", access="private")
    c.beds = c.group("beds", parent=c.alpine, access="premium")
    with_two_groups(c)  # garden, other, and their administrators, moderator and member
    c.both = c.user("both", {c.garden: "moderator", c.beds: "administrator", c.other: "member"})
    c.load()
    return c


def names(body) -> list[str]:
    return [g["name"] for g in body["object"]["groups"]]


def test_the_root_administrator_lists_every_group_by_name(api, people):
    status, body = api.get(LIST, people.root_admin)
    assert status == 200, body
    assert names(body) == ["Alpine", "Beds", "Garden", "Home", "Other", "Zinnia"]
    beds = body["object"]["groups"][1]
    assert beds["id"] == people.beds
    assert beds["parentId"] == people.alpine and beds["access"] == "premium"
    assert beds["slug"] == "beds" and beds["url"] and beds["thumbUrl"]
    home = body["object"]["groups"][3]
    assert home["parentId"] is None and home["id"] == people.root
    assert body["object"]["offset"] == people.zinnia


@pytest.mark.parametrize(
    "who, expected",
    [
        ("garden_admin", ["Garden"]),
        ("moderator", ["Garden"]),
        ("both", ["Beds", "Garden"]),  # not Other, where the user is a member only
        ("member", []),
    ],
)
def test_other_users_list_the_groups_they_administer_or_moderate(api, people, who, expected):
    status, body = api.get(LIST, getattr(people, who))
    assert status == 200, body
    assert names(body) == expected


def test_a_list_needs_a_token(api, people):
    status, body = api.get(LIST)
    assert status == 401 and body["success"] is False


def test_pages_follow_each_other_by_offset(api, people):
    seen: list[str] = []
    offset = ""
    for _ in range(4):
        status, body = api.get(f"{LIST}?pageSize=2&offset={offset}", people.root_admin)
        assert status == 200, body
        if not body["object"]["groups"]:
            assert body["object"]["offset"] == offset
            break
        seen += names(body)
        offset = body["object"]["offset"]
    assert seen == ["Alpine", "Beds", "Garden", "Home", "Other", "Zinnia"]


def test_a_moderators_pages_follow_each_other(api, people):
    first = api.get_object(f"{LIST}?pageSize=1", people.both)
    assert [g["name"] for g in first["groups"]] == ["Beds"]
    second = api.get_object(f"{LIST}?pageSize=1&offset={first['offset']}", people.both)
    assert [g["name"] for g in second["groups"]] == ["Garden"]


@pytest.mark.parametrize("who", ["both", "member", "garden_admin"])
def test_an_offset_outside_the_callers_list_is_the_same_400_as_an_unknown_id(api, people, who):
    """No oracle: a group the caller does not manage (Alpine, a private group; Other, where
    `both` is a member) answers exactly as an id no group has."""
    user = getattr(people, who)
    answers = [
        api.get(f"{LIST}?offset={group_id}", user)
        for group_id in (people.alpine, people.other, "3f2504e0-4f89-11d3-9a0c-0305e82c3301")
    ]

    assert [status for status, _ in answers] == [400, 400, 400]
    messages = {(e["key"], e["message"]) for _, body in answers for e in body["errors"]}
    assert messages == {("offset", "the list holds no group with this id")}


@pytest.mark.parametrize(
    "query, key",
    [
        ("offset=not-a-guid", "offset"),
        ("offset=3f2504e0-4f89-11d3-9a0c-0305e82c3301", "offset"),  # no such group
        ("pageSize=0", "pageSize"),
        ("pageSize=101", "pageSize"),
        ("pageSize=ten", "pageSize"),
    ],
)
def test_bad_queries_are_400_with_their_key(api, people, query, key):
    status, body = api.get(f"{LIST}?{query}", people.root_admin)
    assert status == 400, body
    assert [e["key"] for e in body["errors"]] == [key]


def test_a_group_written_after_loading_is_listed_in_its_place(api, people):
    from chalicelib.store.groups import GroupRepository

    GroupRepository().put(
        id=new_id(), name="Bees", slug="bees", parent_id=people.root, access="public"
    )
    assert names(api.get(LIST, people.root_admin)[1])[:3] == ["Alpine", "Beds", "Bees"]


def test_a_page_is_one_query_whatever_the_number_of_groups(api, community, dynamo_counter):
    c = community
    for i in range(60):
        c.group(f"group-{i:03d}")
    c.load()
    root = c.users[0]["id"]
    first = api.get_object(f"{LIST}?pageSize=5", root)
    api.get(f"{LIST}?pageSize=5&offset={first['offset']}", root)  # warm: the offset is known
    dynamo_counter.reset()
    status, body = api.get(f"{LIST}?pageSize=5&offset={first['offset']}", root)
    assert status == 200 and len(body["object"]["groups"]) == 5
    assert dynamo_counter.requests.pop("Query") == 1
    assert dynamo_counter.items_read <= 5


def test_groups_stored_before_the_index_get_its_keys_once(api, people):
    from chalicelib.store.groups import GroupRecord, GroupRepository

    # As a group written by the previous release: no listing keys, so not listed.
    GroupRecord(people.zinnia).update(
        actions=[GroupRecord.listing.remove(), GroupRecord.name_key.remove()]
    )
    GroupRepository.forget_cache()
    assert "Zinnia" not in names(api.get(LIST, people.root_admin)[1])
    assert GroupRepository.add_listing_keys() == 1
    assert GroupRepository.add_listing_keys() == 0
    assert names(api.get(LIST, people.root_admin)[1])[-1] == "Zinnia"
