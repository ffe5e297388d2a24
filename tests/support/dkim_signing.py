"""DKIM signing for tests and benchmarks: one RSA key made per process, its DNS record, and
mails signed with dkimpy under it (selector `SELECTOR`)."""

from __future__ import annotations

import base64
import functools

SELECTOR = "s2026"


@functools.cache
def key_pair() -> tuple[bytes, str]:
    """(private key PEM, the public key as a DKIM record's p= value)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, base64.b64encode(public).decode()


def dkim_record() -> str:
    """The TXT record to serve at `SELECTOR._domainkey.<domain>`."""
    return f"v=DKIM1; k=rsa; p={key_pair()[1]}"


# The headers a signature must sign for Agora to trust what it reads (every one, once).
SIGNED_HEADERS = ("from", "to", "subject", "date", "message-id", "in-reply-to", "references")


def signed(
    raw: bytes,
    domain: str,
    *,
    length: bool = False,
    headers: tuple[str, ...] = SIGNED_HEADERS,
) -> bytes:
    """`raw` (CRLF line ends) with a DKIM-Signature of `domain` on top, signing `headers` (a
    name twice signs two instances, or the absence of a second), with `l=` when `length`."""
    import dkim

    signature = dkim.sign(
        raw,
        SELECTOR.encode(),
        domain.encode(),
        key_pair()[0],
        include_headers=[name.encode() for name in headers],
        length=length,
    )
    return signature + raw
