"""Sign-in: password check with throttling, tokens, and who a token belongs to."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from chalicelib.auth import (
    Caller,
    issue_token,
    token_claims,
    token_version,
    verify_password,
)
from chalicelib.clock import utc_now
from chalicelib.errors import FieldError, TooManyRequests, Unauthorized
from chalicelib.services.ports.people import GroupStore, LoginAttemptStore, UserStore

# One message for a wrong password and an unknown address: no account enumeration.
WRONG_CREDENTIALS = "The email address or the password is wrong."
# Sign-in attempts on one account in a fixed 15-minute window: from one source address (so a
# guesser's address runs out without touching the owner's), and from all addresses together (so
# a guesser with many addresses is bounded too). A good sign-in gives its address's back.
MAX_FAILURES = 5
MAX_ACCOUNT_FAILURES = 50
FAILURE_WINDOW = timedelta(minutes=15)
UNKNOWN_SOURCE = "unknown"


class SecurityService:
    def __init__(
        self,
        users: UserStore,
        attempts: LoginAttemptStore,
        groups: GroupStore,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.users = users
        self.attempts = attempts
        self.groups = groups
        self.clock = clock

    def login(self, email: str, password: str, source: str | None = None) -> str:
        """A token for the right pair. `source` is the caller's address (API Gateway's
        `sourceIp`, the peer address in `make run`). Costs the attempt's UpdateItem and the
        user's Query; a good sign-in after earlier attempts from its address, one UpdateItem more.
        """
        address = email.strip().lower()
        now = self.clock()
        # The attempt is taken before the password is looked at: parallel guesses cannot all
        # pass a check made before any of them is counted.
        attempt = self.attempts.take_attempt(
            address,
            source or UNKNOWN_SOURCE,
            now,
            FAILURE_WINDOW,
            MAX_FAILURES,
            MAX_ACCOUNT_FAILURES,
        )
        if attempt is None:
            raise TooManyRequests(
                "Too many failed sign-ins for this address; try again in 15 minutes."
            )
        user = self.users.by_email(address) if address else None
        if not verify_password(user.password_hash if user else None, password) or user is None:
            # One error, the same for an unknown address and a wrong password (CONTRACT §5);
            # its value is never the password sent. The attempt taken stays counted.
            raise Unauthorized(WRONG_CREDENTIALS, [FieldError("password", "", WRONG_CREDENTIALS)])
        if attempt.from_source > 1:
            # The owner got in: earlier attempts from this address no longer count.
            self.attempts.forget_source(attempt)
        return issue_token(user.id, now, version=token_version(user))

    def caller_for_token(self, token: str | None) -> Caller:
        """The caller a token names, if the token was issued under the user's current token
        version (a new password ends earlier tokens). The user comes from the warm container's
        memory when it has them, so a password changed elsewhere ends a token within
        AGORA_CACHE_SECONDS; the memberships come with the user."""
        if not token:
            raise Unauthorized()
        user_id, version = token_claims(token)
        user = self.users.get(user_id)
        if user is None:
            raise Unauthorized("The account of this token no longer exists.")
        if token_version(user) != version:
            raise Unauthorized(
                "The password has changed since this token was issued; sign in again."
            )
        memberships = user.memberships or {}
        return Caller.deferred(user_id, lambda: memberships, self.groups.root_id())
