"""People search (CONTRACT §10): who may search, what a search finds, paging, bad and hostile
input, and the index kept in step with the users' writes."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.fixtures import with_two_groups

SEARCH = "/api/v1/en_US/user/search"


@pytest.fixture
def people(community):
    c = community
    with_two_groups(c)
    c.zoe = c.user("zoe-abbott", {c.garden: "member"}, email="Zed.Last@Example.org")
    c.zora = c.user("zora-mills", {c.other: "member"}, email="zora@example.org")
    c.annie = c.user("annie-zander", email="annie@example.org")
    c.load()
    return c


def search(api, user, query: str):
    return api.get(f"{SEARCH}?{query}", user)


def ids(body) -> list[str]:
    return [u["id"] for u in body["object"]["users"]]


# --- privileges ------------------------------------------------------------------------------------


def test_root_administrator_searches_everyone(api, people):
    status, body = search(api, people.root_admin, "q=zo")
    assert status == 200, body
    assert ids(body) == [people.zoe, people.zora]  # alias order
    found = body["object"]["users"][0]
    assert found["alias"] == "Zoe Abbott" and found["email"] == "Zed.Last@Example.org"
    assert found["slug"] == "zoe-abbott" and found["url"].endswith("/people/zoe-abbott")
    assert body["object"]["offset"] == people.zora


def test_group_administrator_searches_the_members_of_their_group(api, people):
    status, body = search(api, people.garden_admin, f"q=zo&groupId={people.garden}")
    assert status == 200, body
    assert ids(body) == [people.zoe]


@pytest.mark.parametrize(
    "who, group",
    [
        ("garden_admin", None),  # everyone needs root
        ("garden_admin", "other"),  # another group's members
        ("moderator", "garden"),  # a moderator is not an administrator
        ("member", "garden"),
    ],
)
def test_others_are_refused(api, people, who, group):
    query = "q=zo" + (f"&groupId={getattr(people, group)}" if group else "")
    status, body = search(api, getattr(people, who), query)
    assert status == 403, body
    assert body["success"] is False


def test_refusal_comes_before_the_query_is_validated(api, people):
    status, _ = search(api, people.member, "q=")
    assert status == 403


def test_unknown_group_is_404_for_root_and_403_for_others(api, people):
    unknown = "00000000-0000-4000-8000-000000000000"
    status, body = search(api, people.root_admin, f"q=zo&groupId={unknown}")
    assert status == 404 and body["errors"][0]["key"] == "groupId"
    status, _ = search(api, people.garden_admin, f"q=zo&groupId={unknown}")
    assert status == 403


def test_without_a_token_is_401(api, people):
    status, _ = api.get(f"{SEARCH}?q=zo")
    assert status == 401


# --- what a search finds ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "q, expected",
    [
        ("ZOE", ["zoe"]),  # alias, case-insensitive
        ("zoë", ["zoe"]),  # accents ignored
        ("abb", ["zoe"]),  # a later word of the alias
        ("zed.l", ["zoe"]),  # email, mixed case stored
        ("zed.last@example.org", ["zoe"]),
        ("zora@", ["zora"]),
        ("zo", ["zoe", "zora"]),
        ("an", ["annie"]),
        ("ann", ["annie"]),
        ("annie z", ["annie"]),  # longer than a bucket: the alias with its space
        ("bbott", []),  # not a prefix of anything
        ("oe", []),
    ],
)
def test_prefix_of_alias_word_or_email(api, people, q, expected):
    status, body = search(api, people.root_admin, f"q={quote(q)}")
    assert status == 200, body
    assert ids(body) == [getattr(people, name) for name in expected]


def test_a_person_matching_by_alias_and_email_appears_once(api, people):
    # "Annie Zander", annie@example.org: both terms start with "annie".
    status, body = search(api, people.root_admin, "q=annie")
    assert status == 200 and ids(body) == [people.annie]


def test_group_filter_lists_only_its_members(api, people):
    status, body = search(api, people.root_admin, f"q=garden&groupId={people.garden}")
    assert status == 200
    assert set(ids(body)) == {people.garden_admin, people.moderator, people.member}
    status, body = search(api, people.root_admin, f"q=garden&groupId={people.other}")
    assert ids(body) == []


# --- paging ----------------------------------------------------------------------------------------


@pytest.fixture
def crowd(community):
    c = community
    c.garden = c.group("garden")
    c.other = c.group("other")
    c.many = [c.user(f"mary-{i:02d}", {c.garden: "member"}) for i in range(23)]
    c.load()
    return c


def test_pages_go_through_everyone_once_in_alias_order(api, crowd):
    seen: list[str] = []
    offset = ""
    while True:
        status, body = search(api, crowd.users[0]["id"], f"q=mary&pageSize=5&offset={offset}")
        assert status == 200, body
        if not body["object"]["users"]:
            assert body["object"]["offset"] == (offset or None)
            break
        seen += ids(body)
        offset = body["object"]["offset"]
    assert seen == crowd.many


def test_a_filtered_search_longer_than_a_bucket_pages_too(api, crowd):
    seen: list[str] = []
    offset = ""
    for _ in range(30):
        status, body = search(api, crowd.users[0]["id"], f"q=mary+1&pageSize=4&offset={offset}")
        assert status == 200, body
        seen += ids(body)
        if body["object"]["offset"] in (offset or None, None) and not body["object"]["users"]:
            break
        offset = body["object"]["offset"]
    assert seen == crowd.many[10:20]


def test_offset_of_a_person_outside_the_list_is_the_same_400_as_an_unknown_id(
    api, crowd, community
):
    """No existence oracle: a user the search does not find cannot be told from no user."""
    root = crowd.users[0]["id"]
    unknown = "00000000-0000-4000-8000-000000000000"
    answers = [
        search(api, root, f"q=mary&offset={offset}")
        for offset in (unknown, root)  # "Root Admin" is not a "mary"
    ]
    answers.append(search(api, root, f"q=mary-1&offset={crowd.many[0]}"))  # mary-00: filtered out
    answers.append(search(api, root, f"q=mary&groupId={crowd.other}&offset={crowd.many[1]}"))
    for status, body in answers:
        assert status == 400 and [e["key"] for e in body["errors"]] == ["offset"]
    messages = {(body["message"], body["errors"][0]["message"]) for _, body in answers}
    assert len(messages) == 1


def test_offset_of_a_person_in_the_list_pages_after_them(api, crowd):
    root = crowd.users[0]["id"]
    status, body = search(api, root, f"q=mary&pageSize=3&offset={crowd.many[20]}")
    assert status == 200 and ids(body) == crowd.many[21:23]
    status, body = search(api, root, f"q=mary-1&pageSize=3&offset={crowd.many[12]}")
    assert status == 200 and ids(body) == crowd.many[13:16]
    status, body = search(api, root, f"q=mary&groupId={crowd.garden}&offset={crowd.many[22]}")
    assert status == 200 and ids(body) == [] and body["object"]["offset"] == crowd.many[22]


# --- bad and hostile input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, key",
    [
        ("", "q"),  # missing
        ("q=", "q"),
        ("q=a", "q"),  # one character
        ("q=%20%20a%20", "q"),  # one after trimming
        ("q=%01%02a", "q"),  # control characters do not count
        ("q=ab%0Acd", "q"),  # line breaks
        ("q=ab%0Dcd", "q"),
        ("q=" + "a" * 101, "q"),  # very long
        ("q=zo&pageSize=0", "pageSize"),
        ("q=zo&pageSize=101", "pageSize"),
        ("q=zo&groupId=not-a-guid", "groupId"),
        ("q=zo&offset=not-a-guid", "offset"),
    ],
)
def test_bad_input_is_400_naming_the_key(api, people, query, key):
    status, body = search(api, people.root_admin, query)
    assert status == 400, body
    assert [e["key"] for e in body["errors"]] == [key]


def test_control_characters_are_ignored_in_a_search(api, people):
    status, body = search(api, people.root_admin, "q=z%01o%7Fe%C2%85")
    assert status == 200 and ids(body) == [people.zoe]


@pytest.mark.parametrize("q", ["%ED%A0%80ab", "ab%ED%B0%80", "%FF%FEab"])
def test_invalid_utf8_and_surrogates_never_fail_the_server(api, people, q):
    status, body = search(api, people.root_admin, f"q={q}")
    assert status in (200, 400), body
    assert body["success"] is (status == 200)


def test_a_pair_of_surrogates_is_a_character(api, people):
    status, body = search(api, people.root_admin, "q=" + quote("😀😀"))
    assert status == 200 and ids(body) == []


def test_html_and_query_syntax_in_q_is_just_text(api, people):
    for q in ["<script>", "zo%26groupId%3Dx", "%25%25", "zo*", "zo' OR 1=1"]:
        status, body = search(api, people.root_admin, f"q={q}")
        assert status == 200, (q, body)
        assert ids(body) == []


# --- kept up to date -------------------------------------------------------------------------------


def test_a_reload_that_renames_and_moves_a_person_updates_the_search(api, people):
    entry = next(u for u in people.users if u["id"] == people.zoe)
    entry["alias"] = "Yvonne Abbott"
    entry["email"] = "yvonne@example.org"
    entry["memberships"] = [{"groupId": people.other, "role": "member"}]
    people.load()
    root = people.root_admin
    assert ids(search(api, root, "q=zoe")[1]) == []
    assert ids(search(api, root, "q=zed")[1]) == []
    assert ids(search(api, root, "q=yvo")[1]) == [people.zoe]
    assert ids(search(api, root, f"q=abb&groupId={people.garden}")[1]) == []
    assert ids(search(api, root, f"q=abb&groupId={people.other}")[1]) == [people.zoe]
    found = search(api, root, "q=yvonne")[1]["object"]["users"][0]
    assert found["alias"] == "Yvonne Abbott" and found["email"] == "yvonne@example.org"


def test_create_admin_makes_a_person_findable(api, people):
    from chalicelib import deps

    deps.administrator_service().create_or_promote(
        "quentin@example.org", "a long enough password", people.garden
    )
    status, body = search(api, people.garden_admin, f"q=quen&groupId={people.garden}")
    assert status == 200
    assert [u["email"] for u in body["object"]["users"]] == ["quentin@example.org"]
