"""Sign-in rules (CONTRACT §5) on in-memory repositories: throttling, one error for every wrong
pair, and who a token belongs to."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from chalicelib.auth import Role, hash_password, issue_token, user_id_from_token
from chalicelib.errors import TooManyRequests, Unauthorized
from chalicelib.services.security import (
    FAILURE_WINDOW,
    MAX_ACCOUNT_FAILURES,
    MAX_FAILURES,
    WRONG_CREDENTIALS,
    SecurityService,
)
from tests.support.fakes import (
    FakeGroupRepository,
    FakeLoginAttemptRepository,
    FakeUserRepository,
    user,
)
from tests.support.passwords import cheap_hash

# Tokens are checked against the real time: the test clock runs an hour behind it.
NOW = datetime.now(UTC) - timedelta(hours=1)
PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def password_hash() -> str:
    """Argon2 at its cheapest (tests/support/passwords.py): these tests guess hundreds of times.
    The production parameters are checked once below."""
    return cheap_hash(PASSWORD)


def test_a_stored_password_is_argon2id_at_the_production_cost():
    from argon2 import extract_parameters, profiles

    stored = hash_password(PASSWORD)
    # argon2-cffi's default, RFC 9106's second recommendation: 64 MiB, 3 passes, 4 lanes.
    assert extract_parameters(stored) == profiles.RFC_9106_LOW_MEMORY
    assert stored.startswith("$argon2id$") and PASSWORD not in stored


@pytest.fixture
def clock():
    return SimpleNamespace(now=NOW)


@pytest.fixture
def service(password_hash, clock) -> SecurityService:
    users = FakeUserRepository()
    for user_id, memberships in (("ann", {"root": "administrator"}), ("bob", {"g": "moderator"})):
        users.save(
            user(
                id=user_id,
                alias=user_id.title(),
                email=f"{user_id.title()}@Example.org",
                email_lower=f"{user_id}@example.org",
                slug=user_id,
                password_hash=password_hash,
                memberships=memberships,
            )
        )
    groups = FakeGroupRepository(
        SimpleNamespace(id="root", parent_id=None), SimpleNamespace(id="g", parent_id="root")
    )
    return SecurityService(users, FakeLoginAttemptRepository(), groups, lambda: clock.now)


def wrong(service: SecurityService, email: str, password: str) -> Unauthorized:
    with pytest.raises(Unauthorized) as raised:
        service.login(email, password)
    return raised.value


def test_the_right_pair_gets_a_token_of_that_user_whatever_the_address_case(service):
    assert user_id_from_token(service.login("  BOB@example.ORG ", PASSWORD)) == "bob"


def test_an_unknown_address_and_a_wrong_password_get_the_same_single_error(service):
    unknown, mistyped = (
        wrong(service, "eve@example.org", PASSWORD),
        wrong(service, "bob@example.org", "x"),
    )
    for error in (unknown, mistyped):
        assert error.message == WRONG_CREDENTIALS
        assert [(e.key, e.value) for e in error.errors] == [("password", "")]


def take(service: SecurityService, source: str, at: datetime = NOW) -> bool:
    """One attempt on bob's account from `source`, as a guess takes it."""
    return (
        service.attempts.take_attempt(
            "bob@example.org", source, at, FAILURE_WINDOW, MAX_FAILURES, MAX_ACCOUNT_FAILURES
        )
        is not None
    )


def test_too_many_attempts_from_one_address_stop_that_address_even_with_the_right_password(
    service, clock
):
    for _ in range(MAX_FAILURES):
        assert take(service, "192.0.2.1")
    with pytest.raises(TooManyRequests):
        service.login("bob@example.org", PASSWORD, "192.0.2.1")
    clock.now = NOW + FAILURE_WINDOW + timedelta(seconds=1)
    assert user_id_from_token(service.login("bob@example.org", PASSWORD, "192.0.2.1")) == "bob"


def test_a_guessers_address_does_not_lock_the_owner_out_of_another(service):
    for _ in range(36):
        with pytest.raises((Unauthorized, TooManyRequests)):
            service.login("bob@example.org", "guess", "192.0.2.66")
    assert user_id_from_token(service.login("bob@example.org", PASSWORD, "198.51.100.7")) == "bob"


def test_guesses_spread_over_many_addresses_still_meet_the_account_ceiling(service):
    outcomes = []
    for n in range(200):
        try:
            service.login("bob@example.org", f"guess {n}", f"10.0.{n // 250}.{n % 250}")
        except Unauthorized:
            outcomes.append(401)
        except TooManyRequests:
            outcomes.append(429)
    assert outcomes == [401] * MAX_ACCOUNT_FAILURES + [429] * (200 - MAX_ACCOUNT_FAILURES)
    with pytest.raises(TooManyRequests):
        service.login("bob@example.org", PASSWORD, "198.51.100.7")


def test_a_good_sign_in_gives_its_address_all_its_attempts_back(service):
    for _ in range(MAX_FAILURES - 1):
        assert take(service, "192.0.2.1")
    service.login("bob@example.org", PASSWORD, "192.0.2.1")
    taken = [take(service, "192.0.2.1") for _ in range(MAX_FAILURES + 1)]
    assert taken == [True] * MAX_FAILURES + [False]


def test_a_new_password_ends_earlier_tokens(service):
    token = service.login("bob@example.org", PASSWORD, "192.0.2.1")
    assert service.caller_for_token(token).user_id == "bob"
    service.users.save(dataclasses.replace(service.users.get("bob"), token_version=1))
    with pytest.raises(Unauthorized):
        service.caller_for_token(token)
    assert service.caller_for_token(service.login("bob@example.org", PASSWORD)).user_id == "bob"


def test_a_token_answers_its_user_with_the_roles_of_their_memberships(service):
    ann = service.caller_for_token(issue_token("ann", datetime.now(UTC)))
    bob = service.caller_for_token(issue_token("bob", datetime.now(UTC)))
    assert ann.is_root_admin and not bob.is_root_admin
    assert bob.role_in("g") is Role.MODERATOR and bob.role_in("root") is Role.REGULAR


def test_a_token_of_a_removed_account_or_none_at_all_is_refused(service):
    with pytest.raises(Unauthorized):
        service.caller_for_token(issue_token("gone", datetime.now(UTC)))
    with pytest.raises(Unauthorized):
        service.caller_for_token(None)


# --- no lock-out by a crowd -------------------------------------------------------------------


def guess(service: SecurityService, source: str) -> int:
    try:
        service.login("bob@example.org", "a wrong guess", source)
    except Unauthorized:
        return 401
    except TooManyRequests:
        return 429
    return 200


def signs_in(service: SecurityService, source: str) -> bool:
    try:
        return bool(service.login("bob@example.org", PASSWORD, source))  # a token
    except TooManyRequests:
        return False


def test_a_crowd_at_the_account_ceiling_does_not_lock_the_owner_out_of_a_source_they_used(
    service, clock
):
    assert signs_in(service, "198.51.100.7")  # the owner's usual address
    clock.now = NOW + timedelta(days=29)  # still remembered a month later
    outcomes = [guess(service, f"10.0.0.{n}") for n in range(12) for _ in range(MAX_FAILURES)]

    assert outcomes.count(401) == MAX_ACCOUNT_FAILURES and outcomes[-1] == 429
    assert signs_in(service, "198.51.100.7")
    assert not signs_in(service, "203.0.113.9")  # a new address meets the account's ceiling


def test_a_known_source_is_still_held_to_its_own_limit(service):
    assert signs_in(service, "198.51.100.7")  # this attempt counts too
    outcomes = [guess(service, "198.51.100.7") for _ in range(MAX_FAILURES)]

    assert outcomes == [401] * (MAX_FAILURES - 1) + [429]


def test_a_source_is_forgotten_after_thirty_days(service, clock):
    assert signs_in(service, "198.51.100.7")
    clock.now = NOW + timedelta(days=30, seconds=1)
    for n in range(MAX_ACCOUNT_FAILURES):
        guess(service, f"10.0.{n // 5}.{n % 5}")

    assert not signs_in(service, "198.51.100.7")


def test_ipv6_sources_count_by_their_64(service):
    outcomes = [guess(service, f"2001:db8:0:1::{n:x}") for n in range(1, MAX_FAILURES + 2)]
    neighbour = signs_in(service, "2001:db8:0:1:ffff::1")
    elsewhere = signs_in(service, "2001:db8:0:2::1")

    assert outcomes == [401] * MAX_FAILURES + [429]
    assert not neighbour and elsewhere


@pytest.mark.parametrize(
    ("address", "source"),
    [
        ("2001:db8:0:1:2:3:4:5", "2001:db8:0:1::/64"),
        ("::ffff:192.0.2.1", "192.0.2.1"),
        ("192.0.2.1", "192.0.2.1"),
        ("", "unknown"),
        (None, "unknown"),
        ("not an address", "not an address"),
    ],
)
def test_the_source_an_attempt_counts_under(address, source):
    from chalicelib.services.security import source_of

    assert source_of(address) == source


def test_a_429_says_the_real_wait_and_carries_it_as_retry_after(service, clock):
    start = NOW.replace(minute=0, second=0, microsecond=0)  # a window starts on the quarter hour
    clock.now = start + timedelta(minutes=3, seconds=30)
    for _ in range(MAX_FAILURES):
        guess(service, "192.0.2.1")
    clock.now = start + timedelta(minutes=4)

    with pytest.raises(TooManyRequests) as raised:
        service.login("bob@example.org", PASSWORD, "192.0.2.1")

    assert raised.value.headers == {"Retry-After": str(11 * 60)}
    assert raised.value.message.endswith("try again in 11 minutes.")
    clock.now = start + timedelta(minutes=14, seconds=20)
    with pytest.raises(TooManyRequests) as later:
        service.login("bob@example.org", PASSWORD, "192.0.2.1")
    assert later.value.headers == {"Retry-After": "40"}
    assert later.value.message.endswith("try again in 40 seconds.")


def test_unlock_ends_every_sources_window(service):
    for n in range(12):
        for _ in range(MAX_FAILURES):
            guess(service, f"10.0.0.{n}")
    assert not signs_in(service, "10.0.0.1") and not signs_in(service, "203.0.113.9")

    assert service.unlock(" BOB@example.org ") == MAX_ACCOUNT_FAILURES  # the attempts forgotten
    assert service.unlock("bob@example.org") == 0  # no longer locked: nothing to lift
    assert service.unlock("nobody@example.org") is None

    assert signs_in(service, "10.0.0.1") and signs_in(service, "203.0.113.9")
