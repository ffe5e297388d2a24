"""make run's AWS key pair: made at random once per data folder and kept there (owner-only), so
that its embedded AWS answers only whoever can read that folder (CONTRACT §2). A real AWS key in
the environment is never used nor printed: the pair replaces it in make run's own process."""

from __future__ import annotations

import json
import os
import secrets
import string
from dataclasses import dataclass
from pathlib import Path

KEY_PAIR_NAME = "aws-key-pair.json"
# Visibly not an AWS key (those start AKIA or ASIA): 20 characters, as AWS's own.
ACCESS_KEY_PREFIX = "AGORALOCAL"
_KEY_ALPHABET = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class KeyPair:
    access_key: str
    secret_key: str

    def environment(self) -> dict[str, str]:
        """The pair as AWS's standard variables."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}

    @classmethod
    def new(cls) -> KeyPair:
        suffix = "".join(secrets.choice(_KEY_ALPHABET) for _ in range(20 - len(ACCESS_KEY_PREFIX)))
        # URL-safe: no `:`, so `ACCESS_KEY:SECRET` stays one HTTP Basic credential.
        return cls(ACCESS_KEY_PREFIX + suffix, secrets.token_urlsafe(30))


def folder_key_pair(folder: Path) -> KeyPair:
    """The data folder's pair, made on its first use. It outlives `make run RESET=1`: a shell
    that holds the printed variables keeps working against the new data."""
    path = folder / KEY_PAIR_NAME
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        return KeyPair(str(stored["accessKeyId"]), str(stored["secretAccessKey"]))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        pass  # none yet, or not one this release wrote: a new pair replaces it
    pair = KeyPair.new()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump({"accessKeyId": pair.access_key, "secretAccessKey": pair.secret_key}, file)
    return pair
