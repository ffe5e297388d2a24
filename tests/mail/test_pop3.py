"""The POP3 client against a real Dovecot, over plain POP3 and POP3S."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from chalicelib.mail.pop3 import MailboxError, MessageTooLarge, Pop3Mailbox, open_pop3
from tests.mail.conftest import Mailbox

if TYPE_CHECKING:
    from chalicelib.mail.hosts import HostPolicy
    from chalicelib.mail.pop3 import Pop3Server

# Starts a real Dovecot (see tests/support/dovecot.py).
pytestmark = pytest.mark.slow

FIRST = b"From: a@example.com\r\nSubject: one\r\n\r\nfirst body\r\n"
SECOND = b"From: b@example.com\nSubject: two\n\n.leading dot survives\nsecond body\n"


def open_mailbox(mailbox: Mailbox, *, is_ssl: bool, password: str | None = None) -> Pop3Mailbox:
    server = mailbox.server
    return Pop3Mailbox(
        server.host,
        server.pop3s_port if is_ssl else server.pop3_port,
        mailbox.user,
        mailbox.password if password is None else password,
        is_ssl=is_ssl,
        connect_timeout=5,
        read_timeout=10,
    )


def open_by_name(mailbox: Mailbox, host: str, hosts: HostPolicy) -> Pop3Server:
    """Mail in's own opener on `mailbox`, named `host`: a name that `hosts`, the policy checking
    it, resolves."""
    return open_pop3(replace(mailbox.connector("system"), server_name=host), hosts)


@pytest.fixture(params=[False, True], ids=["pop3", "pop3s"])
def is_ssl(request: pytest.FixtureRequest, trust_dovecot_cert: None) -> bool:
    return bool(request.param)


def test_listing_gives_sizes_of_delivered_mails(mailbox: Mailbox, is_ssl: bool) -> None:
    stored = [mailbox.deliver(FIRST), mailbox.deliver(SECOND)]

    with open_mailbox(mailbox, is_ssl=is_ssl) as pop3:
        listing = pop3.listing()

    assert sorted(listing.values()) == sorted(len(raw) for raw in stored)
    assert sorted(listing) == [1, 2]


def test_retrieve_returns_the_delivered_bytes(mailbox: Mailbox, is_ssl: bool) -> None:
    stored = {mailbox.deliver(FIRST), mailbox.deliver(SECOND)}

    with open_mailbox(mailbox, is_ssl=is_ssl) as pop3:
        retrieved = {pop3.retrieve(number) for number in pop3.listing()}

    assert retrieved == stored


def test_uidls_are_stable_across_sessions(mailbox: Mailbox, is_ssl: bool) -> None:
    mailbox.deliver(FIRST)
    mailbox.deliver(SECOND)

    with open_mailbox(mailbox, is_ssl=is_ssl) as pop3:
        first_session = pop3.uidls()
    with open_mailbox(mailbox, is_ssl=is_ssl) as pop3:
        second_session = pop3.uidls()

    assert first_session == second_session
    assert len(set(first_session.values())) == 2


def test_delete_then_quit_removes_the_mail(mailbox: Mailbox, is_ssl: bool) -> None:
    mailbox.deliver(FIRST)
    kept = mailbox.deliver(SECOND)

    pop3 = open_mailbox(mailbox, is_ssl=is_ssl)
    first_number = next(n for n in pop3.listing() if pop3.retrieve(n) != kept)
    pop3.delete(first_number)
    pop3.quit()

    assert mailbox.count() == 1
    with open_mailbox(mailbox, is_ssl=is_ssl) as pop3:
        assert [pop3.retrieve(n) for n in pop3.listing()] == [kept]


def test_delete_without_quit_keeps_the_mail(mailbox: Mailbox) -> None:
    mailbox.deliver(FIRST)

    with pytest.raises(RuntimeError), open_mailbox(mailbox, is_ssl=False) as pop3:
        pop3.delete(1)
        raise RuntimeError("processing failed before the result was stored")

    assert mailbox.count() == 1


def test_wrong_password_raises_mailbox_error_without_the_password(
    mailbox: Mailbox, is_ssl: bool
) -> None:
    wrong_password = "Wr0ng-Secret-Value"

    with pytest.raises(MailboxError) as raised:
        open_mailbox(mailbox, is_ssl=is_ssl, password=wrong_password)

    message = str(raised.value)
    assert "log in" in message
    assert mailbox.user in message
    assert wrong_password not in message
    assert mailbox.password not in message


def test_tls_fails_when_the_certificate_is_not_trusted(
    mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # An empty trust store: the server's self-signed certificate is not in it.
    empty_store = tmp_path_factory.mktemp("ca") / "empty.pem"
    empty_store.write_text("")
    monkeypatch.setenv("SSL_CERT_FILE", str(empty_store))
    monkeypatch.setenv("SSL_CERT_DIR", str(empty_store.parent))

    with pytest.raises(MailboxError) as raised:
        open_mailbox(mailbox, is_ssl=True)

    assert "TLS failed" in str(raised.value)
    assert mailbox.password not in str(raised.value)


def test_unreachable_server_raises_mailbox_error(mailbox: Mailbox) -> None:
    with pytest.raises(MailboxError, match="cannot connect"):
        Pop3Mailbox("127.0.0.1", 1, mailbox.user, mailbox.password, is_ssl=False)


LONG = (
    b"From: a@example.com\r\nSubject: long\r\n\r\n"
    + b"x" * 3000
    + b"\r\n."
    + b"y" * 2_000_000
    + b"\r\n"
)


def test_retrieve_reads_lines_longer_than_poplib_allows(mailbox: Mailbox) -> None:
    # poplib's own RETR refuses lines over 2,048 bytes and leaves the session mid-message.
    stored = mailbox.deliver(LONG)
    mailbox.deliver(FIRST)

    with open_mailbox(mailbox, is_ssl=False) as pop3:
        assert pop3.retrieve(1) == stored
        assert pop3.is_usable and pop3.retrieve(2).endswith(b"first body\r\n")


def test_a_message_over_the_limit_is_refused_and_the_session_goes_on(mailbox: Mailbox) -> None:
    mailbox.deliver(LONG)
    second = mailbox.deliver(FIRST)

    with open_mailbox(mailbox, is_ssl=False) as pop3:
        with pytest.raises(MessageTooLarge):
            pop3.retrieve(1, max_bytes=10_000)
        assert pop3.is_usable and pop3.retrieve(2) == second


# --- why a mailbox could not be reached (lastError, the MailboxPollFailed metric's Reason) ------


def _failure(host: str, port: int, user: str, password: str, *, is_ssl: bool) -> MailboxError:
    with pytest.raises(MailboxError) as raised:
        Pop3Mailbox(host, port, user, password, is_ssl=is_ssl, connect_timeout=5, read_timeout=5)
    return raised.value


def test_each_way_of_not_reaching_a_mailbox_has_its_reason(
    mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.running import free_port

    server = mailbox.server
    wrong = "wrong-" + mailbox.password
    login = _failure(server.host, server.pop3_port, mailbox.user, wrong, is_ssl=False)
    assert login.reason == "login" and wrong not in str(login)
    refused = _failure(server.host, free_port(), mailbox.user, mailbox.password, is_ssl=False)
    assert refused.reason == "connection"
    # The test server's self-signed certificate, not trusted here.
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent")
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    tls = _failure(server.host, server.pop3s_port, mailbox.user, mailbox.password, is_ssl=True)
    assert tls.reason == "tls"
    unknown = _failure("no-such-host.invalid", 110, mailbox.user, mailbox.password, is_ssl=False)
    assert unknown.reason == "dns"


@pytest.mark.fast
def test_last_error_is_plain_words_and_never_the_password() -> None:
    from chalicelib.services.mailboxes import Mailbox as Settings
    from chalicelib.services.mailboxes import poll_failure

    box = Settings("g", "emailToPost", "pop.example.org", 110, "ann", password="s3cret-Pass")
    # A server that echoes what it was sent in its refusal.
    echoed = MailboxError(
        "pop3://ann@pop.example.org:110: -ERR bad PASS s3cret-Pass", reason="login"
    )
    reason, message = poll_failure(echoed, box)
    assert reason == "login" and "s3cret-Pass" not in message
    assert message.startswith("The mail server refused the user name or password.")
    reason, message = poll_failure(RuntimeError("DynamoDB said no"), box)
    assert reason == "other" and "DynamoDB" not in message


def test_the_connection_goes_to_the_address_the_policy_checked(mailbox: Mailbox) -> None:
    from chalicelib.mail.hosts import HostPolicy

    # A name no DNS knows: only the checked address can have been connected to.
    hosts = HostPolicy(True, lambda host, port: ["127.0.0.1"])
    with open_by_name(mailbox, "pop.only-in-this-test.example", hosts) as pop3:
        assert pop3.listing() == {}


def test_a_name_resolving_to_a_private_address_at_connect_time_is_refused(
    mailbox: Mailbox,
) -> None:
    from chalicelib.mail.hosts import HostPolicy

    hosts = HostPolicy(False, lambda host, port: ["127.0.0.1"])
    with pytest.raises(MailboxError, match="refused: .*resolves to 127.0.0.1") as raised:
        open_by_name(mailbox, "pop.rebound.example", hosts)
    assert mailbox.password not in str(raised.value)


def test_a_server_that_does_not_greet_as_pop3_is_named_so_and_its_banner_is_not_repeated() -> None:
    """An SSH server's banner must not reach lastError: the settings page would be a banner
    grabber for whatever the host runs."""
    import socket
    import threading

    from chalicelib.services.mailboxes import poll_failure

    banner = b"SSH-2.0-OpenSSH_9.6 internal-banner-of-the-host\r\n"
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def greet() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.sendall(banner)
            connection.recv(100)

    server = threading.Thread(target=greet, daemon=True)
    server.start()
    try:
        with pytest.raises(MailboxError) as raised:
            Pop3Mailbox("127.0.0.1", port, "user", "password", is_ssl=False)
    finally:
        listener.close()
    assert "did not answer as a POP3 server" in str(raised.value)
    assert "SSH" not in str(raised.value) and "banner" not in str(raised.value)
    _, message = poll_failure(raised.value, None)
    assert "SSH" not in message and "did not answer as a POP3 server" in message
