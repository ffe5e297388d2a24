"""What carries a reply back to what it answers, written by the notifications (services/notify)
and read by mail in (services/mail_in): the reply key in the address an instant email is answered
at, and the ids of our own that thread every mail about one post. Both pipelines take them from
here, below them, so neither imports the other.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from urllib.parse import urlsplit

from chalicelib.settings import get_settings

# --- the way back by mail: reply keys (CONTRACT §9, §11) -----------------------------------------
#
# Reply keys (CONTRACT §9, §11), as Discourse's `reply_by_email_address` has them: an instant
# email about a post or comment is answered at `local+KEY@domain`, the email-to-comment mailbox's
# address with a key that names the recipient and what the email was about. A reply that reaches
# the mailbox with a valid key is the recipient's when it comes from their own address, even
# unsigned (only their mailbox received the key), and is refused when it comes from anyone else's.
#
# The key is signed with a key of its own derived from the token secret, and has to survive mail:
# MTAs may lowercase a local part, and a local part holds at most 64 octets (RFC 5321 §4.5.3.1.1).
# So it is base32, lowercase, without padding, at most 50 characters ("replies+" and a key are 58):
#     kind and day (2 bytes: the kind, 2 post or 3 comment, in the top 2 bits; the day it was made,
#                   counted from EPOCH, in the other 14, up to 2070)
#     recipient (5 bytes: an HMAC of the user id, not the id itself: a UUID would not fit)
#     target (the post's id as its 16 UUID bytes, or the comment's id as 8 bytes)
#     signature (8 bytes: HMAC-SHA256 of all the above, cut; each guess costs the guesser a mail)
#
# A key is a way to aim a reply, never a proof of who sent it against DMARC (mail-in checks the
# sender's domain first), and it is read for KEY_LIFETIME from its day: a member's reply shows the
# key in its To, so anyone copied on it could reuse it, for a while only. Keys of the release before
# (kind 1 post or 2 comment in the first byte, a 6-byte recipient, no day) count as made on
# LEGACY_DAY, the day this release was written: they read until 90 days after it, then never.
#
# The signature covers the recipient's fingerprint, so a key is valid or not on its own; whether it
# is the sender's is then a comparison of the sender's fingerprint with the key's. A post id that
# is not a UUID (never one Agora makes, CONTRACT §4) gets no key: its email keeps the plain address.
# The post of a comment is not in its key (it would not fit): mail-in reads it from the comment.

POST, COMMENT = 2, 3  # the kinds of a key with its day
LEGACY_POST, LEGACY_COMMENT = 1, 2  # the first byte of a key of the release before
FINGERPRINT_BYTES = 5
LEGACY_FINGERPRINT_BYTES = 6
SIGNATURE_BYTES = 8
MAX_LOCAL_PART = 64  # octets (RFC 5321 §4.5.3.1.1)
KEY_LIFETIME = timedelta(days=90)
EPOCH = date(2026, 1, 1)
LEGACY_DAY = date(2026, 12, 7)  # keys without a day count as made on it
_KEY = re.compile(r"^[a-z2-7]{37}$|^[a-z2-7]{50}$")


def derived(secret: str) -> bytes:
    """The reply keys' own key: nothing made with the token secret for another purpose (a sign-in
    token, an unsubscribe link) is ever a valid reply key, nor the other way round."""
    return hmac.new(secret.encode(), b"agora:reply-key", hashlib.sha256).digest()


def fingerprint(key: bytes, user_id: str, size: int = FINGERPRINT_BYTES) -> bytes:
    return hmac.new(key, b"user\0" + user_id.encode(), hashlib.sha256).digest()[:size]


def _signature(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, b"key\0" + payload, hashlib.sha256).digest()[:SIGNATURE_BYTES]


@dataclass(frozen=True)
class KeyedReply:
    """What a valid key names: the post (`comment_id` None) or the comment replied to, and whose
    key it is (`is_for`)."""

    post_id: str | None
    comment_id: int | None
    _fingerprint: bytes
    _key: bytes
    made_on: date = LEGACY_DAY

    def is_for(self, user_id: str) -> bool:
        found = fingerprint(self._key, user_id, len(self._fingerprint))
        return hmac.compare_digest(self._fingerprint, found)

    def expired(self, today: date) -> bool:
        """Whether the key is past its KEY_LIFETIME on `today`."""
        return today > self.made_on + KEY_LIFETIME


class ReplyKeys:
    """Makes and reads reply keys. `secrets` answers the token secrets, the current one first
    (a key provider's `secrets`, chalicelib/auth.py: a key made before a rotation still reads
    after it); `clock` the time keys are made and read at (a key names the day it was made, and
    reads for KEY_LIFETIME)."""

    def __init__(
        self, secrets: Callable[[], Sequence[str]], clock: Callable[[], datetime] | None = None
    ) -> None:
        self.secrets = secrets
        self.clock = clock or (lambda: datetime.now(UTC))

    def key(self, user_id: str, post_id: str, comment_id: int | None = None) -> str | None:
        """The key of `user_id`'s email about the post (or the comment); None when the post id
        is not a UUID."""
        if comment_id is not None:
            kind, target = COMMENT, int(comment_id).to_bytes(8, "big")
        else:
            try:
                kind, target = POST, uuid.UUID(post_id).bytes
            except (ValueError, AttributeError, TypeError):
                return None
        day = min(max((self.clock().date() - EPOCH).days, 0), 0x3FFF)
        key = derived(self.secrets()[0])
        payload = (kind << 14 | day).to_bytes(2, "big") + fingerprint(key, user_id) + target
        raw = payload + _signature(key, payload)
        return base64.b32encode(raw).decode("ascii").rstrip("=").lower()

    def address(
        self, mailbox_address: str, user_id: str, post_id: str, comment_id: int | None = None
    ) -> str:
        """`local+KEY@domain` for the mailbox's `local@domain`; the address as it is when no key
        can be made (a post id that is not a UUID, an address without `@`) or when the mailbox's
        local part is so long that with the key it would pass the 64 octets mail allows."""
        local, at, domain = mailbox_address.rpartition("@")
        key = self.key(user_id, post_id, comment_id)
        if not at or not local or key is None or len(f"{local}+{key}".encode()) > MAX_LOCAL_PART:
            return mailbox_address
        return f"{local}+{key}@{domain}"

    def read(self, addresses: Iterable[str], domain: str | None = None) -> KeyedReply | None:
        """The first valid key among the addresses' `+KEY` suffixes (a mail's To, Cc and
        Delivered-To) at `domain` (the mailbox's own; None: any), not expired; None when none
        holds one (a key that does not verify, or has expired, is no key)."""
        secrets = self.secrets()
        today = self.clock().date()
        for address in addresses:
            local, _, at = str(address).rpartition("@")
            if domain is not None and at.lower() != domain.lower():
                continue
            suffix = local.rpartition("+")[2].lower() if "+" in local else ""
            if not _KEY.match(suffix):
                continue
            found = _verified(suffix, [derived(secret) for secret in secrets])
            if found is not None and not found.expired(today):
                return found
        return None


def _verified(suffix: str, keys: list[bytes]) -> KeyedReply | None:
    try:
        raw = base64.b32decode(suffix.upper() + "=" * (-len(suffix) % 8))
    except (binascii.Error, ValueError):
        return None
    # One spelling per key: the last character's unused bits would otherwise let several
    # spellings (a "tampered" key) decode to the same bytes.
    if base64.b32encode(raw).decode("ascii").rstrip("=").lower() != suffix:
        return None
    payload, signature = raw[:-SIGNATURE_BYTES], raw[-SIGNATURE_BYTES:]
    for key in keys:
        if hmac.compare_digest(signature, _signature(key, payload)):
            return _named(payload, key)
    return None


def _named(payload: bytes, key: bytes) -> KeyedReply | None:
    """What a signed payload names: a key with its day, or one of the release before."""
    if payload[0] in (LEGACY_POST, LEGACY_COMMENT):
        kind = POST if payload[0] == LEGACY_POST else COMMENT
        fingerprint_bytes, target = payload[1:7], payload[7:]
        made_on = LEGACY_DAY
    else:
        header = int.from_bytes(payload[:2], "big")
        kind, day = header >> 14, header & 0x3FFF
        fingerprint_bytes, target = payload[2:7], payload[7:]
        made_on = EPOCH + timedelta(days=day)
    if kind == POST and len(target) == 16:
        return KeyedReply(str(uuid.UUID(bytes=target)), None, fingerprint_bytes, key, made_on)
    if kind == COMMENT and len(target) == 8:
        return KeyedReply(None, int.from_bytes(target, "big"), fingerprint_bytes, key, made_on)
    return None


# -----------------------------------------------------------------------------------------------
# Agora's own message ids, which tie every mail about one post into one thread.
#
# SES replaces the `Message-ID` (and `Date`) of what it sends, so no id of a sent mail is ours to
# choose. Each notification instead names, in `References`, ids of the site's own, which never
# belong to a real message:
#
#     <post.{postId}@{host}>                        the post
#     <comment.{commentId}.post.{postId}@{host}>    a comment on it
#
# `{host}` is AGORA_BASE_URL's host. A post's mail references the post; a comment's mail the post,
# then the comment (its `In-Reply-To` is the post). Mail clients thread on `References`, so every
# mail about one post lands in one thread, and a reply carries them back: a mail to the
# email-to-comment mailbox whose `In-Reply-To` or `References` names one of them is a comment on
# that post, or a reply to that comment.


_PART = r"[A-Za-z0-9_-]+"
_POST = re.compile(rf"^post\.({_PART})@(.+)$")
_COMMENT = re.compile(rf"^comment\.(\d+)\.post\.({_PART})@(.+)$")


def post_id_of(post_id: str, host: str) -> str:
    return f"post.{post_id}@{host}"


def comment_id_of(comment_id: int, post_id: str, host: str) -> str:
    return f"comment.{int(comment_id)}.post.{post_id}@{host}"


def thread_ids(post_id: str, comment_id: int | None = None, replied_to: int = 0) -> tuple[str, ...]:
    """Our ids of a mail about the post, or about a comment on it (`replied_to`: the comment it
    answers, 0 for none): the post first, then the comment replied to, then the comment."""
    host = site_host()
    ids = [post_id_of(post_id, host)]
    if comment_id is not None:
        if replied_to:
            ids.append(comment_id_of(replied_to, post_id, host))
        ids.append(comment_id_of(comment_id, post_id, host))
    return tuple(ids)


@dataclass(frozen=True)
class ThreadTarget:
    """What one of our ids names: a post, or a comment on it."""

    post_id: str
    comment_id: int | None = None


def read_id(message_id: str, host: str) -> ThreadTarget | None:
    """The post (or comment) an id of ours names; None for anyone else's id (another host
    included: the host compares without case, as domains do)."""
    value = message_id.strip().strip("<>").strip()
    if match := _COMMENT.match(value):
        comment, post, at = match.groups()
        return ThreadTarget(post, int(comment)) if at.lower() == host.lower() else None
    if match := _POST.match(value):
        post, at = match.groups()
        return ThreadTarget(post) if at.lower() == host.lower() else None
    return None


def reply_targets(
    in_reply_to: str | None, references: Iterable[str], host: str
) -> list[ThreadTarget]:
    """What a reply's headers name, the likeliest first: `In-Reply-To`, then `References` from the
    last (the nearest ancestor) to the first. Each named only once."""
    candidates = [in_reply_to] if in_reply_to else []
    candidates += reversed(list(references))
    found: list[ThreadTarget] = []
    for candidate in candidates:
        target = read_id(candidate, host)
        if target is not None and target not in found:
            found.append(target)
    return found


def site_host() -> str:
    """AGORA_BASE_URL's host: the right-hand side of our ids."""

    return urlsplit(get_settings().public_base_url).hostname or "localhost"
