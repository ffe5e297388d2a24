"""Helpers shared by test packages: where the repository and the shared mail corpus are."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agora_local.key_pair import KeyPair

REPO_ROOT = Path(__file__).resolve().parents[2]

# The moment the rule tests that need one stand at: Saturday 21 November 2026, 10:00 UTC.
NOW = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def mail_corpus_dir() -> Path:
    """The Discourse mail corpus, read in place from shared/ next to the repository.

    It is GPL test data, so it is never copied into this repository; tests skip without it.
    `AGORA_MAIL_CORPUS_DIR` points elsewhere (a worktree that is not next to shared/).
    """
    if os.environ.get("AGORA_MAIL_CORPUS_DIR"):
        return Path(os.environ["AGORA_MAIL_CORPUS_DIR"])
    return REPO_ROOT.parent / "shared" / "mail-corpus" / "discourse"


def mail_corpus_files() -> list[Path]:
    folder = mail_corpus_dir()
    return sorted(folder.glob("*.eml")) if folder.is_dir() else []


def suite_key_pair() -> KeyPair:
    """The key pair the suite's AWS clients sign with (tests/conftest.py sets it in the
    environment): an embedded AWS a test starts answers only requests signed with it."""
    return KeyPair(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"])


# A scratch table keyed by two strings, `pk` (hash) and `sk` (range), billed per request.
PK_SK_KEY_SCHEMA = [
    {"AttributeName": "pk", "KeyType": "HASH"},
    {"AttributeName": "sk", "KeyType": "RANGE"},
]
PK_SK_ATTRIBUTES = [
    {"AttributeName": "pk", "AttributeType": "S"},
    {"AttributeName": "sk", "AttributeType": "S"},
]


def create_pk_sk_table(dynamodb: Any, name: str) -> None:
    dynamodb.create_table(
        TableName=name,
        KeySchema=PK_SK_KEY_SCHEMA,
        AttributeDefinitions=PK_SK_ATTRIBUTES,
        BillingMode="PAY_PER_REQUEST",
    )
