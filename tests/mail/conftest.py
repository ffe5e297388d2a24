"""Fixtures for mail-in tests: a real Dovecot (session-wide), fresh mailboxes, the corpus."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support import mail_corpus_dir
from tests.support.dovecot import Dovecot, DovecotUnavailable
from tests.support.dovecot import DovecotMailbox as Mailbox

if TYPE_CHECKING:
    pass

MESSAGES_DIR = Path(__file__).parent / "messages"


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Dovecot]:
    try:
        server = Dovecot()
    except DovecotUnavailable as reason:
        # In CI the Makefile installs Dovecot, so its absence is a broken setup, not a skip.
        if os.environ.get("CI"):
            pytest.fail(f"Dovecot is required in CI: {reason}")
        pytest.skip(f"needs a local Dovecot: {reason}")
    with server:
        yield server


@pytest.fixture
def mailbox(dovecot: Dovecot, private_mail_hosts: None) -> Mailbox:
    """A new, empty mailbox user per test, so tests never see each other's mail. The test
    Dovecot listens on loopback: these tests allow private POP3 hosts."""
    user = f"box{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(12)
    dovecot.add_user(user, password)
    return Mailbox(server=dovecot, user=user, password=password)


@pytest.fixture
def trust_dovecot_cert(dovecot: Dovecot, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `ssl.create_default_context()` trust the test server's self-signed certificate."""
    monkeypatch.setenv("SSL_CERT_FILE", str(dovecot.cert_path))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


@pytest.fixture
def corpus_dir() -> Path:
    folder = mail_corpus_dir()
    if not folder.is_dir():
        pytest.skip(f"mail corpus not found at {folder} (shared/ is not next to the repository)")
    return folder


def message_bytes(name: str) -> bytes:
    """One of our own test mails in tests/mail/messages/."""
    return (MESSAGES_DIR / name).read_bytes()
