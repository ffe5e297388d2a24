"""Test environment: set before anything imports `app` (PynamoDB reads table names at import)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Under moto's in-process mock an endpoint variable would send calls past the mock.
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
os.environ["AWS_ACCESS_KEY_ID"] = "testing"
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
os.environ.pop("AWS_PROFILE", None)
os.environ["AGORA_TOKEN_SECRET"] = "test-secret-that-is-long-enough-for-hs256"
os.environ["AGORA_BASE_URL"] = "https://community.example"
os.environ["AGORA_TABLE_PREFIX"] = "agora-test-"
for _name in (
    "AGORA_MAIL_AUTHSERV_ID",
    "AGORA_GAME_LEVEL_BASE",
    "AGORA_GAME_LEVEL_EXPONENT",
    "AGORA_MAIL_SENDER",
    "AGORA_MAIL_ALLOW_PRIVATE_HOSTS",
):
    os.environ.pop(_name, None)

pytest_plugins = ["tests.fixtures"]
