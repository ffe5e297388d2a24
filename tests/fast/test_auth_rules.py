"""CONTRACT §5's privilege decisions and token rules (chalicelib/auth.py), on plain values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chalicelib.auth import (
    REST_PREFIX,
    TOKEN_LIFETIME,
    Caller,
    Need,
    Role,
    StaticKeys,
    derived_secret,
    issue_token,
    refusal,
    token_claims,
    token_from_headers,
)
from chalicelib.errors import Forbidden, Unauthorized
from tests.support.fakes import group, user

ROOT = "root"
SECRET = "test-secret-that-is-long-enough-for-hs256"  # tests/conftest.py's AGORA_TOKEN_SECRET


def caller(**memberships: str) -> Caller:
    return Caller.of(user(id="u", memberships=memberships), ROOT)


GARDEN = group("garden", parent_id=ROOT, name="Garden")
PRIVATE = group("club", parent_id=ROOT, name="", access="private")  # refusals name it by its id

# (the caller's role in the group, or None; the need) -> granted
DECISIONS = [
    (None, Need.SIGNED_IN, True),
    (None, Need.ENTER, True),  # a public group
    (None, Need.MODERATOR, False),
    ("member", Need.MODERATOR, False),
    ("moderator", Need.MODERATOR, True),
    ("administrator", Need.MODERATOR, True),
    ("moderator", Need.GROUP_ADMIN, False),
    ("administrator", Need.GROUP_ADMIN, True),
    ("administrator", Need.ROOT_ADMIN, False),
]


@pytest.mark.parametrize(("role", "need", "granted"), DECISIONS)
def test_a_group_role_grants_what_its_rank_reaches(role, need, granted):
    who = caller(**({GARDEN.id: role} if role else {}))
    assert who.has(need, GARDEN) is granted


@pytest.mark.parametrize(("role", "enters"), [(None, False), ("member", True), ("moderator", True)])
def test_a_private_group_is_entered_by_its_members_only(role, enters):
    who = caller(**({PRIVATE.id: role} if role else {}))
    assert who.has(Need.ENTER, PRIVATE) is enters


def test_a_role_elsewhere_grants_nothing_here():
    who = caller(other="administrator")
    assert not who.has(Need.MODERATOR, GARDEN)
    assert not who.has(Need.ENTER, PRIVATE)


@pytest.mark.parametrize("need", list(Need))
def test_a_root_administrator_has_every_need_in_every_group(need):
    assert caller(root="administrator").has(need, PRIVATE)


def test_a_root_member_is_no_root_administrator():
    assert not caller(root="moderator").is_root_admin
    assert not Caller("u", {ROOT: Role.ADMINISTRATOR}, root_group_id=None).is_root_admin


def test_a_group_need_without_a_group_is_a_programming_error():
    with pytest.raises(ValueError, match="needs a group"):
        caller().has(Need.MODERATOR)


def test_a_group_permission_needs_the_role_granted_and_entry():
    garden = group("garden", parent_id=ROOT, permissions={"post": ("member", "moderator")})
    private = group(
        "club", parent_id=ROOT, access="private", permissions={"post": ("regular", "member")}
    )
    assert caller(garden="member").may("post", garden)
    assert not caller().may("post", garden)  # regular is not granted
    assert not caller(garden="administrator").may("post", garden)  # not in the list
    assert not caller().may("post", private)  # granted to regular, but cannot enter
    assert not caller(garden="member").may("comment", garden)
    assert caller(root="administrator").may("anything", private)


def test_require_refuses_with_the_group_named():
    with pytest.raises(Forbidden, match=r'group "Garden" \(garden\)'):
        caller().require(Need.GROUP_ADMIN, GARDEN)
    caller(garden="administrator").require(Need.GROUP_ADMIN, GARDEN)  # no refusal


@pytest.mark.parametrize(
    ("need", "group", "message"),
    [
        (Need.ROOT_ADMIN, GARDEN, "Only a root group administrator may do this."),
        (Need.MODERATOR, None, "Only a root group administrator may do this."),
        (
            Need.GROUP_ADMIN,
            GARDEN,
            'Only an administrator of group "Garden" (garden), or a root group administrator, '
            "may do this.",
        ),
        (
            Need.MODERATOR,
            PRIVATE,
            "Only a moderator or administrator of group club, or a root group administrator, "
            "may do this.",
        ),
        (Need.ENTER, PRIVATE, "Only members of group club may see it: the group is private."),
    ],
)
def test_a_refusal_says_who_may(need, group, message):
    assert refusal(need, group) == message


def test_roles_are_named_in_any_case_and_ordered():
    assert Role.named("Moderator") is Role.MODERATOR
    assert Role.REGULAR < Role.MEMBER < Role.MODERATOR < Role.ADMINISTRATOR
    assert Role.ADMINISTRATOR.label == "administrator"
    with pytest.raises(KeyError):
        Role.named("owner")


@pytest.mark.parametrize(
    ("headers", "path", "token"),
    [
        ({"x-auth": " abc "}, "/api/v1/en_US/x", "abc"),
        ({"authorization": "Bearer  abc "}, "/api/v1/en_US/x", "abc"),
        ({"authorization": "bearer abc"}, "/api/v1/en_US/x", "abc"),
        ({"authorization": "Basic abc"}, "/api/v1/en_US/x", None),
        ({"authorization": "Bearer "}, "/api/v1/en_US/x", None),
        ({"x-api-auth-key": "abc"}, "/api/v1/en_US/x", None),
        ({"x-api-auth-key": "abc"}, REST_PREFIX + "x", "abc"),
        ({"x-auth": "first", "authorization": "Bearer second"}, "/api/v1/en_US/x", "first"),
        ({}, REST_PREFIX + "x", None),
    ],
)
def test_the_token_comes_from_x_auth_bearer_or_the_rest_api_key(headers, path, token):
    assert token_from_headers(headers, path) == token


def test_a_token_carries_its_user_and_version():
    token = issue_token("ann", version=3)
    assert token_claims(token, StaticKeys(SECRET)) == ("ann", 3)


def test_an_expired_token_asks_to_sign_in_again():
    issued = datetime.now(UTC) - TOKEN_LIFETIME - timedelta(seconds=1)
    with pytest.raises(Unauthorized, match="expired"):
        token_claims(issue_token("ann", now=issued), StaticKeys(SECRET))


@pytest.mark.parametrize("token", ["", "not.a.token", "a.b"])
def test_a_malformed_token_is_not_valid(token):
    with pytest.raises(Unauthorized, match="not valid"):
        token_claims(token, StaticKeys(SECRET))


def test_a_token_signed_with_another_secret_is_not_valid():
    with pytest.raises(Unauthorized, match="not valid"):
        token_claims(issue_token("ann"), StaticKeys("another-secret-that-is-long-enough-too"))


def test_a_token_with_a_version_that_is_no_number_gets_one_no_user_has():
    import jwt

    now = datetime.now(UTC)
    claims = {"sub": "ann", "ver": "3", "iat": now, "exp": now + timedelta(minutes=1)}
    token = jwt.encode(claims, SECRET, algorithm="HS256")
    assert token_claims(token, StaticKeys(SECRET)) == ("ann", -1)


def test_each_purpose_has_its_own_derived_secret():
    feed, unsubscribe = derived_secret("feed"), derived_secret("unsubscribe")
    assert feed != unsubscribe and len(feed) == 32
    assert derived_secret("feed") == feed
    assert SECRET.encode() not in feed
