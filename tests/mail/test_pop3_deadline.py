"""One deadline for a whole POP3 session (chalicelib/mail/pop3.py, SESSION_SECONDS): a server that
sends a byte now and then never trips the per-read timeout, and held a poll (and the mailboxes
polled beside it) until Lambda killed the function. Tried against a tiny local server that
trickles its answers; the session ends at its deadline and the mailbox's lastError says why."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Self

import pytest

from chalicelib import deps
from chalicelib.jobs.base import Deadline
from chalicelib.jobs.mail_poll import LEASE, POLL_SECONDS, MailPoll, poll_mailbox
from chalicelib.mail.hosts import HostPolicy
from chalicelib.mail.pop3 import (
    DEFAULT_CONNECT_TIMEOUT_SECONDS,
    SESSION_SECONDS,
    MailboxError,
    MailSession,
    Pop3Mailbox,
    RunEnding,
    SessionExpired,
    open_pop3,
    run_ending_at,
)
from chalicelib.services.mailboxes import EMAIL_TO_POST, Mailbox
from tests.mail.test_ingest import FakeDirectory

KEY = "post#garden"
# How long the test server trickles at most, so that a client without a session deadline ends
# (with another error) instead of hanging the suite.
TRICKLE_LIMIT_SECONDS = 8.0
SESSION = 1.0  # the deadline the tests give a session
# A Lambda run's time left when a poll starts, and its deadline's margin (Deadline.margin_ms):
# the poll must be recorded between the deadline and the run's end, a second either way.
RUN_SECONDS = 4.0
RUN_MARGIN_MS = 2000


class LoopbackServer:
    """A server on a loopback port, serving one connection (`_serve`) in a thread until the test
    ends: `with` starts it, and its end stops it and waits `join_seconds` for its thread."""

    join_seconds = 5.0

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self.listener.close()
        self._thread.join(timeout=self.join_seconds)

    def _serve(self) -> None:
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return  # the test ended first
        with connection:
            self._handle(connection)

    def _handle(self, connection: socket.socket) -> None:
        raise NotImplementedError


class TricklingServer(LoopbackServer):
    """POP3 on loopback: greets and takes USER and PASS at once (or trickles its greeting), then
    answers any other command one byte every `interval` seconds, a line that never ends."""

    join_seconds = TRICKLE_LIMIT_SECONDS + 2

    def __init__(self, *, trickle_greeting: bool = False, interval: float = 0.2) -> None:
        self.trickle_greeting = trickle_greeting
        self.interval = interval
        super().__init__()

    def _handle(self, connection: socket.socket) -> None:
        try:
            self._talk(connection)
        except OSError:
            pass  # the client dropped the connection

    def _talk(self, connection: socket.socket) -> None:
        if self.trickle_greeting:
            self._trickle(connection, b"+OK ")
            return
        connection.sendall(b"+OK ready\r\n")
        for line in connection.makefile("rb"):
            if line.upper().startswith((b"USER", b"PASS")):
                connection.sendall(b"+OK\r\n")
            else:
                self._trickle(connection, b"+OK ")
                return

    def _trickle(self, connection: socket.socket, start: bytes) -> None:
        connection.sendall(start)
        ends = time.monotonic() + TRICKLE_LIMIT_SECONDS
        while time.monotonic() < ends and not self._stop.wait(self.interval):
            connection.sendall(b"x")


@pytest.fixture
def trickling() -> Iterator[TricklingServer]:
    with TricklingServer() as server:
        yield server


def open_trickling(port: int) -> Pop3Mailbox:
    return Pop3Mailbox(
        "127.0.0.1", port, "garden", "secret", is_ssl=False, read_timeout=5, session_seconds=SESSION
    )


def test_a_command_answered_a_byte_at_a_time_ends_at_the_session_deadline(trickling):
    mailbox = open_trickling(trickling.port)

    with pytest.raises(SessionExpired) as raised:
        mailbox.listing()

    assert raised.value.reason == "timeout"
    assert str(raised.value) == (
        f"pop3://garden@127.0.0.1:{trickling.port}: the session went on longer than 1 seconds "
        "(LIST was not done); the rest of the mail waits for the next poll"
    )
    assert not mailbox.is_usable


def test_a_greeting_sent_a_byte_at_a_time_ends_at_the_session_deadline():
    with TricklingServer(trickle_greeting=True) as server:
        with pytest.raises(SessionExpired, match=r"longer than 1 seconds \(connecting was not"):
            open_trickling(server.port)


def garden_mailbox(host: str, port: int, *, is_ssl: bool) -> tuple[Mailbox, FakeDirectory]:
    """The garden's email-to-post connector on `host`, and a directory holding it alone."""
    box = Mailbox(
        scope="garden",
        kind=EMAIL_TO_POST,
        server_name=host,
        server_port=port,
        server_username="garden",
        has_password=True,
        password="secret",
        is_ssl=is_ssl,
    )
    return box, FakeDirectory({KEY: box})


def test_a_poll_against_a_trickling_server_ends_with_a_plain_last_error(aws, trickling):
    box, directory = garden_mailbox("127.0.0.1", trickling.port, is_ssl=False)
    ingestor = deps.mail_ingestor(open_mailbox=lambda _: open_trickling(trickling.port))

    parts = MailPoll(directory, directory, deps.mail(), lambda: ingestor)
    polled = poll_mailbox(KEY, Deadline.unbounded(), parts)

    assert polled.failure == "timeout" and not polled.retry
    _, message = directory.last_errors[KEY]
    assert message == (
        "The mail server did not answer in time. (pop3://garden@127.0.0.1:"
        f"{trickling.port}: the session went on longer than 1 seconds (LIST was not done); the "
        "rest of the mail waits for the next poll)"
    )


class Reopens:
    """An opener whose every session breaks: counts how often it was asked to connect."""

    def __init__(self) -> None:
        self.opened = 0

    def __call__(self, mailbox: Mailbox) -> object:
        from tests.support.mail_fakes import FakePop3

        self.opened += 1
        return FakePop3({})


@pytest.mark.fast
def test_a_session_past_its_deadline_does_not_reconnect():
    opener = Reopens()
    box = Mailbox("garden", EMAIL_TO_POST, "pop.example.org", 995, "garden")
    session = MailSession(opener, box, session_seconds=60)
    session.ends_at = time.monotonic() - 1  # its minute is over
    session.server.is_usable = False  # type: ignore[attr-defined]  # the fake's own flag

    with pytest.raises(SessionExpired, match="longer than 60 seconds"):
        session.ensure_usable()
    assert opener.opened == 1


@pytest.mark.fast
def test_the_session_deadline_falls_after_the_polls_and_within_its_lease():
    assert POLL_SECONDS < SESSION_SECONDS < LEASE.total_seconds()


class SilentServer(LoopbackServer):
    """A port on loopback that takes a connection and never says a word (no greeting), until
    the test ends: what a poll meets when a server hangs."""

    def _handle(self, connection: socket.socket) -> None:
        self._stop.wait(TRICKLE_LIMIT_SECONDS + DEFAULT_CONNECT_TIMEOUT_SECONDS)


class RunContext:
    """Lambda's context, as far as the poll reads it: the run's time left."""

    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self.ends - time.monotonic()) * 1000)


def test_a_poll_whose_run_ends_while_its_server_is_silent_is_cut_short_before_the_run_ends(aws):
    """The run's end bounds the poll's connections from the connect on (pop3.run_ending_at): a
    server that never greets held it for the connect timeout (10 s) whatever time the run had
    left, and the platform killed the run first (the poll neither counted nor recorded). Now
    the connection ends halfway through the run's margin, past its deadline: a poll cut short,
    recorded while the run still has time."""
    context = RunContext(RUN_SECONDS)
    with SilentServer() as silent:
        box, directory = garden_mailbox("127.0.0.1", silent.port, is_ssl=False)
        # Mail in's own session, with its production timeouts (connect 10 s, session 270 s).
        ingestor = deps.mail_ingestor(
            open_mailbox=lambda _: Pop3Mailbox(
                "127.0.0.1", silent.port, "garden", "secret", is_ssl=False
            )
        )
        parts = MailPoll(directory, directory, deps.mail(), lambda: ingestor)
        deadline = Deadline(context.get_remaining_time_in_millis, margin_ms=RUN_MARGIN_MS)
        polled = poll_mailbox(KEY, deadline, parts)
        left_ms = context.get_remaining_time_in_millis()

    assert polled.failure is None and "the run was ending" in polled.line, polled.line
    assert KEY not in directory.last_errors
    assert directory.boxes[KEY].polls_cut_short == 1
    assert 0 < left_ms <= RUN_MARGIN_MS, left_ms  # past the run's deadline, before its end


HUNG_NAME = "pop.hung.example"
# How long the hung look-up holds at most before failing (EAI_AGAIN, as glibc's resolver does when
# its servers never answer), so that a poll not bounded by its run's end fails the test's time
# bound instead of hanging the suite.
HUNG_LOOKUP_SECONDS = 12.0
# The generous bound within which a poll whose run ends during the look-up answers.
ANSWER_SECONDS = 10.0


class HungResolver:
    """The standard library's socket.getaddrinfo, except for HUNG_NAME, whose look-up hangs (a
    resolver whose servers never answer) until `release` or HUNG_LOOKUP_SECONDS."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()
        self._real = socket.getaddrinfo

    def __call__(self, host: object, *args: Any, **kwargs: Any) -> Any:
        if host != HUNG_NAME:
            return self._real(host, *args, **kwargs)
        self.asked.set()
        self.release.wait(HUNG_LOOKUP_SECONDS)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")


@pytest.fixture
def hung_dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[HungResolver]:
    resolver = HungResolver()
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    yield resolver
    resolver.release.set()  # the look-up thread left behind ends; its answer is dropped


def test_a_poll_whose_run_ends_while_its_servers_name_is_looked_up_is_cut_short_before_the_run_ends(
    aws, hung_dns
):
    """The run's end bounds the host's look-up too (hosts.HostPolicy.connectable's ends_at): a
    resolver that never answers held the poll for its own timeouts (glibc's 5 s an attempt, for
    each attempt and server) whatever time the run had left, and the platform killed the run
    mid-look-up (the poll neither counted nor recorded). Now the look-up is given up halfway
    through the run's margin: a poll cut short, recorded while the run still has time."""
    context = RunContext(RUN_SECONDS)
    box, directory = garden_mailbox(HUNG_NAME, 995, is_ssl=True)
    # Mail in's own opener: the production host policy, the system resolver, its timeouts.
    ingestor = deps.mail_ingestor(
        open_mailbox=lambda mailbox: open_pop3(mailbox, HostPolicy(False))
    )
    parts = MailPoll(directory, directory, deps.mail(), lambda: ingestor)
    deadline = Deadline(context.get_remaining_time_in_millis, margin_ms=RUN_MARGIN_MS)
    started = time.monotonic()
    polled = poll_mailbox(KEY, deadline, parts)
    took = time.monotonic() - started
    left_ms = context.get_remaining_time_in_millis()

    assert hung_dns.asked.is_set()  # the name was looked up, and the look-up hung
    assert took < ANSWER_SECONDS, took
    assert polled.failure is None and "the run was ending" in polled.line, polled.line
    assert KEY not in directory.last_errors
    assert directory.boxes[KEY].polls_cut_short == 1
    assert 0 < left_ms <= RUN_MARGIN_MS, left_ms  # past the run's deadline, before its end


def test_a_hung_look_up_raises_run_ending_at_the_runs_end(hung_dns):
    started = time.monotonic()

    with run_ending_at(started + SESSION), pytest.raises(RunEnding) as raised:
        Pop3Mailbox(HUNG_NAME, 995, "garden", "secret", is_ssl=True, hosts=HostPolicy(False))

    assert SESSION <= time.monotonic() - started < ANSWER_SECONDS
    assert str(raised.value) == (
        f"pop3s://garden@{HUNG_NAME}:995: the run polling the mailbox was ending (looking up "
        "the server was not done); the rest of the mail waits for the next poll"
    )


def test_a_look_up_bounded_by_the_runs_end_still_connects_to_the_address_it_checked(trickling):
    """The bounded look-up's answer is checked as before (AGORA_MAIL_ALLOW_PRIVATE_HOSTS), and
    that address is the one connected to: the name resolves to the loopback server only here."""
    allowed = HostPolicy(True, lambda host, port: ["127.0.0.1"] if host == "pop.garden" else [])
    refused = HostPolicy(False, allowed.resolve)

    with run_ending_at(time.monotonic() + TRICKLE_LIMIT_SECONDS):
        mailbox = Pop3Mailbox(
            "pop.garden", trickling.port, "garden", "secret", is_ssl=False, hosts=allowed
        )
        with pytest.raises(MailboxError) as raised:
            Pop3Mailbox(
                "pop.garden", trickling.port, "garden", "secret", is_ssl=False, hosts=refused
            )

    assert mailbox.is_usable  # logged in on the trickling server, at 127.0.0.1
    mailbox.close()
    assert raised.value.reason == "refused"
    assert "pop.garden resolves to 127.0.0.1 is a loopback or private-network address" in str(
        raised.value
    )
