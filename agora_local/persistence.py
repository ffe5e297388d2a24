"""`make run`'s data between runs: a snapshot of the embedded AWS in a folder.

moto keeps everything in memory and has no persistence of its own (its recorder replays requests,
which would mint a new KMS key, so stored secrets would no longer decrypt). The snapshot is the
state of every moto backend in use (DynamoDB tables and items, the KMS key with its material, SQS
queues, SES identities, …), pickled whole: restored, it is the same embedded AWS, key ids and all.
It is written on stop (Ctrl-C, SIGTERM), on a timer and at a start whose data is not on disk yet
(the demo, a migration's changes, an export loaded), atomically (a crash mid-write keeps the
previous snapshot), and loaded on start; a save of the state already on disk (as restored, or as
last written) writes nothing. The token secret that `make run` generates lives beside it,
so tokens issued before a restart stay valid.

A snapshot holds moto's own objects, so only the moto it was written with can read it. A stop (and
a start that changed what it restored: a migration, an export loaded) therefore also writes the community in the fixture format
of `cli export` beside it (`community.json`); the timer's saves do not: the export reads every
table through the embedded AWS (Scans in the middle of what the API is answering, twice a minute
after any change), while the snapshot is pickled in process, with no request. After a crash the
export is the last stop's, older than the snapshot: the next start sees it and the next stop
writes it again. When a later Agora comes with another moto (or another snapshot format),
`make run` says so in one line and loads that export into the new store instead, setting the old
snapshot aside, rather than starting from the demo. Stored items of an older shape are brought to
the current one by `migrate`, which `make run` runs on every start.

The folder is its owner's alone (700, its files 600, also when they were made otherwise): it
holds the token secret, the password hashes, the KMS key material and the POP3 passwords.
"""

from __future__ import annotations

import io
import os
import pickle
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

SNAPSHOT_NAME = "embedded-aws.pickle"
TOKEN_SECRET_NAME = "token-secret"
EXPORT_NAME = "community.json"
# Format of the snapshot file: a snapshot of another format (another moto) is not loaded.
SNAPSHOT_FORMAT = 1


def _rebuild_lock(reentrant: bool) -> Any:
    return threading.RLock() if reentrant else threading.Lock()


def _load_private_key(der: bytes) -> Any:
    from cryptography.hazmat.primitives.serialization import load_der_private_key

    # The key is one this process's pickler wrote from a key `cryptography` made (and checked)
    # in the owner's private folder, a file trusted as the whole pickle is: checking an RSA key
    # again (50 ms of CPU for each, a make run restart has one) finds nothing new.
    return load_der_private_key(der, password=None, unsafe_skip_rsa_key_validation=True)


# Where make run's modules lived before they left chalicelib (the zip Lambda runs): a snapshot
# saved then names its helpers there.
_MOVED_MODULES = {
    "chalicelib.local_persistence": "agora_local.persistence",
    "chalicelib.embedded_aws": "agora_local.embedded_aws",
    "chalicelib.embedded_aws_answers": "agora_local.embedded_aws_answers",
}


class _SnapshotUnpickler(pickle.Unpickler):
    """Reads a snapshot, this release's or one saved before make run's code moved."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_MOVED_MODULES.get(module, module), name)


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


def export_community(path: Path) -> None:
    """The community as `cli export` writes it, to `path` (owner-only)."""
    from chalicelib import deps
    from chalicelib.cli import write_fixture

    exporter = deps.fixture_exporter()
    with _private_file(path) as out:
        write_fixture(out, exporter.sections(), exporter.home_page, {}, lambda *_: None)


def _private_file(path: Path, binary: bool = False) -> Any:
    """`path` opened for writing, created or truncated with mode 600 whatever it was."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    if binary:
        return os.fdopen(descriptor, "wb")
    return os.fdopen(descriptor, "w", encoding="utf-8")


class LocalSnapshot:
    """The embedded AWS's state in `folder`, saved and restored in the same process as moto;
    `export` writes the community export beside each snapshot (None: no export)."""

    def __init__(
        self, folder: Path, export: Callable[[Path], None] | None = export_community
    ) -> None:
        self.folder = folder
        self.path = folder / SNAPSHOT_NAME
        self.export_path = folder / EXPORT_NAME
        self.export = export
        self._save_lock = threading.Lock()
        # The pickled state this process last wrote (or restored) as the snapshot, and the one
        # the export beside it holds: a save of the same state (an idle timer's, a stop's after
        # it) writes nothing.
        self._written: bytes | None = None
        self._exported: bytes | None = None

    def make_private(self) -> None:
        """The folder 700 and every file in it 600, however they were made (an older release
        made them 755 and 644)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.folder.chmod(0o700)
        for path in self.folder.iterdir():
            if path.is_file() and not path.is_symlink():
                path.chmod(0o600)

    def reset(self) -> list[str]:
        """Forget the saved data (`make run RESET=1`), the token secret with it; answers what
        was deleted, in words."""
        import time

        deleted = []
        for name, what in (
            (SNAPSHOT_NAME, "the data saved at {}"),
            (EXPORT_NAME, "its export"),
            (TOKEN_SECRET_NAME, "the token secret: every token issued is void"),
        ):
            path = self.folder / name
            if path.exists():
                saved = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(path.stat().st_mtime))
                path.unlink()
                deleted.append(f"{what.format(saved)} ({name})")
        return deleted

    def token_secret(self) -> str:
        """The generated token secret, made once and kept (owner-only) beside the snapshot."""
        self.make_private()
        path = self.folder / TOKEN_SECRET_NAME
        if path.exists():
            return path.read_text(encoding="utf-8").strip()
        secret = secrets.token_urlsafe(32)
        with _private_file(path) as file:
            file.write(secret)
        return secret

    def save(self, *, export: bool = True) -> None:
        """Write the state of every moto backend in use, replacing the last snapshot at once;
        then (`export`: a stop's save, a start's) the export beside it. Each is written only
        when the state pickles to other bytes than this process last wrote there (or restored)
        or its file is gone: the export (which reads every table through the embedded AWS) is
        most of a save's cost, so the timer's saves (`export=False`) leave it to the stop."""
        with self._save_lock:
            state_bytes = self._pickled_state()
            if state_bytes != self._written or not self.path.exists():
                self._written = None
                self.make_private()
                partial = self.path.with_suffix(".partial")
                with _private_file(partial, binary=True) as file:
                    file.write(state_bytes)
                os.replace(partial, self.path)
                self._written = state_bytes
            if not export or self.export is None:
                return
            if state_bytes != self._exported or not self.export_path.exists():
                self._exported = None
                # Read through the embedded AWS's server, outside its lock (the reads take it).
                partial_export = self.export_path.with_suffix(".partial")
                self.export(partial_export)
                os.replace(partial_export, self.export_path)
                self._exported = state_bytes

    @staticmethod
    def _pickled_state() -> bytes:
        """The state of every moto backend in use, pickled as a snapshot holds it."""
        from moto.core.base_backend import BackendDict

        from agora_local.embedded_aws import DYNAMODB_LOCK

        buffer = io.BytesIO()
        # DynamoDB's handler holds this lock per call: the tables are pickled between calls, each
        # call whole. Other services change seldom (a queue message, a KMS call).
        with DYNAMODB_LOCK:
            state = [
                (backends.service_name, account, region, backend)
                # moto's registry of backends, a class attribute of a generic class.
                for backends in list(BackendDict._instances)
                for account, by_region in list(backends.items())
                for region, backend in list(by_region.items())
            ]
            # Where the outbox drain got to: every record it names is in the stream pickled here
            # (no record is written while the lock is held), so a restart tells each record after
            # it once and none before it again.
            from chalicelib.store.outbox import drain_position

            checkpoint = drain_position()
            _BackendPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(
                (SNAPSHOT_FORMAT, _moto_version(), state, checkpoint)
            )
        return buffer.getvalue()

    def _export_is_current(self) -> bool:
        """The export beside the snapshot was written after it, as each save writes them: not
        the previous save's export beside a snapshot whose save was cut short (a crash)."""
        if self.export is None:
            return True
        try:
            return self.export_path.stat().st_mtime_ns >= self.path.stat().st_mtime_ns
        except FileNotFoundError:
            return False

    def restore(self) -> bool:
        """Put the saved state into moto's backends; False when there is none to restore.

        A snapshot this moto cannot read raises SnapshotIncompatible; when an export lies beside
        it, the snapshot is first set aside (renamed after its moto) so that the next save does
        not overwrite it, and the error names the export to load instead."""
        self.make_private()
        if not self.path.exists():
            return False
        from moto.backends import get_backend

        # The store here, not at the top: its table models read the settings, and make run
        # imports this module before it has checked them (a bad variable is named in one line).
        from chalicelib.store.outbox import resume_drain, resume_drain_at_end

        try:
            with self.path.open("rb") as file:
                snapshot_format, moto_version, state, *rest = _SnapshotUnpickler(file).load()
        except Exception as error:  # another moto's classes: not even the header can be read
            snapshot_format, moto_version, state = None, f"unreadable: {type(error).__name__}", []
            rest = []
        if snapshot_format != SNAPSHOT_FORMAT or moto_version != _moto_version():
            raise self._incompatible(snapshot_format, moto_version)
        for service, account, region, backend in state:
            get_backend(service)[account][region] = backend
        if rest:
            resume_drain(rest[0])
        else:
            # An older release kept no checkpoint; its drain told the records as they came.
            resume_drain_at_end()
        # What was just restored is on disk as the snapshot, and as the export when that is
        # current: a save of that same state (a stop after a restart that changed nothing) writes
        # neither again. The restored state is pickled afresh (10 ms): its bytes are this
        # process's to compare, not the file's (another process's pickle of the same state may
        # differ).
        with self._save_lock:
            self._written = self._pickled_state()
            self._exported = self._written if self._export_is_current() else None
        return True

    def _incompatible(self, snapshot_format: Any, moto_version: str) -> SnapshotIncompatible:
        saved_by = f"moto {moto_version}, snapshot format {snapshot_format}"
        now = f"moto {_moto_version()}, format {SNAPSHOT_FORMAT}"
        if not self.export_path.exists():
            return SnapshotIncompatible(
                f"the data in {self.folder} was saved by another version of the embedded AWS "
                f"({saved_by}; this one is {now}) and has no export beside it: start the "
                "previous Agora on it and run `python -m chalicelib.cli export FILE` with the "
                "variables it prints, then `make run RESET=1` here and `cli load FILE`",
                export=None,
            )
        aside = self.path.with_name(f"{SNAPSHOT_NAME}.{_safe(moto_version)}")
        os.replace(self.path, aside)
        return SnapshotIncompatible(
            f"the data in {self.folder} was saved by another version of the embedded AWS "
            f"({saved_by}; this one is {now}): loading its export {EXPORT_NAME} instead "
            "(mailbox, feed and newsletter settings and stored passwords are not in it; the "
            f"old snapshot is kept as {aside.name})",
            export=self.export_path,
        )


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in ".-" else "-" for c in text)[:40]


class SnapshotIncompatible(Exception):
    """The saved data cannot be restored; the message is the one line the user sees. `export`:
    the community export to load instead (None: there is none)."""

    def __init__(self, message: str, export: Path | None = None) -> None:
        super().__init__(message)
        self.export = export


def _moto_version() -> str:
    import moto

    return str(moto.__version__)


class PeriodicSnapshot(threading.Thread):
    """Saves the snapshot every `interval` seconds, so that a crash loses at most that much;
    `save_first`: once at once as well (the start's snapshot, taken while the API serves)."""

    def __init__(self, snapshot: LocalSnapshot, interval: float, save_first: bool = False) -> None:
        super().__init__(name="agora-snapshot", daemon=True)
        self.snapshot = snapshot
        self.interval = interval
        self.save_first = save_first
        self.stopping = threading.Event()

    def run(self) -> None:
        if self.save_first and not self.stopping.is_set():
            self._save()
        while not self.stopping.wait(self.interval):
            self._save()

    def _save(self) -> None:
        from chalicelib.logs import get_logger

        try:
            # The snapshot only: the export, which reads every table, is the stop's.
            self.snapshot.save(export=False)
        except Exception:
            # A backend changed while pickled (a dict resized): the next tick tries again.
            get_logger("snapshot").exception("snapshot not written")

    def stop(self) -> None:
        self.stopping.set()
