"""`make run`'s data between runs: a snapshot of the embedded AWS in a folder.

moto keeps everything in memory and has no persistence of its own (its recorder replays requests,
which would mint a new KMS key, so stored secrets would no longer decrypt). The snapshot is the
state of every moto backend in use (DynamoDB tables and items, the KMS key with its material, SQS
queues, SES identities, …), pickled whole: restored, it is the same embedded AWS, key ids and all.
It is written on stop (Ctrl-C, SIGTERM) and on a timer, atomically (a crash mid-write keeps the
previous snapshot), and loaded on start. The token secret that `make run` generates lives beside it,
so tokens issued before a restart stay valid.
"""

from __future__ import annotations

import io
import os
import pickle
import secrets
import threading
from pathlib import Path
from typing import Any

SNAPSHOT_NAME = "embedded-aws.pickle"
TOKEN_SECRET_NAME = "token-secret"
# Format of the snapshot file: a snapshot of another format (another moto) is not loaded.
SNAPSHOT_FORMAT = 1


def _rebuild_lock(reentrant: bool) -> Any:
    return threading.RLock() if reentrant else threading.Lock()


def _load_private_key(der: bytes) -> Any:
    from cryptography.hazmat.primitives.serialization import load_der_private_key

    return load_der_private_key(der, password=None)


class _BackendPickler(pickle.Pickler):
    """Pickles moto's backends: their locks become new locks, their asymmetric KMS keys (which
    `cryptography` does not pickle) travel as DER bytes."""

    _LOCK = type(threading.Lock())
    _RLOCK = type(threading.RLock())

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, self._RLOCK):
            return _rebuild_lock, (True,)
        if isinstance(obj, self._LOCK):
            return _rebuild_lock, (False,)
        if hasattr(obj, "private_bytes") and hasattr(obj, "public_key"):
            from cryptography.hazmat.primitives import serialization

            der = obj.private_bytes(
                serialization.Encoding.DER,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            return _load_private_key, (der,)
        return NotImplemented


class LocalSnapshot:
    """The embedded AWS's state in `folder`, saved and restored in the same process as moto."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / SNAPSHOT_NAME
        self._save_lock = threading.Lock()

    def reset(self) -> None:
        """Forget the saved data (`make run RESET=1`), the token secret with it."""
        for name in (SNAPSHOT_NAME, TOKEN_SECRET_NAME):
            (self.folder / name).unlink(missing_ok=True)

    def token_secret(self) -> str:
        """The generated token secret, made once and kept (owner-only) beside the snapshot."""
        path = self.folder / TOKEN_SECRET_NAME
        if path.exists():
            return path.read_text(encoding="utf-8").strip()
        self.folder.mkdir(parents=True, exist_ok=True)
        secret = secrets.token_urlsafe(32)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(secret)
        return secret

    def save(self) -> None:
        """Write the state of every moto backend in use, replacing the last snapshot at once."""
        from moto.core.base_backend import BackendDict

        from chalicelib.embedded_aws import DYNAMODB_LOCK

        with self._save_lock:
            buffer = io.BytesIO()
            # DynamoDB's handler holds this lock per call: the tables are pickled between calls,
            # each call whole. Other services change seldom (a queue message, a KMS call).
            with DYNAMODB_LOCK:
                state = [
                    (backends.service_name, account, region, backend)
                    # moto's registry of backends, a class attribute of a generic class.
                    for backends in list(BackendDict._instances)  # type: ignore[misc]
                    for account, by_region in list(backends.items())
                    for region, backend in list(by_region.items())
                ]
                _BackendPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(
                    (SNAPSHOT_FORMAT, _moto_version(), state)
                )
            self.folder.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(".partial")
            partial.write_bytes(buffer.getvalue())
            os.replace(partial, self.path)

    def restore(self) -> bool:
        """Put the saved state into moto's backends; False when there is none to restore."""
        if not self.path.exists():
            return False
        from moto.backends import get_backend

        snapshot_format, moto_version, state = pickle.loads(self.path.read_bytes())
        if snapshot_format != SNAPSHOT_FORMAT or moto_version != _moto_version():
            raise SnapshotIncompatible(
                f"the data in {self.folder} was saved by another version of the embedded AWS "
                f"(moto {moto_version}); start with `make run RESET=1` (it deletes that data)"
            )
        for service, account, region, backend in state:
            get_backend(service)[account][region] = backend
        return True


class SnapshotIncompatible(Exception):
    """The saved data cannot be restored; the message is the one line the user sees."""


def _moto_version() -> str:
    import moto

    return str(moto.__version__)


class PeriodicSnapshot(threading.Thread):
    """Saves the snapshot every `interval` seconds, so that a crash loses at most that much."""

    def __init__(self, snapshot: LocalSnapshot, interval: float) -> None:
        super().__init__(name="agora-snapshot", daemon=True)
        self.snapshot = snapshot
        self.interval = interval
        self.stopping = threading.Event()

    def run(self) -> None:
        from chalicelib.logs import get_logger

        while not self.stopping.wait(self.interval):
            try:
                self.snapshot.save()
            except Exception:
                # A backend changed while pickled (a dict resized): the next tick tries again.
                get_logger("snapshot").exception("snapshot not written")

    def stop(self) -> None:
        self.stopping.set()
