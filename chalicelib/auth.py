"""Passwords, tokens and privileges (CONTRACT §5). The one place that decides who may do what."""

from __future__ import annotations

import functools
import hashlib
import hmac
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum, IntEnum
from typing import TYPE_CHECKING, Any

from chalicelib import aws
from chalicelib.domain.groups import Group
from chalicelib.domain.users import User
from chalicelib.errors import Forbidden, Unauthorized
from chalicelib.settings import get_settings

if TYPE_CHECKING:
    from argon2 import PasswordHasher

TOKEN_ALGORITHM = "HS256"


class Role(IntEnum):
    """Roles, low to high, with the ids the spec's notification `userRoleId` uses."""

    REGULAR = 2
    MEMBER = 3
    MODERATOR = 4
    ADMINISTRATOR = 5

    @classmethod
    def named(cls, name: str) -> Role:
        return cls[name.upper()]

    @property
    def label(self) -> str:
        return self.name.lower()


class Need(Enum):
    """What a route or an operation requires of its caller."""

    SIGNED_IN = "signed in"
    ENTER = "may enter the group"
    MODERATOR = "moderator of the group"
    GROUP_ADMIN = "group administrator"
    ROOT_ADMIN = "root group administrator"


@dataclass(frozen=True)
class Caller:
    user_id: str
    roles: Mapping[str, Role] = field(default_factory=dict)
    root_group_id: str | None = None

    @classmethod
    def of(cls, user: User, root_group_id: str | None) -> Caller:
        """The user as a caller: their role in each group they belong to."""
        return cls(user.id, roles_of(user.memberships), root_group_id)

    def role_in(self, group_id: str) -> Role:
        return self.roles.get(group_id, Role.REGULAR)

    @property
    def is_root_admin(self) -> bool:
        return self.root_group_id is not None and (
            self.role_in(self.root_group_id) is Role.ADMINISTRATOR
        )

    def has(self, need: Need, group: Group | None = None) -> bool:
        if need is Need.SIGNED_IN:
            return True
        if self.is_root_admin:
            return True
        if need is Need.ROOT_ADMIN:
            return False
        if group is None:
            raise ValueError(f"{need.value} needs a group")
        role = self.role_in(group.id)
        if need is Need.GROUP_ADMIN:
            return role is Role.ADMINISTRATOR
        if need is Need.MODERATOR:
            return role >= Role.MODERATOR
        # ENTER: anyone signed in enters a public group; private and premium need membership.
        return group.access == "public" or role >= Role.MEMBER

    def may(self, action: str, group: Group) -> bool:
        """A group permission (`post`, `comment`, `commentWithoutApproval`): the roles the group
        grants it to, among those who may enter it; a root administrator may do everything."""
        if self.is_root_admin:
            return True
        granted = group.permissions.get(action, ())
        return self.has(Need.ENTER, group) and self.role_in(group.id).label in granted

    def require(self, need: Need, group: Group | None = None) -> None:
        if not self.has(need, group):
            raise Forbidden(refusal(need, group))


def refusal(need: Need, group: Group | None) -> str:
    """The 403 message in plain words: who may, and which group (by name, with its id)."""
    if need is Need.ROOT_ADMIN or group is None:
        return "Only a root group administrator may do this."
    which = f'group "{group.name}" ({group.id})' if group.name else f"group {group.id}"
    if need is Need.GROUP_ADMIN:
        return f"Only an administrator of {which}, or a root group administrator, may do this."
    if need is Need.MODERATOR:
        return (
            f"Only a moderator or administrator of {which}, or a root group administrator, "
            "may do this."
        )
    return f"Only members of {which} may see it: the group is {group.access}."


def roles_of(memberships: Mapping[str, str]) -> dict[str, Role]:
    return {group_id: Role.named(role) for group_id, role in memberships.items()}


# --- passwords ---------------------------------------------------------------------------------


# argon2 (6 ms) and PyJWT (72 ms) are imported where a password or a token is checked: the
# schedules and the queues' functions, which check neither, never load them (cold start,
# bench/hidden_imports.py --cost).
@functools.cache
def _hasher() -> PasswordHasher:
    from argon2 import PasswordHasher

    return PasswordHasher()


def hash_password(password: str) -> str:
    return _hasher().hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    from argon2.exceptions import InvalidHashError, VerificationError

    # An account without a password still costs one verification, so timing tells nothing.
    candidate = password_hash or _dummy_hash()
    try:
        return _hasher().verify(candidate, password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def made_at_current_cost(password_hash: str) -> bool:
    """Whether a stored hash was made with today's argon2 parameters: its header says, without
    the cost of a verification. Text that is no argon2 hash was not."""
    from argon2.exceptions import InvalidHashError

    try:
        return not _hasher().check_needs_rehash(password_hash)
    except InvalidHashError:
        return False


@functools.cache
def _dummy_hash() -> str:
    return hash_password("no account has this password")


# --- the token secret -----------------------------------------------------------------------------
#
# The secret that signs access tokens, and its rotation.
#
# AGORA_TOKEN_SECRET is either the secret itself (`make run`, tests) or, in AWS,
# `secretsmanager:<secret id>`: the secret is then read from Secrets Manager at run time and kept
# for a few minutes, never placed in the function's environment. Rotating it needs no redeploy:
#
# - tokens are signed with the version labelled AWSCURRENT;
# - the version labelled AWSPREVIOUS is still accepted while the current one is younger than
#   ROTATION_WINDOW (a token's lifetime plus the cache time), so nobody is signed out by a rotation;
# - after the window only the current version is accepted. (To cut off a leaked secret at once,
#   rotate twice: the leaked version then has no label.)
#
# Why not Powertools Parameters (`SecretsProvider`): its cache is keyed by the secret's name, not
# by the version stage, so AWSCURRENT and AWSPREVIOUS would overwrite each other; and it answers
# the secret string only, while the rotation window needs the current version's CreatedDate. The
# cache here is the few lines of `SecretsManagerKeys.keys`.


REFERENCE_PREFIX = "secretsmanager:"
TOKEN_LIFETIME = timedelta(hours=8)
CACHE_SECONDS = 300.0
ROTATION_WINDOW = TOKEN_LIFETIME + timedelta(seconds=CACHE_SECONDS)


@dataclass(frozen=True)
class SigningKeys:
    current: str
    previous: str | None = None
    # When the current version was made; the previous one is accepted until this + the window.
    current_since: datetime | None = None

    def accepted(self, now: datetime, window: timedelta = ROTATION_WINDOW) -> list[str]:
        keys = [self.current]
        if self.previous and self.current_since is not None and now - self.current_since < window:
            keys.append(self.previous)
        return keys


class StaticKeys:
    """AGORA_TOKEN_SECRET holds the secret itself: one key, no rotation."""

    def __init__(self, secret: str) -> None:
        self._keys = SigningKeys(current=secret)

    def keys(self) -> SigningKeys:
        return self._keys

    def accepted(self) -> list[str]:
        return [self._keys.current]

    def secrets(self) -> list[str]:
        return [self._keys.current]


class SecretsManagerKeys:
    """The secret read from Secrets Manager, cached for `cache_seconds`."""

    def __init__(
        self,
        secret_id: str,
        *,
        client: Any = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        cache_seconds: float = CACHE_SECONDS,
        window: timedelta = ROTATION_WINDOW,
    ) -> None:
        self.secret_id = secret_id
        self._client = client
        self.clock = clock
        self.cache_seconds = cache_seconds
        self.window = window
        self._lock = threading.Lock()
        self._cached: tuple[float, SigningKeys] | None = None

    def _secrets_manager(self) -> Any:
        if self._client is None:
            self._client = aws.client("secretsmanager")
        return self._client

    def _version(self, stage: str) -> dict[str, Any] | None:
        try:
            return self._secrets_manager().get_secret_value(
                SecretId=self.secret_id, VersionStage=stage
            )
        except Exception as error:
            code = getattr(error, "response", {}).get("Error", {}).get("Code")
            if stage == "AWSPREVIOUS" and code == "ResourceNotFoundException":
                return None  # never rotated yet
            raise

    def keys(self) -> SigningKeys:
        cached = self._cached
        if cached is not None and time.monotonic() - cached[0] < self.cache_seconds:
            return cached[1]
        with self._lock:
            current = self._version("AWSCURRENT")
            assert current is not None
            previous = self._version("AWSPREVIOUS")
            keys = SigningKeys(
                current=current["SecretString"],
                previous=previous["SecretString"] if previous else None,
                current_since=_utc(current.get("CreatedDate")),
            )
            self._cached = (time.monotonic(), keys)
            return keys

    def accepted(self) -> list[str]:
        return self.keys().accepted(self.clock(), self.window)

    def secrets(self) -> list[str]:
        """The current secret and the one before, whatever their age: reply keys (mail/threads.py)
        are made with the current one and read with both (a reply may come weeks after its
        email, past the rotation window of sign-in tokens)."""
        keys = self.keys()
        return [keys.current, *([keys.previous] if keys.previous else [])]

    def forget(self) -> None:
        self._cached = None


def _utc(moment: Any) -> datetime | None:
    if not isinstance(moment, datetime):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


_providers: dict[str, Any] = {}
_providers_lock = threading.Lock()


def provider_for(setting: str) -> StaticKeys | SecretsManagerKeys:
    """One provider per AGORA_TOKEN_SECRET value, so its cache lives as long as the process."""
    found = _providers.get(setting)
    if found is not None:
        return found
    with _providers_lock:
        if setting not in _providers:
            if setting.startswith(REFERENCE_PREFIX):
                _providers[setting] = SecretsManagerKeys(setting[len(REFERENCE_PREFIX) :])
            else:
                _providers[setting] = StaticKeys(setting)
        return _providers[setting]


@aws.on_reset
def forget_all() -> None:
    """Read every secret afresh (tests, and `make run` after it moves the endpoint)."""
    with _providers_lock:
        _providers.clear()


# --- tokens --------------------------------------------------------------------------------------


def signing_keys() -> StaticKeys | SecretsManagerKeys:
    """The provider of the signing secret named by AGORA_TOKEN_SECRET (itself, or a Secrets
    Manager reference read at run time: `SecretsManagerKeys`, above; unset, the stage's secret)."""

    return provider_for(get_settings().token_secret_setting)


def _secret() -> str:
    return str(signing_keys().keys().current)


def derived_secret(purpose: str) -> bytes:
    """A key of its own for each other use of the signing secret (feed keys, unsubscribe links),
    so that nothing made for one purpose is ever valid for another."""

    return hmac.new(_secret().encode(), f"agora:{purpose}".encode(), hashlib.sha256).digest()


def issue_token(user_id: str, now: datetime | None = None, version: int = 0) -> str:
    import jwt

    issued = now or datetime.now(UTC)
    claims = {"sub": user_id, "ver": version, "iat": issued, "exp": issued + TOKEN_LIFETIME}
    return jwt.encode(claims, _secret(), algorithm=TOKEN_ALGORITHM)


def user_id_from_token(token: str, keys: StaticKeys | SecretsManagerKeys | None = None) -> str:
    """The user a token was issued to (`token_claims`)."""
    return token_claims(token, keys)[0]


def token_claims(
    token: str, keys: StaticKeys | SecretsManagerKeys | None = None
) -> tuple[str, int]:
    """The user a token was issued to, and the token version it was issued under. Every
    accepted secret is tried (two during a rotation window); `keys` is the provider to ask,
    AGORA_TOKEN_SECRET's by default."""
    import jwt

    accepted = (keys or signing_keys()).accepted()
    for secret in accepted:
        try:
            claims = jwt.decode(
                token, secret, algorithms=[TOKEN_ALGORITHM], options={"require": ["exp", "sub"]}
            )
        except jwt.InvalidSignatureError:
            continue  # perhaps signed with the other secret of a rotation
        except jwt.ExpiredSignatureError:
            raise Unauthorized("The token has expired; sign in again.") from None
        except jwt.PyJWTError:
            break
        version = claims.get("ver", 0)
        return str(claims["sub"]), version if isinstance(version, int) else -1
    raise Unauthorized("The token is not valid; sign in again.")


REST_PREFIX = "/rest/v1/en_US/"


def token_from_headers(headers: Mapping[str, str], path: str) -> str | None:
    """`X-Auth`, `Authorization: Bearer …`, and on /rest/v1/en_US/ also `x-api-auth-key`."""
    token = headers.get("x-auth")
    if token:
        return token.strip()
    authorization = headers.get("authorization", "")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if path.startswith(REST_PREFIX):
        key = headers.get("x-api-auth-key")
        if key:
            return key.strip()
    return None
