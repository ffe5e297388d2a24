"""`load` checks a file against the community already stored (issue 37, CONTRACT §3): a file may
name stored groups, users, posts and comments; the community keeps one root; a slug or an address
another stored record holds is refused; and the export of a grown community loads back, on the
same deployment and on an empty one, to the same export."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chalicelib import deps
from chalicelib.services.fixture import FixtureInvalid
from tests.fixtures import new_id


def group(slug: str, parent: str | None, **extra: Any) -> dict[str, Any]:
    return {"id": new_id(), "name": slug.title(), "slug": slug, "parentId": parent, **extra}


def user(slug: str, roles: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": new_id(),
        "alias": slug.title(),
        "email": f"{slug}@example.org",
        "slug": slug,
        "memberships": [{"groupId": g, "role": r} for g, r in (roles or {}).items()],
        **extra,
    }


def load(data: dict[str, Any]) -> Any:
    return deps.fixture_service().load(data)


def refused(data: dict[str, Any]) -> list[str]:
    with pytest.raises(FixtureInvalid) as error:
        load(data)
    return [str(e) for e in error.value.errors]


def export() -> dict[str, Any]:
    exporter = deps.fixture_exporter()
    found = {name: sorted(items, key=lambda r: str(r["id"])) for name, items in exporter.sections()}
    return {**found, "homePage": exporter.home_page()}


@pytest.fixture
def stored(community):
    community.garden = community.group("garden")
    community.gardener = community.user("gardener", {community.garden: "member"})
    community.hello = community.post(community.garden, community.gardener, title="Hello")
    community.first = community.comment(community.hello, community.gardener)
    return community.load()


def test_a_file_adding_one_group_under_the_stored_root_loads(api, stored):
    beds = group("beds", stored.garden)
    keeper = user("keeper", {beds["id"]: "administrator", stored.root: "member"})
    load({"groups": [beds], "users": [keeper]})
    status, body = api.get("/api/v1/en_US/group/list", stored.users[0]["id"])
    assert status == 200
    listed = {g["slug"]: g["parentId"] for g in body["object"]["groups"]}
    assert listed == {"beds": stored.garden, "garden": stored.root, "home": None}
    # The new administrator manages the new group, under the stored one.
    _, body = api.get("/api/v1/en_US/group/list", keeper["id"])
    assert [g["slug"] for g in body["object"]["groups"]] == ["beds"]


def test_a_file_may_name_stored_users_posts_and_comments(api, stored):
    reply = {
        "id": 500,
        "postId": stored.hello,
        "authorId": stored.users[0]["id"],
        "content": "<p>welcome</p>",
        "createdOn": "2026-02-01T10:00:00Z",
        "parentCommentId": stored.first,
    }
    post = {
        "id": new_id(),
        "groupId": stored.garden,
        "authorId": stored.gardener,
        "title": "Second",
        "createdOn": "2026-02-02T10:00:00Z",
    }
    load({"comments": [reply], "posts": [post]})
    comments = api.get_object(f"/api/v1/en_US/post/{stored.hello}/comments", stored.gardener)
    assert [c["id"] for c in comments["comments"]] == [stored.first, 500]


def test_a_second_root_is_refused_and_nothing_is_written(api, stored):
    other_root = group("elsewhere", None)
    errors = refused({"groups": [other_root, group("under", other_root["id"])]})
    assert errors == [
        f"groups[0].parentId: the community already has its root group ({stored.root}); "
        "a second one is not allowed: give this group a parentId"
    ]
    status, body = api.get("/api/v1/en_US/group/list", stored.users[0]["id"])
    assert [g["slug"] for g in body["object"]["groups"]] == ["garden", "home"]
    # The export still loads back (it did not once a second root was stored).
    load(export())


@pytest.mark.parametrize(
    "make, path",
    [
        (lambda c: {"groups": [group("x", new_id())]}, "groups[0].parentId"),
        (lambda c: {"users": [user("x", {new_id(): "member"})]}, "users[0].memberships[0].groupId"),
        (
            lambda c: {
                "comments": [
                    {
                        "id": 900,
                        "postId": new_id(),
                        "authorId": c.gardener,
                        "createdOn": "2026-02-01T10:00:00Z",
                    }
                ]
            },
            "comments[0].postId",
        ),
        (
            lambda c: {
                "comments": [
                    {
                        "id": 901,
                        "postId": c.hello,
                        "authorId": c.gardener,
                        "createdOn": "2026-02-01T10:00:00Z",
                        "parentCommentId": 4242,
                    }
                ]
            },
            "comments[0].parentCommentId",
        ),
        (lambda c: {"groups": [group("garden", c.root)]}, "groups[0].slug"),
        (lambda c: {"users": [user("x", email="Gardener@Example.org")]}, "users[0].email"),
    ],
)
def test_what_the_store_does_not_hold_or_holds_for_another_is_refused(stored, make, path):
    errors = refused(make(stored))
    assert [e.split(":")[0] for e in errors] == [path], errors


def test_a_root_this_process_remembers_is_not_the_tables(aws):
    """A load asks the table for its root, not the root this process remembers (a read of
    another moment: before, a root remembered from tables since emptied refused the load as a
    second root)."""
    from chalicelib.store.groups import GroupRepository

    GroupRepository._root_cache = (time.monotonic(), new_id())
    root = group("root", None)
    load({"groups": [root]})
    assert deps.groups().get(root["id"]) is not None


def test_a_group_moved_under_its_own_child_is_a_cycle(stored):
    child = group("child", stored.garden)
    load({"groups": [child]})
    garden = {"id": stored.garden, "name": "Garden", "slug": "garden", "parentId": child["id"]}
    assert refused({"groups": [garden]}) == [
        "groups[0].parentId: the parents of this group form a cycle"
    ]


def test_the_export_of_a_grown_community_loads_back_here_and_into_an_empty_store(stored):
    beds = group("beds", stored.garden, access="private")
    load({"groups": [beds], "users": [user("keeper", {beds["id"]: "moderator"})]})
    before = export()
    load(before)  # the same deployment
    assert export() == before

    from tests.fixtures import empty_tables

    empty_tables()
    load(before)  # an empty one
    assert export() == before


def fresh_store() -> None:
    from chalicelib.store.groups import GroupRepository
    from chalicelib.store.users import UserRepository
    from tests.fixtures import empty_tables

    empty_tables()
    GroupRepository.forget_cache()
    UserRepository.forget()


# A small community grown in two loads: the first gives the root and some groups, the second adds
# groups under stored ones (by index into the groups so far) and users with roles in any of them.
ROLES = ["member", "moderator", "administrator"]
first_groups = st.lists(st.integers(min_value=0, max_value=5), max_size=3)
later_groups = st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=3)
people = st.lists(
    st.lists(st.tuples(st.integers(0, 6), st.sampled_from(ROLES)), max_size=3), max_size=3
)


@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=first_groups, later=later_groups, users=people)
def test_any_grown_community_exports_and_loads_back_to_the_same_answers(aws, first, later, users):
    fresh_store()
    root = group("root", None)
    made = [root]
    for n, parent in enumerate(first):
        made.append(group(f"first-{n}", made[parent % len(made)]["id"]))
    load({"groups": made, "users": [user("admin", {root["id"]: "administrator"})]})
    added = []
    for n, parent in enumerate(later):
        known = made + added
        added.append(group(f"later-{n}", known[parent % len(known)]["id"]))
    known = made + added
    newcomers = [
        user(f"person-{n}", {known[i % len(known)]["id"]: role for i, role in roles})
        for n, roles in enumerate(users)
    ]
    load({"groups": added, "users": newcomers})  # no root: the stored one

    grown = export()
    assert len(grown["groups"]) == len(known)
    assert [g["id"] for g in grown["groups"] if g["parentId"] is None] == [root["id"]]
    load(grown)  # the same deployment
    assert export() == grown
    fresh_store()
    load(grown)  # an empty one
    assert export() == grown
