"""The demo's password hashes for `make run`'s first start, made beside the start's other work.

Loading the demo hashes its eight passwords with argon2 at the production cost (the demo is what a
user meets, so its accounts are as hard to guess as any): a third of a second of one core each,
most of a first start's time when done one after the other at the end. Argon2 is C code that
releases the GIL, so threads started before the embedded AWS hash while the start goes on.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class DemoPasswordHashes:
    """The demo fixture's passwords hashed on background threads, started before the embedded
    AWS so that the hashing overlaps the start (argon2 releases the GIL). `into` answers the
    fixture with each user's password replaced by its hash (the fixture format's `passwordHash`),
    which the load stores as it would have stored its own hash of that password."""

    def __init__(self, hashes: dict[str, Any]) -> None:
        self._hashes = hashes

    @classmethod
    def start(cls, fixture_path: Path, wanted: bool) -> DemoPasswordHashes:
        if not wanted:
            return cls({})
        from concurrent.futures import ThreadPoolExecutor

        from chalicelib.auth import hash_password

        fixture = json.loads(fixture_path.read_text(encoding="utf-8"))
        passwords = sorted({u["password"] for u in fixture.get("users", []) if u.get("password")})
        # One core is left to the start itself.
        workers = max(1, min(len(passwords), (os.cpu_count() or 2) - 1))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agora-demo-hash")
        hashes = {password: pool.submit(hash_password, password) for password in passwords}
        pool.shutdown(wait=False)
        return cls(hashes)

    def into(self, fixture: dict[str, Any]) -> dict[str, Any]:
        users = []
        for user in fixture.get("users", []):
            found = self._hashes.get(user.get("password"))
            if found is not None:
                user = {k: v for k, v in user.items() if k != "password"}
                user["passwordHash"] = found.result()
            users.append(user)
        return {**fixture, "users": users} if "users" in fixture else fixture
