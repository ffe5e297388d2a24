"""make run's own POP3 mailboxes (agora_local/mailboxes.py): a real Dovecot that `cli deliver`
writes into and POP3 reads from, gone with make run; and without Dovecot, one line saying how to
get it. The whole path through make run is tests/local/test_local.py's tour."""

from __future__ import annotations

import json
import os
import poplib

import pytest

from agora_local.mailboxes import (
    OWNER_FILE,
    RUNTIME_PREFIX,
    Account,
    LocalPop3,
    NoMailboxes,
    dovecot_binary,
    remove_abandoned,
    serve_local_mail,
)
from chalicelib import cli_mail
from tests.support import REPO_ROOT


@pytest.fixture
def binary() -> str:
    found = dovecot_binary()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("Dovecot is required in CI (make test installs it)")
        pytest.skip("needs Dovecot (apt-get install dovecot-pop3d)")
    return found


def test_a_delivered_mail_is_read_over_pop3_and_kept_across_a_stop(tmp_path, binary):
    from tests.support.running import free_port

    # A data folder as deep as a clone under someone's projects folder: Dovecot's sockets
    # (at most 107 bytes a path) must not live under it.
    folder = tmp_path / "home-of-someone" / "projects" / "community-platform-agora" / ".agora-run"
    folder.mkdir(mode=0o700, parents=True)
    accounts = [
        Account("076e75e0-7661-51c5-9ccc-8a2b790e771e", "Gardening Club", "gardening", "pw-one"),
        Account("comments", "email-to-comment", "", "pw-two"),
    ]
    port = free_port()
    server = LocalPop3(folder, port, accounts, binary).start()
    try:
        mail = tmp_path / "m.eml"
        mail.write_bytes(b"From: sam@agora.example\nSubject: Hi\n\nHello\n")
        cli_mail.deliver("gardening", str(mail), folder)
        session = poplib.POP3("127.0.0.1", port, timeout=10)
        try:
            session.user(accounts[0].name)
            session.pass_("pw-one")
            assert session.stat()[0] == 1
            assert b"Subject: Hi" in b"\r\n".join(session.retr(1)[1])
        finally:
            session.quit()
        with pytest.raises(poplib.error_proto):
            other = poplib.POP3("127.0.0.1", port, timeout=10)
            other.user("comments")
            other.pass_("wrong")
        listed = json.loads((folder / cli_mail.MAILBOXES_FILE).read_text())
        assert [m["name"] for m in listed["mailboxes"]] == [a.name for a in accounts]
        assert (folder / cli_mail.MAILBOXES_FILE).stat().st_mode & 0o777 == 0o600
        assert folder.stat().st_mode & 0o777 == 0o700  # Dovecot never needed it opened
    finally:
        server.stop()
    assert server.process is not None and server.process.poll() is not None
    assert not (folder / cli_mail.MAILBOXES_FILE).exists()
    with pytest.raises(OSError):
        poplib.POP3("127.0.0.1", port, timeout=2)
    # The mail not yet taken is in the data folder: the next start serves it again.
    again = LocalPop3(folder, port, accounts, binary).start()
    try:
        session = poplib.POP3("127.0.0.1", port, timeout=10)
        try:
            session.user(accounts[0].name)
            session.pass_("pw-one")
            assert session.stat()[0] == 1
        finally:
            session.quit()
    finally:
        again.stop()
    # Nothing in it is readable by another user: Dovecot's passwd, the mail, its logs.
    assert_private(folder)


def assert_private(folder) -> None:
    """No file other users may read or write and no folder they may open, but Dovecot's empty
    uidvalidity marker (inside `mail/`, which is 700). Its sockets are not in the data folder."""
    import stat

    shared = []
    for path in [folder, *folder.rglob("*")]:
        mode = path.lstat()
        if stat.S_ISSOCK(mode.st_mode) or stat.S_ISLNK(mode.st_mode) or stat.S_ISFIFO(mode.st_mode):
            continue
        if "dovecot-uidvalidity." in path.name:
            continue
        if stat.S_IMODE(mode.st_mode) & 0o077:
            shared.append((str(path.relative_to(folder)), oct(stat.S_IMODE(mode.st_mode))))
    assert shared == [], "\n".join(map(str, shared))
    assert stat.S_IMODE((folder / "mail").stat().st_mode) == 0o700


def test_without_dovecot_make_run_says_how_to_get_it_and_starts_without_mailboxes(tmp_path, capsys):
    served = serve_local_mail(tmp_path, True, REPO_ROOT / "demo" / "community.json", lambda: None)
    assert isinstance(served, NoMailboxes)
    said = capsys.readouterr().out
    assert said.count("\n") == 1
    assert "Dovecot is not installed" in said and "apt-get install dovecot-pop3d" in said
    assert list(tmp_path.iterdir()) == []
    served.stop()


def test_the_folders_of_make_runs_killed_outright_are_removed_and_no_other(tmp_path):
    import subprocess
    import sys

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    folders = {}
    for name, owner in (("gone", gone.stdout.strip()), ("alive", str(os.getpid())), ("odd", "x")):
        folders[name] = tmp_path / f"{RUNTIME_PREFIX}{name}"
        folders[name].mkdir()
        (folders[name] / OWNER_FILE).write_text(owner)
    (tmp_path / "not-ours").mkdir()
    remove_abandoned(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"{RUNTIME_PREFIX}alive", f"{RUNTIME_PREFIX}odd", "not-ours"]
    )
