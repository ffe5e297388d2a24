"""Stored passwords for the tests that guess many times.

A stored argon2 hash carries its own parameters, and a check reads them from it: a hash made at
argon2's lowest cost is checked in microseconds, where the production parameters (64 MiB, three
passes) take about 0.3 s of CPU a check. A throttle test makes dozens of checks, and what it
tests is the counting, not the hash: its account is stored with this hash, through the real
paths (a fixture's or an export's `passwordHash`). What the production parameters are, and that
a password set through the API or the CLI is hashed with them, is tested where it matters
(tests/fast/test_sign_in_rules.py, tests/api/test_security.py)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any


@functools.cache
def cheap_hash(password: str) -> str:
    """`password` as an argon2id hash at the lowest cost argon2 allows."""
    from argon2 import PasswordHasher

    return PasswordHasher(time_cost=1, memory_cost=8, parallelism=1).hash(password)


def guessed_administrator(community: Any, email: str) -> str:
    """The root group's administrator `pw-admin` (password "correct horse", at `email`) for the
    tests that guess its password many times, stored with a cheap hash; its id."""
    community.user(
        "pw-admin",
        {community.root: "administrator"},
        password_hash=cheap_hash("correct horse"),
        email=email,
    )
    community.load()
    return community.users[-1]["id"]


def demo_with_shipped_hashes(folder: Path) -> Path:
    """The demo fixture as `make run` loads it, each password given as its shipped hash
    (demo/password-hashes.json: production-cost argon2id hashes of exactly those passwords), in
    `folder`: a CLI load of it stores the same accounts without eight full-strength hashings
    (2.4 s of CPU a load), for the tests whose subject is not the hashing. A load of the plain
    demo, which hashes, is tests/cli/test_cli.py's."""
    from agora_local.demo import DEMO_FIXTURE, DemoPasswordHashes

    fixture = json.loads(DEMO_FIXTURE.read_text(encoding="utf-8"))
    hashed = DemoPasswordHashes.start(DEMO_FIXTURE, wanted=True).into(fixture)
    path = folder / "demo-with-hashes.json"
    path.write_text(json.dumps(hashed), encoding="utf-8")
    return path
