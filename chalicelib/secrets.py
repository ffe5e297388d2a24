"""Secrets at rest (POP3 passwords, chat application secrets): encrypted with KMS before storing.

Each ciphertext is bound to where it is stored through the KMS encryption context, so a ciphertext
copied to another item (another group's mailbox) does not decrypt there.
"""

from __future__ import annotations

from collections.abc import Mapping

from chalicelib.aws import client
from chalicelib.settings import get_settings


def encrypt(plaintext: str, context: Mapping[str, str]) -> bytes:
    answer = client("kms").encrypt(
        KeyId=get_settings().kms_key_id,
        Plaintext=plaintext.encode("utf-8"),
        EncryptionContext=dict(context),
    )
    return bytes(answer["CiphertextBlob"])


def decrypt(ciphertext: bytes, context: Mapping[str, str]) -> str:
    # The key is named inside the ciphertext; the context must match the one used to encrypt.
    answer = client("kms").decrypt(CiphertextBlob=ciphertext, EncryptionContext=dict(context))
    return bytes(answer["Plaintext"]).decode("utf-8")
