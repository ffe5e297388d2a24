"""What a taken port is used by (agora_local/folder_lock.py `port_user`), as make run's busy-port
lines say it: read from /proc, one descriptor at a time."""

from __future__ import annotations

import os
import socket

import pytest

from agora_local.folder_lock import LOCK_NAME, lock_data_folder, port_user

pytestmark = pytest.mark.fast


def test_a_port_this_process_listens_on_is_named_with_its_pid():
    """The process reading /proc/PID/fd is one whose descriptors change meanwhile (the listing's
    own closes before it is read): the others, the listening socket among them, still count."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        user = port_user(taken.getsockname()[1])
    assert user is not None and user.startswith(f"pid {os.getpid()} ("), user


def test_a_port_held_by_the_holder_of_a_data_folders_lock_is_that_make_run(tmp_path):
    lock = lock_data_folder(tmp_path)
    try:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            user = port_user(taken.getsockname()[1])
    finally:
        os.close(lock.descriptor)
    assert user == f"make run (pid {os.getpid()}, data folder {tmp_path})"
    assert (tmp_path / LOCK_NAME).exists()


def test_a_port_nobody_listens_on_is_no_ones():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert port_user(port) is None
