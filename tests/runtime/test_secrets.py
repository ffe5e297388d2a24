"""A warm container decrypts a stored secret once (chalicelib/secrets.py): KMS calls follow
containers, not polls; the plaintext is bound to its ciphertext and context, and kept bounded."""

from __future__ import annotations

import pytest

from chalicelib import secrets


@pytest.fixture
def kms_calls(kms_key):
    from chalicelib.aws import client

    secrets.forget()
    calls: list[str] = []

    def count(**_: object) -> None:
        calls.append("Decrypt")

    kms = client("kms")
    kms.meta.events.register("before-call.kms.Decrypt", count)
    yield calls
    kms.meta.events.unregister("before-call.kms.Decrypt", count)
    secrets.forget()


def test_a_ciphertext_is_decrypted_once_however_often_it_is_read(kms_calls):
    context = {"agora:table": "mailboxes", "agora:scope": "garden"}
    ciphertext = secrets.encrypt("s3cret", context)
    assert [secrets.decrypt(ciphertext, context) for _ in range(5)] == ["s3cret"] * 5
    assert kms_calls == ["Decrypt"]
    # A new password is a new ciphertext: decrypted afresh, never answered from memory.
    changed = secrets.encrypt("changed", context)
    assert secrets.decrypt(changed, context) == "changed"
    assert kms_calls == ["Decrypt", "Decrypt"]


def test_the_kept_plaintext_is_bound_to_its_context(kms_calls):
    context = {"agora:table": "mailboxes", "agora:scope": "garden"}
    ciphertext = secrets.encrypt("s3cret", context)
    assert secrets.decrypt(ciphertext, context) == "s3cret"
    with pytest.raises(Exception, match="InvalidCiphertext"):
        secrets.decrypt(ciphertext, {**context, "agora:scope": "photos"})


@pytest.mark.fast
def test_the_memory_is_bounded_and_expires():
    now = [0.0]
    kept = secrets.Kept(keep_seconds=60, max_entries=2, clock=lambda: now[0])
    for n in range(3):
        kept.put((b"c%d" % n, ()), f"p{n}")
    assert kept.get((b"c0", ())) is None  # the oldest went for the third
    assert kept.get((b"c1", ())) == "p1" and kept.get((b"c2", ())) == "p2"
    now[0] = 61
    assert kept.get((b"c1", ())) is None
