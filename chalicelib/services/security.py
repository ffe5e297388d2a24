"""Sign-in: password check with throttling, tokens, and who a token belongs to."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from chalicelib.auth import (
    Caller,
    issue_token,
    user_id_from_token,
    verify_password,
)
from chalicelib.clock import utc_now
from chalicelib.errors import FieldError, TooManyRequests, Unauthorized

if TYPE_CHECKING:
    from chalicelib.store.groups import GroupRepository
    from chalicelib.store.login_attempts import LoginAttemptRepository
    from chalicelib.store.users import UserRepository

# One message for a wrong password and an unknown address: no account enumeration.
WRONG_CREDENTIALS = "The email address or the password is wrong."
MAX_FAILURES = 5
FAILURE_WINDOW = timedelta(minutes=15)


class SecurityService:
    def __init__(
        self,
        users: UserRepository,
        attempts: LoginAttemptRepository,
        groups: GroupRepository,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.users = users
        self.attempts = attempts
        self.groups = groups
        self.clock = clock

    def login(self, email: str, password: str) -> str:
        address = email.strip().lower()
        now = self.clock()
        # The attempt is taken before the password is looked at: parallel guesses cannot all
        # pass a check made before any of them is counted.
        if not self.attempts.reserve_attempt(address, now, FAILURE_WINDOW, MAX_FAILURES):
            raise TooManyRequests(
                "Too many failed sign-ins for this address; try again in 15 minutes."
            )
        user = self.users.by_email(address) if address else None
        if not verify_password(user.password_hash if user else None, password):
            # One error, the same for an unknown address and a wrong password (CONTRACT §5);
            # its value is never the password sent. The attempt taken stays counted.
            raise Unauthorized(WRONG_CREDENTIALS, [FieldError("password", "", WRONG_CREDENTIALS)])
        # The owner got in: earlier failures no longer count against the address.
        self.attempts.clear(address)
        return issue_token(user.id, now)

    def caller_for_token(self, token: str | None) -> Caller:
        """The caller a token names. The token carries the user id; the memberships are read
        (once, and from the warm container's memory when it has them) only when a privilege is
        asked about, so a route that needs no more than the user id reads nothing."""
        if not token:
            raise Unauthorized()
        user_id = user_id_from_token(token)
        return Caller.deferred(
            user_id, lambda: self._memberships_of(user_id), self.groups.root_id()
        )

    def _memberships_of(self, user_id: str) -> Mapping[str, str]:
        user = self.users.get(user_id)
        if user is None:
            raise Unauthorized("The account of this token no longer exists.")
        return user.memberships or {}
