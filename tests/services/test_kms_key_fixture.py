"""The tests' KMS key (the `kms_key` fixture) under the moto the tests patch
(tests/fixtures.py `share_symmetric_keys_unused_rsa_key`): stored secrets still encrypt and
decrypt under it, each test's key is a new key (id and material), and a key that signs still gets
a private key of its own."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from agora_local.run import ensure_kms_key
from chalicelib import secrets
from chalicelib.aws import client
from chalicelib.settings import get_settings


def moto_kms() -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.kms.models import kms_backends

    return kms_backends[DEFAULT_ACCOUNT_ID][client("kms").meta.region_name]


def test_a_stored_secret_is_encrypted_under_the_tests_key_and_decrypts(kms_key):
    context = {"agora:table": "mailboxes", "agora:scope": "garden"}
    secrets.forget()
    ciphertext = secrets.encrypt("s3cret", context)

    assert b"s3cret" not in ciphertext
    answer = client("kms").decrypt(CiphertextBlob=ciphertext, EncryptionContext=context)
    assert answer["KeyId"].endswith(f"key/{kms_key}")
    assert secrets.decrypt(ciphertext, context) == "s3cret"
    secrets.forget()


def test_the_next_tests_key_is_a_new_key(kms_key):
    first = moto_kms().keys[kms_key]
    first_material = first.key_material
    ciphertext = secrets.encrypt("s3cret", {"agora:scope": "garden"})

    # What the next test's `aws` fixture does to moto's KMS: a fresh backend; then its `kms_key`.
    moto_kms().reset()
    second_id = ensure_kms_key(get_settings().kms_key_id)
    second = moto_kms().keys[second_id]

    assert second_id != kms_key
    assert second.key_material != first_material
    assert second.key_spec == first.key_spec == "SYMMETRIC_DEFAULT"
    # Only the RSA key that neither uses is the same one, made once in this process.
    assert second.private_key is first.private_key
    secrets.forget()
    assert secrets.decrypt(secrets.encrypt("other", {}), {}) == "other"
    # The earlier test's ciphertext names a key this backend does not hold.
    with pytest.raises(ClientError, match="AccessDenied"):
        client("kms").decrypt(
            CiphertextBlob=ciphertext, EncryptionContext={"agora:scope": "garden"}
        )
    secrets.forget()


def test_keys_that_sign_get_private_keys_of_their_own(kms_key):
    kms = client("kms")
    public_keys = set()
    for spec in ("RSA_2048", "RSA_2048", "ECC_NIST_P256"):
        key_id = kms.create_key(KeySpec=spec, KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
        public_keys.add(kms.get_public_key(KeyId=key_id)["PublicKey"])
        signature = kms.sign(
            KeyId=key_id,
            Message=b"m",
            SigningAlgorithm="RSASSA_PSS_SHA_256" if spec.startswith("RSA") else "ECDSA_SHA_256",
        )
        assert kms.verify(
            KeyId=key_id,
            Message=b"m",
            Signature=signature["Signature"],
            SigningAlgorithm=signature["SigningAlgorithm"],
        )["SignatureValid"]
    assert len(public_keys) == 3
