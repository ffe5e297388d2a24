"""The demo's password hashes for `make run`'s first start: shipped with the demo, made only when
a password has none.

Loading the demo stores its eight passwords as argon2 hashes at the production cost (the demo is
what a user meets, so its accounts are as hard to guess as any): a third of a second of one core
each, the largest part of a first start's CPU. The hashes are therefore shipped beside the demo
fixture (demo/password-hashes.json, written by `python -m agora_local.demo`), each under the
SHA-256 of the password it was made for, so that a hash is used only for exactly that password.
A password the file has no hash for (the demo's passwords were changed), or whose hash was made
at other parameters than production's, is hashed afresh on background threads started before the
embedded AWS (argon2 is C code that releases the GIL), as every password was before.

Every first start of every copy of Agora thus stores the same hashes, salts and all. That is fine:
the demo's passwords are public (demo/community.json, and make run prints the root
administrator's), so a salt protects nothing here; each hash is still a full-cost argon2id hash
of its password, and a password a user sets later is hashed with a salt of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from concurrent.futures import Future
from pathlib import Path
from typing import Any

DEMO_DIR = Path(__file__).resolve().parent.parent / "demo"
DEMO_FIXTURE = DEMO_DIR / "community.json"
# The shipped hashes of the fixture's passwords, beside it.
HASHES_NAME = "password-hashes.json"


def password_key(password: str) -> str:
    """The key of a password's shipped hash: what the hash was made for, without the password."""
    return hashlib.sha256(password.encode("utf-8")).hexdigest()


def fixture_passwords(fixture: dict[str, Any]) -> list[str]:
    return sorted({u["password"] for u in fixture.get("users", []) if u.get("password")})


def shipped_hashes(path: Path) -> dict[str, str]:
    """The hashes shipped in `path` by password key ({} when there is no such file, or it is not
    the document `write_shipped_hashes` writes: the file only saves work, so a damaged one
    means hashing afresh, never a start that fails)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    hashes = data.get("hashes") if isinstance(data, dict) else None
    if not isinstance(hashes, dict):
        return {}
    return {key: value for key, value in hashes.items() if isinstance(value, str)}


def usable_hash(shipped: dict[str, str], password: str) -> str | None:
    """The shipped hash made for exactly `password` at the production parameters, else None.
    (Checking the parameters reads the hash's header; verifying would cost as much as hashing.)"""
    from chalicelib.auth import made_at_current_cost

    found = shipped.get(password_key(password))
    if found is None or not made_at_current_cost(found):
        return None
    return found


class DemoPasswordHashes:
    """The demo fixture's password hashes: the shipped ones, and the others hashed on background
    threads, started before the embedded AWS so that the hashing overlaps the start. `into`
    answers the fixture with each user's password replaced by its hash (the fixture format's
    `passwordHash`), which the load stores as it would have stored its own hash of that
    password."""

    def __init__(self, hashes: dict[str, Future[str]]) -> None:
        self._hashes = hashes

    @classmethod
    def start(
        cls, fixture_path: Path, wanted: bool, hashes_path: Path | None = None
    ) -> DemoPasswordHashes:
        if not wanted:
            return cls({})
        fixture = json.loads(fixture_path.read_text(encoding="utf-8"))
        shipped = shipped_hashes(hashes_path or fixture_path.with_name(HASHES_NAME))
        hashes: dict[str, Future[str]] = {}
        missing = []
        for password in fixture_passwords(fixture):
            found = usable_hash(shipped, password)
            if found is None:
                missing.append(password)
            else:
                hashes[password] = Future()
                hashes[password].set_result(found)
        if missing:
            from concurrent.futures import ThreadPoolExecutor

            from chalicelib.auth import hash_password

            # One core is left to the start itself.
            workers = max(1, min(len(missing), (os.cpu_count() or 2) - 1))
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agora-demo-hash")
            for password in missing:
                hashes[password] = pool.submit(hash_password, password)
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


def write_shipped_hashes(fixture_path: Path, hashes_path: Path) -> list[str]:
    """Write the hashes of the fixture's passwords to `hashes_path`: the shipped hashes still made
    for a password at the production parameters are kept (the file changes only where a password
    or the parameters did), the others made afresh. Answers the passwords hashed afresh."""
    from chalicelib.auth import hash_password

    fixture = json.loads(fixture_path.read_text(encoding="utf-8"))
    shipped = shipped_hashes(hashes_path)
    hashes, made = {}, []
    for password in fixture_passwords(fixture):
        found = usable_hash(shipped, password)
        if found is None:
            found = hash_password(password)
            made.append(password)
        hashes[password_key(password)] = found
    document = {
        "about": (
            f"argon2id hashes, at the production parameters, of the passwords of {fixture_path.name}"
            ", each under the SHA-256 of its password; written by `python -m "
            "agora_local.demo`. make run's first start stores them instead of hashing the "
            "demo's public passwords again (see agora_local/demo.py)."
        ),
        "hashes": dict(sorted(hashes.items())),
    }
    hashes_path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return made


if __name__ == "__main__":
    # python -m agora_local.demo: after a change of the demo's passwords (or of the
    # production parameters), so that make run's first start does not hash them.
    fresh = write_shipped_hashes(DEMO_FIXTURE, DEMO_FIXTURE.with_name(HASHES_NAME))
    print(f"{DEMO_FIXTURE.with_name(HASHES_NAME)}: {len(fresh)} hashed afresh", file=sys.stderr)
