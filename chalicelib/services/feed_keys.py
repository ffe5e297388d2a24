"""Feed keys (CONTRACT §10): what a feed reader or calendar app sends instead of a sign-in token.

A user's key is made on first GET and stays the same until revoked (DELETE); a new GET then makes a
new one. The key is derived from a stored random nonce with a server-held secret, and only its
SHA-256 is stored for the lookup (store/feed_keys.py). `?key=` makes the request the key's user:
the feed is served if that user may enter the group, like a signed-in member.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from datetime import datetime

from chalicelib.auth import Caller, derived_secret
from chalicelib.domain import audit
from chalicelib.domain.ports.people import FeedKeyStore, GroupStore, UserReader
from chalicelib.domain.users import FeedKey
from chalicelib.errors import Forbidden, Unauthorized
from chalicelib.schemas.feed_keys import FeedKeyOut

# Long enough that guessing is hopeless, short enough for a URL.
NONCE_BYTES = 24


def key_of(user_id: str, nonce: str) -> str:
    digest = hmac.new(
        derived_secret("feed-key"), f"{user_id}\0{nonce}".encode(), hashlib.sha256
    ).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def hash_of(key: str) -> str:
    # The key is 256 random-looking bits: a plain hash is as strong as a slow one here.
    return hashlib.sha256(key.encode()).hexdigest()


class FeedKeyService:
    def __init__(
        self,
        keys: FeedKeyStore,
        users: UserReader,
        groups: GroupStore,
        clock: Callable[[], datetime],
    ) -> None:
        self.keys = keys
        self.users = users
        self.groups = groups
        self.clock = clock

    @staticmethod
    def require_self(caller: Caller, user_id: str) -> None:
        if caller.user_id != user_id:
            raise Forbidden("A feed key is shown only to its own user.")

    def get(self, user_id: str) -> FeedKeyOut:
        """The user's key, made now if the user has none."""
        for _ in range(3):
            record = self.keys.of_user(user_id)
            if record is not None:
                return self._out(user_id, record.nonce, record.created_on)
            nonce = secrets.token_urlsafe(NONCE_BYTES)
            now = self.clock()
            made = audit.entry(
                "feedKey.create",
                target=("feedKey", user_id),
                group_id=None,
                before={"key": None},
                after={"key": nonce},
                secrets={"key"},
                at=now,
            )
            made_key = FeedKey(user_id, nonce, hash_of(key_of(user_id, nonce)), now)
            if self.keys.create(made_key, audit=made):
                return self._out(user_id, nonce, now)
        raise RuntimeError("the feed key kept changing while it was made")

    def revoke(self, user_id: str) -> bool:
        """Forget the user's key; False when there was none (revoking is idempotent)."""
        record = self.keys.of_user(user_id)
        if record is None:
            return False
        revoked = audit.entry(
            "feedKey.revoke",
            target=("feedKey", user_id),
            group_id=None,
            before={"key": record.nonce},
            after={"key": None},
            secrets={"key"},
        )
        self.keys.delete(record, audit=revoked)
        return True

    def caller_for(self, key: str) -> Caller:
        """The key's user as a caller; 401 for a wrong or revoked key."""
        user_id = self.keys.user_of(hash_of(key.strip())) if key.strip() else None
        user = self.users.get(user_id) if user_id else None
        if user is None:
            raise Unauthorized("The feed key is not valid; it may have been revoked.")
        return Caller.of(user, self.groups.root_id())

    @staticmethod
    def _out(user_id: str, nonce: str, created_on: datetime) -> FeedKeyOut:
        return FeedKeyOut(user_id=user_id, key=key_of(user_id, nonce), created_on=created_on)
