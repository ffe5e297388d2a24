"""Sign-in: password check with throttling, tokens, and who a token belongs to."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable
from datetime import datetime, timedelta

from chalicelib.auth import (
    Caller,
    issue_token,
    token_claims,
    verify_password,
)
from chalicelib.clock import utc_now
from chalicelib.domain import audit
from chalicelib.domain.ports.people import GroupStore, LoginAttemptStore, UserStore
from chalicelib.errors import FieldError, TooManyRequests, Unauthorized
from chalicelib.services import canary

# One message for a wrong password and an unknown address: no account enumeration.
WRONG_CREDENTIALS = "The email address or the password is wrong."
# Sign-in attempts on one account in a fixed 15-minute window: from one source (so a guesser's
# address runs out without touching the owner's), and from all sources together (so a guesser
# with many addresses is bounded too). A good sign-in gives its source's back. A source the
# owner signed in from in the last `KNOWN_SOURCE_DAYS` is held to its own limit only: a crowd
# of guessers elsewhere cannot lock the owner out. An IPv6 source counts by its /64 (one
# host's usual allocation), an IPv4-mapped IPv6 address as the IPv4 address.
MAX_FAILURES = 5
MAX_ACCOUNT_FAILURES = 50
FAILURE_WINDOW = timedelta(minutes=15)
KNOWN_SOURCE_DAYS = timedelta(days=30)
UNKNOWN_SOURCE = "unknown"


def source_of(address: str | None) -> str:
    """The source an attempt counts under: an IPv4 address, an IPv6 /64, or the text itself."""
    text = (address or "").strip()
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return text or UNKNOWN_SOURCE
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def _hook(address: str, origin: str) -> bool:
    """Whether a sign-in is the deploy hook's, as the canary, from the source only it has."""
    return address == canary.EMAIL and origin == canary.HOOK_SOURCE


def window_end(now: datetime, window: timedelta) -> datetime:
    """When the fixed window that `now` falls in ends (the store counts in the same windows)."""
    seconds = int(window.total_seconds())
    return datetime.fromtimestamp((int(now.timestamp()) // seconds + 1) * seconds, tz=now.tzinfo)


def wait_words(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


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
        origin = source_of(source)
        # The attempt is taken before the password is looked at: parallel guesses cannot all
        # pass a check made before any of them is counted.
        attempt = self.attempts.take_attempt(
            address, origin, now, FAILURE_WINDOW, MAX_FAILURES, MAX_ACCOUNT_FAILURES
        )
        if attempt is None and (self._known(address, origin, now) or _hook(address, origin)):
            # The account's ceiling may be a crowd's doing: the owner's own source has its own,
            # and so has the deploy hook's sign-in as the canary (services/canary.py).
            attempt = self.attempts.take_attempt(
                address, origin, now, FAILURE_WINDOW, MAX_FAILURES, None
            )
        if attempt is None:
            wait = max(1, math.ceil((window_end(now, FAILURE_WINDOW) - now).total_seconds()))
            raise TooManyRequests(
                f"Too many failed sign-ins for this account; try again in {wait_words(wait)}.",
                retry_after=wait,
            )
        user = self.users.by_email(address) if address else None
        if not verify_password(user.password_hash if user else None, password) or user is None:
            # One error, the same for an unknown address and a wrong password (CONTRACT §5);
            # its value is never the password sent. The attempt taken stays counted.
            raise Unauthorized(WRONG_CREDENTIALS, [FieldError("password", "", WRONG_CREDENTIALS)])
        if attempt.from_source > 1:
            # The owner got in: earlier attempts from this address no longer count.
            self.attempts.forget_source(attempt)
        if origin != UNKNOWN_SOURCE:
            self.attempts.remember_source(address, origin, now + KNOWN_SOURCE_DAYS)
        return issue_token(user.id, now, version=user.token_version)

    def _known(self, address: str, origin: str, now: datetime) -> bool:
        return origin != UNKNOWN_SOURCE and self.attempts.is_known_source(address, origin, now)

    def unlock(self, email: str) -> int | None:
        """End the sign-in throttle of the account with this address (every source), for an
        administrator helping its owner: the failed attempts of the current window it forgot
        (0: there were none, nothing is changed or recorded); None when no account has the
        address."""
        address = email.strip().lower()
        user = self.users.by_email(address) if address else None
        if user is None:
            return None
        entry = audit.entry(
            "user.unlock",
            target=("user", user.id),
            group_id=None,
            before=None,
            after=None,
            always=True,
        )
        return self.attempts.end_windows(address, self.clock(), FAILURE_WINDOW, audit=entry)

    def caller_for_token(self, token: str | None) -> Caller:
        """The caller a token names, if the token was issued under the user's current token
        version (a new password ends earlier tokens). The user comes from the warm container's
        memory when it has them, so a password changed elsewhere ends a token within
        AGORA_CACHE_SECONDS; the memberships come with the user."""
        if not token:
            raise Unauthorized()
        return self.caller_for_claims(*token_claims(token))

    def caller_for_claims(self, user_id: str, version: int) -> Caller:
        """The caller of a token whose signature and expiry were checked (`token_claims`): the
        API's gate checks the token before it builds this service and its tables."""
        user = self.users.get(user_id)
        if user is None:
            raise Unauthorized("The account of this token no longer exists.")
        if user.token_version != version:
            raise Unauthorized(
                "The password has changed since this token was issued; sign in again."
            )
        # The memberships came with the user: the caller holds them as roles, and no call of a
        # privilege check comes back up into this service (no closure over them).
        return Caller.of(user, self.groups.root_id())
