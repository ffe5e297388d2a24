"""`python -m chalicelib.cli create-admin` (CONTRACT §3): the first administrator of a deployment
signs in and calls a root-only route; running the command twice changes nothing."""

from __future__ import annotations

import io
import json

import pytest

from chalicelib.cli import main

ROOT_ONLY = "/api/v1/en_US/connector/email-to-comment/log"
PASSWORD = "correct horse battery"


def sign_in(api, email: str, password: str) -> tuple[int, dict]:
    return api.post("/api/v1/en_US/security/login", body={"email": email, "password": password})


def create_admin(monkeypatch, *args: str, password: str = PASSWORD) -> int:
    # stdin is not a terminal here: the password is its first line.
    monkeypatch.setattr("sys.stdin", io.StringIO(password + "\n"))
    return main(["create-admin", *args])


def users_table() -> list[dict]:
    from chalicelib.aws import client

    items = client("dynamodb").scan(TableName="agora-test-users")["Items"]
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))


def test_new_administrator_signs_in_and_calls_a_root_only_route(
    community, api, monkeypatch, capsys
):
    community.load()
    assert create_admin(monkeypatch, "--email", "First.Admin@Example.org") == 0
    said = capsys.readouterr().out
    assert said.startswith("created First.Admin@Example.org (")
    # The root group by its name (the community's "Home"), not by its id.
    assert said.endswith('as "First.Admin", root administrator (Home)\n')
    status, body = sign_in(api, "first.admin@example.org", PASSWORD)
    assert status == 200, body
    status, body = api.get(ROOT_ONLY, headers={"X-Auth": body["object"]})
    assert status == 200 and body["success"] is True


def test_running_it_twice_changes_nothing(community, api, monkeypatch, capsys):
    community.load()
    assert create_admin(monkeypatch, "--email", "admin@example.org") == 0
    before = users_table()
    assert create_admin(monkeypatch, "--email", "admin@example.org") == 0
    assert "nothing changed" in capsys.readouterr().out
    assert users_table() == before


def test_an_existing_member_is_promoted_and_gets_the_new_password(
    community, api, monkeypatch, capsys
):
    c = community
    garden = c.group("garden", parent=c.root)
    ann = c.user("ann", {garden: "member"}, password="old password", email="ann@example.org")
    c.load()
    status, body = api.get(ROOT_ONLY, ann)
    assert status == 403
    assert create_admin(monkeypatch, "--email", "ann@example.org") == 0
    assert (
        f"({ann}), root administrator (Home): now administrator, password changed\n"
        == (capsys.readouterr().out.split("ann@example.org ", 1)[1])
    )
    assert sign_in(api, "ann@example.org", "old password")[0] == 401
    status, body = sign_in(api, "ann@example.org", PASSWORD)
    assert status == 200
    assert api.get(ROOT_ONLY, headers={"X-Auth": body["object"]})[0] == 200
    [stored] = [u for u in users_table() if u["id"]["S"] == ann]
    assert json.loads(stored["memberships"]["S"]) == {garden: "member", c.root: "administrator"}
    # Of another group: named, with its id (two groups may share a name).
    assert create_admin(monkeypatch, "--email", "ann@example.org", "--group-id", garden) == 0
    assert capsys.readouterr().out.endswith(
        f'administrator of group "Garden" ({garden}): now administrator\n'
    )


def test_group_id_makes_an_administrator_of_that_group_only(community, api, monkeypatch):
    c = community
    garden = c.group("garden", parent=c.root)
    c.load()
    assert create_admin(monkeypatch, "--email", "gardener@example.org", "--group-id", garden) == 0
    token = sign_in(api, "gardener@example.org", PASSWORD)[1]["object"]
    assert api.get(ROOT_ONLY, headers={"X-Auth": token})[0] == 403
    status, _ = api.get(
        f"/api/v1/en_US/connector/email-to-post/{garden}/log", headers={"X-Auth": token}
    )
    assert status == 200


@pytest.mark.parametrize(
    ("args", "password", "message"),
    [
        (["--email", "not an address"], PASSWORD, "email: must be an email address"),
        (["--email", "a@example.org"], "short", "password: must be at least 8"),
        (["--email", "", "--group-id", "x"], PASSWORD, "email: must be an email address"),
        (
            ["--email", "a@example.org", "--group-id", "5d4b7c1e-0000-4000-8000-000000000000"],
            PASSWORD,
            "groupId: group '5d4b7c1e-0000-4000-8000-000000000000' does not exist",
        ),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    community, monkeypatch, capsys, args, password, message
):
    community.load()
    before = users_table()
    assert create_admin(monkeypatch, *args, password=password) == 2
    assert message in capsys.readouterr().err
    assert users_table() == before


def test_without_a_root_group_it_says_to_load_the_community(aws, monkeypatch, capsys):
    assert create_admin(monkeypatch, "--email", "a@example.org") == 2
    assert "load the community first" in capsys.readouterr().err


def test_first_deploy_checklist_loads_the_bare_root_group_then_creates_the_admin(
    aws, api, monkeypatch, capsys
):
    # README "First deploy": load infra/first-community.json, then create-admin.
    from tests.support import REPO_ROOT

    assert main(["load", str(REPO_ROOT / "infra" / "first-community.json")]) == 0
    assert create_admin(monkeypatch, "--email", "owner@example.org") == 0
    status, body = sign_in(api, "owner@example.org", PASSWORD)
    assert status == 200
    assert api.get(ROOT_ONLY, headers={"X-Auth": body["object"]})[0] == 200


def test_a_new_password_ends_the_earlier_sessions_but_not_feed_keys(
    community, api, monkeypatch, capsys
):
    community.load()
    assert create_admin(monkeypatch, "--email", "admin@example.org") == 0
    status, body = sign_in(api, "admin@example.org", PASSWORD)
    old_token = body["object"]
    status, me = api.get(ROOT_ONLY, headers={"X-Auth": old_token})
    assert status == 200
    from chalicelib.auth import user_id_from_token

    user_id = user_id_from_token(old_token)
    status, key = api.get(f"/api/v1/en_US/user/{user_id}/feed-key", headers={"X-Auth": old_token})
    assert status == 200
    feed = f"/api/v1/en_US/feed/{community.root}?key={key['object']['key']}"

    assert (
        create_admin(monkeypatch, "--email", "admin@example.org", password="a new password!") == 0
    )
    status, body = api.get(ROOT_ONLY, headers={"X-Auth": old_token})
    assert status == 401 and body["success"] is False
    status, body = sign_in(api, "admin@example.org", "a new password!")
    assert status == 200
    status, _ = api.get(ROOT_ONLY, headers={"X-Auth": body["object"]})
    assert status == 200
    # Feed keys are not sessions: the reader's subscription keeps working.
    assert api.client.http.get(feed).status_code == 200
    # Running it again with the same password ends nothing more.
    assert (
        create_admin(monkeypatch, "--email", "admin@example.org", password="a new password!") == 0
    )
    status, _ = api.get(ROOT_ONLY, headers={"X-Auth": body["object"]})
    assert status == 200


def test_alias_names_the_new_administrator_and_renames_an_existing_one(
    community, api, monkeypatch, capsys
):
    community.load()
    assert create_admin(monkeypatch, "--email", "owner@example.org", "--alias", " Olga Owner ") == 0
    assert '"Olga Owner"' in capsys.readouterr().out
    status, body = sign_in(api, "owner@example.org", PASSWORD)
    token = body["object"]
    status, found = api.get("/api/v1/en_US/user/search?q=olga", headers={"X-Auth": token})
    assert status == 200
    assert [(u["alias"], u["email"]) for u in found["object"]["users"]] == [
        ("Olga Owner", "owner@example.org")
    ]

    # The same name again changes nothing; another renames, and the search follows.
    before = users_table()
    assert create_admin(monkeypatch, "--email", "owner@example.org", "--alias", "Olga Owner") == 0
    assert "nothing changed" in capsys.readouterr().out
    assert users_table() == before
    assert create_admin(monkeypatch, "--email", "owner@example.org", "--alias", "Olga Root") == 0
    assert 'now named "Olga Root"' in capsys.readouterr().out
    status, found = api.get("/api/v1/en_US/user/search?q=olga", headers={"X-Auth": token})
    assert [u["alias"] for u in found["object"]["users"]] == ["Olga Root"]
    # Without --alias an existing account keeps its name.
    assert create_admin(monkeypatch, "--email", "owner@example.org") == 0
    status, found = api.get("/api/v1/en_US/user/search?q=olga", headers={"X-Auth": token})
    assert [u["alias"] for u in found["object"]["users"]] == ["Olga Root"]


@pytest.mark.parametrize(
    ("alias", "message"),
    [
        ("   ", "alias: must not be empty"),
        ("Two\nLines", "alias: must be one line"),
        ("x" * 101, "alias: must be at most 100 characters"),
    ],
)
def test_a_bad_alias_exits_2_and_writes_nothing(community, monkeypatch, capsys, alias, message):
    community.load()
    before = users_table()
    assert create_admin(monkeypatch, "--email", "owner@example.org", "--alias", alias) == 2
    assert message in capsys.readouterr().err
    assert users_table() == before
