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
from collections.abc import Mapping

from chalicelib.aws import client
from chalicelib.settings import get_settings

# A container lives a few hours at most; a mailbox is polled every 5 minutes to 6 hours.
KEEP_SECONDS = 6 * 3600.0
# Every mailbox of a large fleet fits (a few hundred bytes each).
MAX_ENTRIES = 20_000

_plaintexts: OrderedDict[tuple[bytes, tuple[tuple[str, str], ...]], tuple[float, str]] = (
    OrderedDict()
)
_lock = threading.Lock()


def encrypt(plaintext: str, context: Mapping[str, str]) -> bytes:
    answer = client("kms").encrypt(
        KeyId=get_settings().kms_key_id,
        Plaintext=plaintext.encode("utf-8"),
        EncryptionContext=dict(context),
    )
    return bytes(answer["CiphertextBlob"])


def decrypt(ciphertext: bytes, context: Mapping[str, str]) -> str:
    key = (bytes(ciphertext), tuple(sorted(context.items())))
    now = time.monotonic()
    with _lock:
        kept = _plaintexts.get(key)
        if kept is not None and kept[0] > now:
            _plaintexts.move_to_end(key)
            return kept[1]
    # The key is named inside the ciphertext; the context must match the one used to encrypt.
    answer = client("kms").decrypt(CiphertextBlob=ciphertext, EncryptionContext=dict(context))
    plaintext = bytes(answer["Plaintext"]).decode("utf-8")
    with _lock:
        _plaintexts[key] = (now + KEEP_SECONDS, plaintext)
        _plaintexts.move_to_end(key)
        while len(_plaintexts) > MAX_ENTRIES:
            _plaintexts.popitem(last=False)
    return plaintext


def forget() -> None:
    """Drop every kept plaintext (tests; a container that must decrypt afresh)."""
    with _lock:
        _plaintexts.clear()
