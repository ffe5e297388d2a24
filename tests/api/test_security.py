"""Sign-in and tokens (CONTRACT §5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chalicelib import deps
from tests.support.passwords import guessed_administrator
from tests.support.throttle_windows import IN_PROCESS_SECONDS, in_one_throttle_window

LOGIN = "/api/v1/en_US/security/login"
HOME = "/api/v1/en_US/system-page/home-page"


@pytest.fixture
def admin(community):
    community.user(
        "pw-admin",
        {community.root: "administrator"},
        password="correct horse",
        email="Ann@Example.org",
    )
    community.load()
    return community.users[-1]["id"]


@pytest.fixture
def guessed_admin(community):
    """The same account for the tests that guess its password many times: stored with a hash at
    argon2's lowest cost, as a fixture may give it (tests/support/passwords.py)."""
    return guessed_administrator(community, "Ann@Example.org")


def test_login_returns_a_token_that_opens_the_home_page(api, admin):
    status, body = api.post(LOGIN, body={"email": "ann@example.org", "password": "correct horse"})
    assert status == 200 and body["success"] is True
    token = body["object"]
    assert isinstance(token, str) and token.count(".") == 2
    status, page = api.get(HOME, headers={"X-Auth": token})
    assert status == 200 and page["object"]["type"] == "HomePage"


def test_wrong_password_and_unknown_email_answer_the_same(api, admin):
    wrong = api.post(LOGIN, body={"email": "ann@example.org", "password": "nope"})
    unknown = api.post(LOGIN, body={"email": "nobody@example.org", "password": "nope"})
    for status, body in (wrong, unknown):
        assert status == 401 and body["success"] is False
        assert body["errors"] == [
            {
                "key": "password",
                "value": "",
                "message": "The email address or the password is wrong.",
            }
        ]
    assert wrong[1]["message"] == unknown[1]["message"]
    assert wrong[1]["object"] is None


def test_repeated_failures_are_throttled(api, guessed_admin):
    def scenario() -> tuple[list[int], int, dict]:
        wrong = [
            api.post(LOGIN, body={"email": "ann@example.org", "password": "nope"})[0]
            for _ in range(5)
        ]
        right = {"email": "ANN@example.org", "password": "correct horse"}
        return wrong, *api.post(LOGIN, body=right)

    wrong, status, body = in_one_throttle_window(scenario, needs=IN_PROCESS_SECONDS)
    assert wrong == [401] * 5
    assert status == 429 and body["success"] is False
    # Another address is not affected.
    status, _ = api.post(LOGIN, body={"email": "other@example.org", "password": "nope"})
    assert status == 401


def test_login_body_is_validated(api, admin):
    status, body = api.post(LOGIN, body={"email": ""})
    assert status == 400
    assert {e["key"] for e in body["errors"]} == {"email", "password"}


@pytest.mark.parametrize("header", ["X-Auth", "Authorization"])
def test_each_token_header_is_accepted(api, admin, header):
    from tests.fixtures import token

    value = token(admin) if header == "X-Auth" else f"Bearer {token(admin)}"
    status, _ = api.get(HOME, headers={header: value})
    assert status == 200


def test_api_auth_key_header_only_on_rest_paths(api, admin):
    from tests.fixtures import token

    status, body = api.get(HOME, headers={"x-api-auth-key": token(admin)})
    assert status == 401 and body["success"] is False


def test_expired_token_is_401(api, admin):
    from chalicelib.auth import issue_token

    stale = issue_token(admin, datetime.now(UTC) - timedelta(hours=8, minutes=1))
    status, body = api.get(HOME, headers={"X-Auth": stale})
    assert status == 401 and "expired" in body["message"]


def test_tampered_token_is_401(api, admin):
    from tests.fixtures import token

    forged = token(admin)[:-2] + ("AA" if not token(admin).endswith("AA") else "BB")
    status, _ = api.get(HOME, headers={"X-Auth": forged})
    assert status == 401


def test_no_token_is_401(api, admin):
    status, body = api.get(HOME)
    assert status == 401 and body["success"] is False and body["errors"] == []


def test_password_is_stored_only_as_a_slow_hash(aws, admin):
    from chalicelib.store.users import UserRecord

    stored = UserRecord.get(admin).password_hash
    assert stored.startswith("$argon2") and "correct horse" not in stored


def test_throttle_window_expires_and_a_new_one_counts_afresh(guessed_admin):
    from chalicelib.errors import TooManyRequests, Unauthorized

    now = [datetime(2026, 11, 1, 12, 0, tzinfo=UTC)]
    service = deps.security_service()
    service.clock = lambda: now[0]
    for _ in range(5):
        with pytest.raises(Unauthorized):
            service.login("ann@example.org", "nope")
    now[0] += timedelta(minutes=14)
    with pytest.raises(TooManyRequests):
        service.login("ann@example.org", "correct horse")
    now[0] += timedelta(minutes=2)  # the window of the first failure has closed
    with pytest.raises(Unauthorized):
        service.login("ann@example.org", "nope")  # failure 1 of a new window
    assert service.login("ann@example.org", "correct horse").count(".") == 2


def test_a_good_sign_in_clears_the_failures(api, guessed_admin):
    def sign_in(password: str) -> int:
        return api.post(LOGIN, body={"email": "ann@example.org", "password": password})[0]

    def scenario() -> list[int]:
        statuses = [sign_in("nope") for _ in range(4)] + [sign_in("correct horse")]
        return statuses + [sign_in("nope") for _ in range(5)] + [sign_in("correct horse")]

    statuses = in_one_throttle_window(scenario, needs=IN_PROCESS_SECONDS)
    assert statuses[:5] == [401] * 4 + [200]
    # The owner's sign-in wiped the slate: five fresh failures before the throttle answers.
    assert statuses[5:] == [401] * 5 + [429]


@pytest.mark.slow
def test_parallel_wrong_guesses_never_check_more_passwords_than_the_limit(moto_server):
    """36 guesses at once, on threads, against a real (threaded) DynamoDB endpoint."""
    import threading

    from chalicelib.errors import TooManyRequests, Unauthorized
    from chalicelib.services.security import MAX_FAILURES, SecurityService
    from chalicelib.store.users import UserRepository
    from tests.fixtures import Community

    community = Community()
    community.group("home")
    community.user("target", {community.root: "administrator"}, password="correct horse")
    community.load()

    class CountingUsers(UserRepository):
        """Each lookup by address is followed by exactly one password check."""

        checked = 0
        lock = threading.Lock()

        def by_email(self, email_lower):
            with CountingUsers.lock:
                CountingUsers.checked += 1
            return super().by_email(email_lower)

    base = deps.security_service()
    service = SecurityService(CountingUsers(), base.attempts, base.groups)
    # Mid-window on a fixed clock: the throttle counts in fixed 15-minute windows of the clock,
    # and a run that crossed a window's end on a busy machine let the owner in with a new one.
    service.clock = lambda: datetime(2026, 11, 1, 12, 5, tzinfo=UTC)
    guesses = 36
    start = threading.Barrier(guesses)
    outcomes: list[str] = []

    def guess(n: int) -> None:
        start.wait()
        try:
            service.login("target@example.org", f"guess {n}")
            outcomes.append("signed in")
        except Unauthorized:
            outcomes.append("401")
        except TooManyRequests:
            outcomes.append("429")

    threads = [threading.Thread(target=guess, args=(n,)) for n in range(guesses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert CountingUsers.checked == MAX_FAILURES
    assert sorted(outcomes) == ["401"] * MAX_FAILURES + ["429"] * (guesses - MAX_FAILURES)
    with pytest.raises(TooManyRequests):
        service.login("target@example.org", "correct horse")  # the owner waits too


def test_the_documented_429_carries_retry_after(api):
    status, body = api.get("/api/v1/en_US/openapi.json")

    assert status == 200
    headers = body["components"]["responses"]["Error429"]["headers"]
    assert headers["Retry-After"]["schema"] == {"type": "integer"}
