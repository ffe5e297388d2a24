"""One `make run` per data folder, and what a busy port is used by.

The data folder's `make-run.lock` is held (flock) by the make run using the folder, for as long
as its process lives: the kernel releases it however that process ends, `kill -9` included, so a
lock left by a killed run is never in the way. The file says who holds it (`running PID`) and,
once a stop has saved everything, `stopped`: a start that finds `running` in a lock it could take
knows the last run did not stop cleanly.

A second make run on a folder in use refuses to start and names the first (two processes saving
one folder overwrite each other's changes). A port that is taken is named with what holds it
(read from /proc on Linux): the make run on that folder when it is ours.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

LOCK_NAME = "make-run.lock"
RUNNING = "running"
STOPPED = "stopped"


class FolderInUse(Exception):
    """Another make run uses the data folder; the message is the one line the user sees."""


@dataclass
class FolderLock:
    """The held lock of a data folder; `previous`: what the file said when it was taken
    (`running PID` after a run that did not stop cleanly, `stopped`, or "" for a new folder)."""

    folder: Path
    descriptor: int
    previous: str

    @property
    def unclean(self) -> bool:
        return self.previous.startswith(RUNNING)

    def stopped(self) -> None:
        """Everything is saved: the next start finds a clean stop."""
        self._write(f"{STOPPED}\n")

    def put_back(self) -> None:
        """What the file said before this run took it (a start that failed served nothing)."""
        self._write(f"{self.previous}\n" if self.previous else "")

    def _write(self, text: str) -> None:
        os.ftruncate(self.descriptor, 0)
        os.pwrite(self.descriptor, text.encode(), 0)
        os.fsync(self.descriptor)


def lock_data_folder(folder: Path) -> FolderLock:
    """Take `folder`'s lock for this process, or raise FolderInUse naming the make run that
    holds it."""
    path = folder / LOCK_NAME
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.fchmod(descriptor, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _read(descriptor).removeprefix(RUNNING).strip() or "unknown"
        os.close(descriptor)
        raise FolderInUse(
            f"make run: make run is already running on {folder} (pid {holder}); stop it "
            f"first (Ctrl-C in its terminal, or kill {holder}), or give this one another "
            "AGORA_DATA_DIR and other ports"
        ) from None
    lock = FolderLock(folder, descriptor, _read(descriptor))
    lock._write(f"{RUNNING} {os.getpid()}\n")
    return lock


def _read(descriptor: int) -> str:
    return os.pread(descriptor, 200, 0).decode(errors="replace").strip()


def port_user(port: int) -> str | None:
    """What listens on the loopback `port`, in words: `make run (pid N, data folder F)` when a
    make run holds it, else `pid N (command)`; None when it cannot be told (another user's
    process, no /proc)."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    for pid in _pids():
        links = _open_files(pid)
        if not any(link in inodes for link in links):
            continue
        folders = [link for link in links if link.endswith(f"/{LOCK_NAME}")]
        if folders:
            return f"make run (pid {pid}, data folder {Path(folders[0]).parent})"
        return f"pid {pid} ({_command(pid)})"
    return None


def _open_files(pid: int) -> list[str]:
    """What `pid`'s descriptors point at. Each is read on its own: a process at work closes
    some between the listing and the reading (the listing's own, when `pid` is this process),
    and one gone must not hide the others (the listening socket among them)."""
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    links = []
    for fd in descriptors:
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    return links


def _listening_inodes(port: int) -> set[str]:
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # local address `HEX:PORT`, state 0A: LISTEN
            if len(fields) > 9 and fields[3] == "0A" and fields[1].endswith(f":{port:04X}"):
                found.add(f"socket:[{fields[9]}]")
    return found


def _pids() -> list[int]:
    try:
        return sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return []


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)[:120]
