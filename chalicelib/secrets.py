"""Secrets at rest (POP3 passwords, chat application secrets): encrypted with KMS before storing.

Each ciphertext is bound to where it is stored through the KMS encryption context, so a ciphertext
copied to another item (another group's mailbox) does not decrypt there.

A warm container decrypts a ciphertext once: the plaintext is kept in memory, keyed by the
ciphertext and its context, for `KEEP_SECONDS` and at most `MAX_ENTRIES` of them (the oldest go
first), so KMS calls follow containers, not polls. A new password is a new ciphertext, so nothing
stale is ever answered; the expiry only bounds how long a plaintext stays in memory.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

from chalicelib.aws import client
from chalicelib.settings import get_settings

# A container lives a few hours at most; a mailbox is polled every 5 minutes to 6 hours.
KEEP_SECONDS = 6 * 3600.0
# Every mailbox of a large fleet fits (a few hundred bytes each).
MAX_ENTRIES = 20_000

Key = tuple[bytes, tuple[tuple[str, str], ...]]


class Kept:
    """Plaintexts by (ciphertext, context), each for `keep_seconds`, at most `max_entries` of
    them (the least recently used go first); thread-safe (a poll's mailboxes run in threads)."""

    def __init__(
        self, keep_seconds: float, max_entries: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.keep_seconds, self.max_entries, self.clock = keep_seconds, max_entries, clock
        self._entries: OrderedDict[Key, tuple[float, str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Key) -> str | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            if found[0] <= self.clock():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return found[1]

    def put(self, key: Key, plaintext: str) -> None:
        with self._lock:
            self._entries[key] = (self.clock() + self.keep_seconds, plaintext)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_kept = Kept(KEEP_SECONDS, MAX_ENTRIES)


def encrypt(plaintext: str, context: Mapping[str, str]) -> bytes:
    answer = client("kms").encrypt(
        KeyId=get_settings().kms_key_id,
        Plaintext=plaintext.encode("utf-8"),
        EncryptionContext=dict(context),
    )
    return bytes(answer["CiphertextBlob"])


def decrypt(ciphertext: bytes, context: Mapping[str, str]) -> str:
    key = (bytes(ciphertext), tuple(sorted(context.items())))
    kept = _kept.get(key)
    if kept is not None:
        return kept
    # The key is named inside the ciphertext; the context must match the one used to encrypt.
    answer = client("kms").decrypt(CiphertextBlob=ciphertext, EncryptionContext=dict(context))
    plaintext = bytes(answer["Plaintext"]).decode("utf-8")
    _kept.put(key, plaintext)
    return plaintext


def forget() -> None:
    """Drop every kept plaintext (tests; a container that must decrypt afresh)."""
    _kept.clear()
