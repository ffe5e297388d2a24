"""A fixture's reference checks (services/fixture_references.py), each on its own: pure."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace as Rec

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.schemas.fixture import Fixture
from chalicelib.services.fixture_references import (
    FixtureError,
    Known,
    StoredCommunity,
    comment_errors,
    cycle_in,
    duplicate_errors,
    group_errors,
    known_ids,
    membership_errors,
    parent_comment_error,
    reference_errors,
    root_errors,
)
from chalicelib.services.fixture_rules import FixtureInvalid, validate_fixture
from tests.support import REPO_ROOT

pytestmark = pytest.mark.fast

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text(encoding="utf-8"))


def fixture(**sections):
    empty = {name: [] for name in ("groups", "users", "posts", "comments", "events")}
    return Rec(**{**empty, "connectors": [], "players": [], **sections})


def known(**ids):
    return Known(
        groups=ids.get("groups", set()),
        users=ids.get("users", set()),
        posts=ids.get("posts", set()),
        comments=ids.get("comments", {}),
        stored_comments=ids.get("stored_comments", {}),
        file_comments=ids.get("file_comments", set()),
        parents=ids.get("parents", {}),
    )


EMPTY = StoredCommunity()


def test_the_demo_community_has_no_reference_error():
    assert reference_errors(Fixture.model_validate(DEMO), EMPTY) == []


def test_errors_come_in_the_order_of_the_checks():
    data = copy.deepcopy(DEMO)
    data["groups"][1]["slug"] = data["groups"][0]["slug"]
    data["posts"][0]["authorId"] = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
    data["groups"][0]["parentId"] = "3f2504e0-4f89-11d3-9a0c-0305e82c3302"  # no root
    errors = [str(e) for e in reference_errors(Fixture.model_validate(data), EMPTY)]
    assert errors == [
        "groups: exactly one group must have parentId null (found 0)",
        "groups[0].slug: slug 'home' appears more than once",
        "groups[1].slug: slug 'home' appears more than once",
        "groups[0].parentId: no group has id 3f2504e0-4f89-11d3-9a0c-0305e82c3302",
        "posts[0].authorId: no user has id 3f2504e0-4f89-11d3-9a0c-0305e82c3301",
    ]


def test_one_root_is_asked_only_while_every_group_is_valid():
    groups = [Rec(id="a", parent_id=None), Rec(id="b", parent_id=None)]
    assert root_errors(fixture(groups=groups), EMPTY) == [
        FixtureError("groups", "exactly one group must have parentId null (found 2)")
    ]
    assert root_errors(fixture(groups=[*groups, None]), EMPTY, raw={}) == []
    assert root_errors(fixture(groups=groups[:1]), EMPTY) == []


def test_emails_and_player_names_are_the_same_in_any_case():
    users = [
        Rec(id="1", slug="a", email="Ann@x.example"),
        Rec(id="2", slug="b", email="ann@X.EXAMPLE"),
    ]
    players = [Rec(id=1, name="Zed"), Rec(id=2, name="zed")]
    assert [str(e) for e in duplicate_errors(fixture(users=users, players=players), EMPTY)] == [
        "users[0].email: email 'Ann@x.example' appears more than once",
        "users[1].email: email 'ann@X.EXAMPLE' appears more than once",
        "players[0].name: name 'Zed' appears more than once",
        "players[1].name: name 'zed' appears more than once",
    ]


def test_a_chain_of_parents_that_comes_back_is_a_cycle():
    parents = {"a": None, "b": "a", "c": "d", "d": "c"}
    assert not cycle_in("b", "a", parents)
    assert cycle_in("c", "d", parents)
    assert cycle_in("e", "e", parents)


def test_a_missing_parent_is_reported_instead_of_a_cycle():
    groups = [Rec(id="a", parent_id=None), Rec(id="b", parent_id="x")]
    parents = {"a": None, "b": "x"}
    assert group_errors(fixture(groups=groups), known(groups={"a", "b"}, parents=parents)) == [
        FixtureError("groups[1].parentId", "no group has id x")
    ]


def test_a_membership_names_a_group_once():
    user = Rec(id="u", memberships=[Rec(group_id="g"), Rec(group_id="g"), Rec(group_id="x")])
    assert [str(e) for e in membership_errors(fixture(users=[user]), known(groups={"g"}))] == [
        "users[0].memberships[2].groupId: no group has id x",
        "users[0].memberships: a user has one role per group",
    ]


def test_a_reply_needs_a_parent_of_the_same_post():
    parent = Rec(id=1, post_id="p")
    ids = known(comments={1: parent}, stored_comments={7: "p"})
    assert parent_comment_error(0, Rec(parent_comment_id=7, post_id="p"), ids) == []
    assert parent_comment_error(0, Rec(parent_comment_id=1, post_id="p"), ids) == []
    assert parent_comment_error(0, Rec(parent_comment_id=0, post_id="q"), ids) == []
    wrong = [FixtureError("comments[0].parentCommentId", "no comment of the same post has this id")]
    assert parent_comment_error(0, Rec(parent_comment_id=1, post_id="q"), ids) == wrong
    assert parent_comment_error(0, Rec(parent_comment_id=2, post_id="p"), ids) == wrong
    # In an invalid file, a parent the file gives is checked once the file is valid.
    assert (
        parent_comment_error(0, Rec(parent_comment_id=2, post_id="p"), known(file_comments={2}))
        == []
    )


def test_every_reference_of_a_comment_is_checked():
    comment = Rec(
        id=5,
        post_id="gone",
        author_id="ghost",
        deleted_by_id="who",
        parent_comment_id=0,
        spam_reports=[Rec(author_id="u"), Rec(author_id="x")],
    )
    assert [str(e) for e in comment_errors(fixture(comments=[comment]), known(users={"u"}))] == [
        "comments[0].postId: no post has id gone",
        "comments[0].authorId: no user has id ghost",
        "comments[0].deletedById: no user has id who",
        "comments[0].spamReports[1].authorId: no user has id x",
    ]


def test_an_invalid_file_counts_the_ids_of_its_invalid_records_as_present():
    raw = {"groups": [{"id": "g"}, {"id": "h", "bad": 1}], "users": [{"id": "u"}], "posts": "x"}
    f = fixture(groups=[Rec(id="g", parent_id=None), None])
    ids = known_ids(f, EMPTY, raw)
    assert ids.groups == {"g", "h"} and ids.users == {"u"} and ids.posts == set()
    assert known_ids(f, EMPTY).groups == {"g"}


def test_stored_records_count_as_present_and_their_parents_as_given():
    stored = StoredCommunity(
        groups={"s": ("root", "stored")}, users={"v": ("v@x.example", "V")}, posts={"q": "s"}
    )
    ids = known_ids(fixture(groups=[Rec(id="g", parent_id="s")]), stored)
    assert ids.groups == {"g", "s"} and ids.users == {"v"} and ids.posts == {"q"}
    assert ids.parents == {"s": "root", "g": "s"}


def test_a_second_root_is_refused_while_the_stored_root_stays():
    stored = StoredCommunity(root_id="root")
    groups = [Rec(id="a", parent_id=None), Rec(id="b", parent_id="a")]
    assert [str(e) for e in root_errors(fixture(groups=groups), stored)] == [
        "groups[0].parentId: the community already has its root group (root); a second one is "
        "not allowed: give this group a parentId"
    ]
    # Given again (here with a parent), the stored root is the file's to place.
    again = [*groups, Rec(id="root", parent_id="a")]
    assert root_errors(fixture(groups=again), stored) == []


def test_a_slug_or_address_another_stored_record_keeps_is_taken():
    stored = StoredCommunity(
        slug_holders={"garden": "other", "moved": "mover"},
        email_holders={"ann@x.example": "someone"},
    )
    groups = [
        Rec(id="g", slug="garden", parent_id=None),
        Rec(id="h", slug="moved", parent_id="g"),
        Rec(id="mover", slug="elsewhere", parent_id="g"),  # the holder gives its slug up
    ]
    users = [Rec(id="u", slug="u", email="Ann@x.example")]
    errors = [str(e) for e in duplicate_errors(fixture(groups=groups, users=users), stored)]
    assert errors == [
        "users[0].email: email 'Ann@x.example' is already another stored user's",
        "groups[0].slug: slug 'garden' is already another stored group's",
    ]


def test_a_cycle_through_stored_parents_is_found_and_a_long_chain_ends():
    assert cycle_in("g", "s", {"s": "t", "t": "g"})
    chain = {f"n{k}": f"n{k + 1}" for k in range(500)}
    assert not cycle_in("start", "n0", chain)


GROUP = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
USER = "3f2504e0-4f89-11d3-9a0c-0305e82c3302"
POST = "3f2504e0-4f89-11d3-9a0c-0305e82c3303"
WHEN = "2026-01-02T10:00:00Z"


def test_an_id_that_is_a_list_or_an_object_is_its_record_s_error_and_names_nothing():
    """A hostile file's unhashable ids (they crashed the reference checks with a TypeError) are
    errors of their records; a reference to what such a record meant to be is dangling."""
    data = {
        "groups": [
            {"id": GROUP, "name": "Home", "slug": "home"},
            {"id": [GROUP], "name": "Two", "slug": "two", "parentId": GROUP},
        ],
        "users": [{"id": {"id": USER}, "alias": "Ann", "email": "ann@x.example", "slug": "ann"}],
        "posts": [
            {"id": POST, "groupId": GROUP, "authorId": USER, "title": "T", "createdOn": WHEN}
        ],
        "comments": [
            {"id": [1], "postId": POST, "authorId": USER, "createdOn": WHEN},
            {"id": 2, "postId": POST, "authorId": USER, "createdOn": WHEN, "parentCommentId": 1},
        ],
    }
    with pytest.raises(FixtureInvalid) as raised:
        validate_fixture(data)
    assert [str(e) for e in raised.value.errors] == [
        "groups[1].id: must be a GUID string",
        "users[0].id: must be a GUID string",
        "comments[0].id: must be a whole number",
        f"posts[0].authorId: no user has id {USER}",
        f"comments[1].authorId: no user has id {USER}",
        "comments[1].parentCommentId: no comment of the same post has this id",
    ]


# JSON as a file may hold it (json.loads takes NaN too).
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)
SECTIONS = ("groups", "users", "posts", "comments", "events", "connectors", "players")


@settings(max_examples=40)  # each example validates the whole demo file (about 15 ms)
@given(
    section=st.sampled_from(SECTIONS),
    index=st.integers(0, 7),
    key=st.sampled_from(
        ["id", "groupId", "parentId", "authorId", "postId", "parentCommentId", None]
    ),
    value=ANY_JSON,
)
def test_any_json_in_a_record_is_listed_as_errors_never_raised_as_another_exception(
    section, index, key, value
):
    """The loader reads hostile files: whatever JSON stands in a record, or in one of its
    fields, the demo with it either validates or lists its errors with their paths."""
    data = copy.deepcopy(DEMO)
    records = data[section]
    at = index % len(records)
    if key is None:
        records[at] = value
    else:
        records[at][key] = value
    try:
        validate_fixture(data)
    except FixtureInvalid as invalid:
        assert invalid.errors and all(e.path and e.message for e in invalid.errors)
