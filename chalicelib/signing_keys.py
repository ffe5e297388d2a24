"""The secret that signs access tokens, and its rotation.

AGORA_TOKEN_SECRET is either the secret itself (`make run`, tests) or, in AWS,
`secretsmanager:<secret id>`: the secret is then read from Secrets Manager at run time and kept
for a few minutes, never placed in the function's environment. Rotating it needs no redeploy:

- tokens are signed with the version labelled AWSCURRENT;
- the version labelled AWSPREVIOUS is still accepted while the current one is younger than
  ROTATION_WINDOW (a token's lifetime plus the cache time), so nobody is signed out by a rotation;
- after the window only the current version is accepted. (To cut off a leaked secret at once,
  rotate twice: the leaked version then has no label.)

Why not Powertools Parameters (`SecretsProvider`): its cache is keyed by the secret's name, not
by the version stage, so AWSCURRENT and AWSPREVIOUS would overwrite each other; and it answers
the secret string only, while the rotation window needs the current version's CreatedDate. The
cache here is the few lines of `SecretsManagerKeys.keys`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from chalicelib import aws

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
