"""System pages: privileges per level, sanitising, the stored value returned."""

from __future__ import annotations

import pytest

from tests.fixtures import with_two_groups
from tests.support.privileges import GARDEN_ADMINISTRATORS_ONLY, caller, statuses

HOME = "/api/v1/en_US/system-page/home-page"


@pytest.fixture
def people(community):
    return with_two_groups(community, garden_access="private")


def private_page(group_id: str) -> str:
    return f"/api/v1/en_US/system-page/private-landing-page/group/{group_id}"


def premium_page(group_id: str) -> str:
    return f"/api/v1/en_US/system-page/premium-landing-page/group/{group_id}"


def test_home_page_round_trip_strips_scripts(api, people):
    status, body = api.put(
        HOME,
        people.root_admin,
        {
            "content": '  <p onclick="x()">Hi</p><script>alert(1)</script><a href="javascript:x">l</a> '
        },
    )
    assert status == 200 and body["success"] is True
    stored = body["object"]["content"]
    assert "<script" not in stored and "onclick" not in stored and "javascript:" not in stored
    assert stored.startswith("<p>Hi</p>")
    assert body["object"]["type"] == "HomePage"
    assert body["object"]["accessWarnings"] == []
    status, body = api.get(HOME, people.root_admin)
    assert status == 200 and body["object"]["content"] == stored


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("root_admin", 200),
        ("garden_admin", 403),
        ("other_admin", 403),
        ("member", 403),
        (None, 401),
    ],
)
def test_home_page_needs_root_administrator(api, people, who, expected):
    user = getattr(people, who) if who else None
    status, body = api.get(HOME, user)
    assert status == expected
    assert body["success"] is (expected == 200)
    status, _ = api.put(HOME, user, {"content": "x"})
    assert status == expected


@GARDEN_ADMINISTRATORS_ONLY
def test_landing_pages_need_group_administrator(api, people, who, expected):
    page = {"content": "<b>x</b>", "isEnabled": True}
    calls = [
        (method, path, page if method == "PUT" else None)
        for path in (private_page(people.garden), premium_page(people.garden))
        for method in ("GET", "PUT")
    ]
    assert statuses(api, caller(people, who), calls) == [expected] * 4


def test_premium_page_round_trip_and_defaults(api, people):
    status, body = api.get(premium_page(people.garden), people.garden_admin)
    assert body["object"] == {
        "type": "PremiumLandingPage",
        "isEnabled": False,
        "content": "",
        "accessWarnings": [],
    }
    status, body = api.put(
        premium_page(people.garden),
        people.garden_admin,
        {"isEnabled": True, "content": "<h1>Join</h1><img src=x onerror=alert(1)>"},
    )
    assert status == 200
    assert body["object"]["isEnabled"] is True
    assert "onerror" not in body["object"]["content"]
    status, again = api.get(premium_page(people.garden), people.root_admin)
    assert again["object"] == body["object"]


def test_private_page_is_per_group(api, people):
    api.put(private_page(people.garden), people.root_admin, {"content": "garden only"})
    _, other = api.get(private_page(people.other), people.root_admin)
    _, garden = api.get(private_page(people.garden), people.root_admin)
    assert other["object"]["content"] == "" and garden["object"]["content"] == "garden only"


def test_unknown_group_is_404_with_key(api, people):
    missing = "00000000-0000-4000-8000-000000000000"
    status, body = api.get(private_page(missing), people.root_admin)
    assert status == 404
    assert body["errors"][0]["key"] == "groupId" and body["errors"][0]["value"] == missing


def test_malformed_group_id_is_400_with_key(api, people):
    status, body = api.get(private_page("not-a-guid"), people.root_admin)
    assert status == 400
    assert [e["key"] for e in body["errors"]] == ["groupId"]
    assert body["errors"][0]["value"] == "not-a-guid"
