"""A small POP3 client on the standard library's `poplib`, for reading a group's mailbox.

Certificates are always verified (`ssl.create_default_context()`, which honours `SSL_CERT_FILE`):
a mailbox password must never go to a server we have not authenticated, so there is no
"insecure" switch. Tests trust their throwaway server by pointing `SSL_CERT_FILE` at its cert.
"""

from __future__ import annotations

import poplib
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self, TypeVar

from chalicelib.domain.mailboxes import Mailbox
from chalicelib.mail.hosts import HostPolicy, HostRefused, HostUnresolved, LookupUnfinished
from chalicelib.mail.pop3_socket import PinnedPOP3, PinnedPOP3SSL, Watchdog
from chalicelib.settings import get_settings

if TYPE_CHECKING:
    from chalicelib.mail.hosts import HostPolicy

ResultT = TypeVar("ResultT")

# A session that keeps breaking is given up after this many reconnections in one poll.
MAX_RECONNECTS = 3
# The most of a header block read alone (TOP n 0): a mail too large to download.
HEAD_BYTES = 65536

DEFAULT_CONNECT_TIMEOUT_SECONDS = 10.0
DEFAULT_READ_TIMEOUT_SECONDS = 30.0
# One deadline for a whole POP3 session, reconnections included: the read timeout bounds one
# read only, and a server sending a byte every 25 s would otherwise hold the poll (and the
# mailboxes polled beside it) until Lambda kills the function. A poll stops starting new mail
# after 240 s (jobs/mail_poll.POLL_SECONDS) and poll-mailbox runs for at most 300 s: the session
# ends between the two, leaving time to store what it read.
SESSION_SECONDS = 270.0
# When the run polling the mailbox ends (time.monotonic()), if it does: `run_ending_at`'s.
_RUN_ENDS_AT: ContextVar[float | None] = ContextVar("pop3_run_ends_at", default=None)


@contextmanager
def run_ending_at(ends_at: float) -> Iterator[None]:
    """Every POP3 connection opened inside ends by `ends_at` (time.monotonic()), its host's
    look-up and its connect phase included: the run polling it ends then (jobs/mail_poll.py: a
    Lambda run's remaining time), and a session's own SESSION_SECONDS, a silent server's connect
    and read timeouts or a resolver's retries would otherwise hold it until the platform kills
    the run. Ended so, a command raises `RunEnding`."""
    token = _RUN_ENDS_AT.set(ends_at)
    try:
        yield
    finally:
        _RUN_ENDS_AT.reset(token)


# Read RETR in pieces of this size: a line may be longer (minified HTML has megabyte lines), but
# no single read holds more than this.
READ_PIECE_BYTES = 64 * 1024


class MailboxError(Exception):
    """The mailbox could not be reached or answered with an error; the message never holds the
    password, so it can go into the mail-in log as it is.

    `broken` says the session is unusable (timeout, connection closed, garbled reply): whoever
    goes on must reconnect. An `-ERR` answer leaves the session usable.
    """

    def __init__(self, message: str, *, broken: bool = False, reason: str = "other") -> None:
        super().__init__(message)
        self.broken = broken
        # What kind of failure, for the mailbox's lastError and the MailboxPollFailed metric:
        # one of FAILURE_REASONS.
        self.reason = reason


# Why a mailbox could not be polled (the Reason dimension of MailboxPollFailed).
FAILURE_REASONS = ("connection", "tls", "login", "timeout", "dns", "refused", "other")


# What a server that does not greet as POP3 is said to have done (never its own words).
NOT_POP3 = "the server did not answer as a POP3 server"


class SessionLost(Exception):
    """The session broke more than MAX_RECONNECTS times in one poll: the poll ends here (the
    rest of the mail waits for the next poll, not counted against each mail), and the mailbox's
    lastError says why. Not a MailboxError, so that nothing handling one mail catches it."""

    reason = "connection"
    broken = True


class SessionExpired(SessionLost):
    """The session went on past its deadline (SESSION_SECONDS): the connection was dropped and
    the poll ends here, its lastError saying why."""

    reason = "timeout"


class RunEnding(SessionLost):
    """The run polling the mailbox was ending (`run_ending_at`): the connection was dropped, or
    not made, before the platform ends the run. Not the mailbox's doing, nor its session's
    timeout (SessionExpired): jobs/mail_poll.py counts the poll as cut short."""

    reason = "timeout"


class MessageTooLarge(MailboxError):
    """RETR sent more than the caller's limit (the server's LIST size was wrong); the rest of the
    message was read and dropped, so the session is still usable."""


class Pop3Mailbox:
    """One POP3 session: connect and log in on construction, `quit()` to commit deletions.

    Use as a context manager; leaving the block by an exception closes the connection WITHOUT
    sending QUIT, so deletions marked in that session are rolled back by the server (RFC 1939 §6):
    a mail is only really deleted once everything before the QUIT succeeded.
    """

    def __init__(
        self,
        host: str,
        port: int,
        username: str,
        password: str,
        *,
        is_ssl: bool,
        hosts: HostPolicy | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_SECONDS,
        read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
        session_seconds: float = SESSION_SECONDS,
    ) -> None:
        """`hosts` checks the host's addresses before connecting (chalicelib/mail/hosts.py);
        the connection goes to the address it checked. None: the host is trusted (tests).
        The session ends `session_seconds` after it starts, or at `end_by`'s earlier time."""
        self.host = host
        self.hosts = hosts
        self.port = port
        self.username = username
        self.is_ssl = is_ssl
        self._where = f"{'pop3s' if is_ssl else 'pop3'}://{username}@{host}:{port}"
        self._is_open = False
        self._broken = False
        self._session_seconds = session_seconds
        self._watchdog = Watchdog(time.monotonic() + session_seconds)
        self._run_ends_at = _RUN_ENDS_AT.get()
        if self._run_ends_at is not None:
            left = self._run_ends_at - time.monotonic()
            if left <= 0:
                raise self._expired_error("connecting")
            self._watchdog.end_by(self._run_ends_at)  # from the greeting on
        try:
            self._connection = self._connect(connect_timeout)
        except MailboxError as error:
            self._watchdog.stop()
            if self._watchdog.expired or self._run_ended():
                raise self._expired_error("connecting") from error
            raise
        self._is_open = True
        if self._watchdog.expired:  # a greeting cut short by the deadline reads as one
            self.close()
            raise self._expired_error("connecting")
        try:
            # poplib applies one timeout to connect and reads; widen it once connected.
            self._connection.sock.settimeout(read_timeout)
            self._call("log in (USER)", self._connection.user, username)
            self._call("log in (PASS)", self._connection.pass_, password)
        except MailboxError as error:
            self.close()
            if not error.broken:
                error.reason = "login"  # the server answered -ERR: it refused the account
            raise
        except BaseException:
            self.close()
            raise

    def _connect(self, connect_timeout: float) -> poplib.POP3:
        address = self._address()
        if self._run_ends_at is not None:  # the connection itself ends with the run too
            left = self._run_ends_at - time.monotonic()  # what the look-up left of it
            if left <= 0:
                raise self._expired_error("connecting")
            connect_timeout = min(connect_timeout, left)
        try:
            if self.is_ssl:
                return PinnedPOP3SSL(
                    self.host,
                    self.port,
                    address,
                    timeout=connect_timeout,
                    context=ssl.create_default_context(),
                    watchdog=self._watchdog,
                )
            return PinnedPOP3(
                self.host, self.port, address, timeout=connect_timeout, watchdog=self._watchdog
            )
        except ssl.SSLError as error:
            raise MailboxError(f"{self._where}: TLS failed: {error}", reason="tls") from error
        except socket.gaierror as error:
            raise MailboxError(
                f"{self._where}: cannot find the server: {error}", reason="dns"
            ) from error
        except TimeoutError as error:
            raise MailboxError(f"{self._where}: connecting timed out", reason="timeout") from error
        except OSError as error:
            raise MailboxError(
                f"{self._where}: cannot connect: {error}", reason="connection"
            ) from error
        except poplib.error_proto:
            # Its greeting was not POP3's `+OK` (an SSH or web server, say): its words are not
            # repeated, so the settings page cannot be used to read other services' banners.
            raise MailboxError(f"{self._where}: {NOT_POP3}", reason="connection") from None

    def _address(self) -> str:
        """The address to connect to: the host's own (trusted), or the one the policy checked,
        again at connect time (the name may resolve elsewhere than when it was saved), its
        look-up ending with the run (`RunEnding`)."""
        if self.hosts is None:
            return self.host.strip("[]")
        try:
            return self.hosts.connectable(self.host, self.port, ends_at=self._run_ends_at)
        except LookupUnfinished:
            raise self._expired_error("looking up the server") from None
        except HostUnresolved as unknown:
            raise MailboxError(f"{self._where}: {unknown}", reason="dns") from None
        except HostRefused as refused:
            raise MailboxError(f"{self._where}: refused: {refused}", reason="refused") from None

    def end_by(self, deadline: float) -> None:
        """End the session at `deadline` (time.monotonic()) when that is earlier than its own
        end: the connection is dropped then, and the command in progress raises
        `SessionExpired`."""
        self._watchdog.end_by(deadline)

    def _run_ended(self) -> bool:
        return self._run_ends_at is not None and time.monotonic() >= self._run_ends_at

    def _expired_error(self, action: str) -> SessionLost:
        self._broken = True
        if self._run_ends_at is not None and self._run_ends_at <= self._watchdog.ends_at:
            return RunEnding(
                f"{self._where}: the run polling the mailbox was ending ({action} was not "
                "done); the rest of the mail waits for the next poll"
            )
        return SessionExpired(
            f"{self._where}: the session went on longer than {self._session_seconds:g} seconds "
            f"({action} was not done); the rest of the mail waits for the next poll"
        )

    def _call(self, action: str, method: Callable[..., ResultT], *args: object) -> ResultT:
        """Run one poplib command, turning its errors into `MailboxError` (`SessionExpired`
        once the session's deadline dropped the connection)."""
        try:
            return self._command(action, method, *args)
        except Exception as error:
            if not self._watchdog.expired:
                raise
            raise self._expired_error(action) from error

    def _command(self, action: str, method: Callable[..., ResultT], *args: object) -> ResultT:
        try:
            return method(*args)
        except MailboxError:
            raise
        except poplib.error_proto as error:
            # An -ERR answer is a whole reply; anything else poplib calls error_proto ("line
            # too long", a reply without +OK/-ERR) leaves the stream at an unknown place.
            text = _server_text(error)
            broken = not text.startswith("-ERR")
            self._broken = self._broken or broken
            raise MailboxError(f"{self._where}: {action} failed: {text}", broken=broken) from error
        except TimeoutError as error:
            self._broken = True
            raise MailboxError(
                f"{self._where}: {action} timed out", broken=True, reason="timeout"
            ) from error
        except ssl.SSLError as error:
            self._broken = True
            raise MailboxError(
                f"{self._where}: {action} failed: {error}", broken=True, reason="tls"
            ) from error
        except (OSError, EOFError) as error:
            self._broken = True
            raise MailboxError(
                f"{self._where}: {action} failed: {error}", broken=True, reason="connection"
            ) from error

    def listing(self) -> dict[int, int]:
        """Message number -> size in octets (POP3 LIST)."""
        _, lines, _ = self._call("LIST", self._connection.list)
        return dict(_number_and_int(line) for line in lines)

    def uidls(self) -> dict[int, str]:
        """Message number -> unique id (POP3 UIDL), stable across sessions on the same server."""
        _, lines, _ = self._call("UIDL", self._connection.uidl)
        return dict(_number_and_text(line) for line in lines)

    @property
    def is_usable(self) -> bool:
        """False once the session broke (see `MailboxError.broken`): reconnect to go on."""
        return self._is_open and not self._broken

    def retrieve(self, number: int, max_bytes: int | None = None) -> bytes:
        """The raw message as on the wire (CRLF line ends, dot-stuffing undone).

        Read here rather than with `poplib.retr`, which refuses lines over 2,048 bytes and leaves
        the session in the middle of the message: RFC 5322 says 998, real mail does not care.
        More than `max_bytes` raises `MessageTooLarge` after reading the rest of the message.
        """
        return self._call(f"RETR {number}", self._read_message, f"RETR {number}", max_bytes)

    def head(self, number: int, max_bytes: int) -> bytes:
        """The message's header block alone (TOP n 0: optional in RFC 1939, so a server may
        answer -ERR, a `MailboxError` that leaves the session usable); a mail too large to
        download still says who sent it, and what."""
        command = f"TOP {number} 0"
        return self._call(command, self._read_message, command, max_bytes)

    def _read_message(self, command: str, max_bytes: int | None) -> bytes:
        connection = self._connection
        # poplib's own command helpers: the status line is short, so its line limit is harmless.
        # Private to poplib, absent from its type stubs.
        connection._putcmd(command)  # type: ignore[attr-defined]  # noqa: SLF001
        connection._getresp()  # type: ignore[attr-defined]  # noqa: SLF001 (raises on -ERR)
        stream = connection.file
        pieces: list[bytes] = []
        total = 0
        at_line_start = True
        while True:
            piece = stream.readline(READ_PIECE_BYTES)
            if not piece:
                raise EOFError("the server closed the connection in the middle of a message")
            if at_line_start:
                if piece in (b".\r\n", b".\n"):
                    break
                if piece.startswith(b"."):  # dot-stuffing (RFC 1939 §3)
                    piece = piece[1:]
            at_line_start = piece.endswith(b"\n")
            total += len(piece)
            if max_bytes is None or total <= max_bytes:
                pieces.append(piece)
            elif pieces:
                pieces.clear()  # keep reading to the end, so the session stays in step
        if max_bytes is not None and total > max_bytes:
            raise MessageTooLarge(
                f"{self._where}: {command} sent {total} bytes, more than {max_bytes}"
            )
        return b"".join(pieces)

    def delete(self, number: int) -> None:
        """Mark a message for deletion; the server removes it only at `quit()`."""
        self._call(f"DELE {number}", self._connection.dele, number)

    def quit(self) -> None:
        """End the session and commit the deletions."""
        if not self._is_open:
            return
        if self._broken:
            self.close()
            raise MailboxError(f"{self._where}: the session broke; deletions were not committed")
        try:
            self._call("QUIT", self._connection.quit)
        finally:
            self.close()

    def close(self) -> None:
        """Drop the connection without QUIT (deletions of this session are not committed)."""
        self._is_open = False
        self._watchdog.stop()
        try:
            self._connection.close()
        except OSError:
            pass

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.quit()
        else:
            self.close()


def _server_text(error: poplib.error_proto) -> str:
    reply = error.args[0] if error.args else b""
    if isinstance(reply, bytes):
        return reply.decode("utf-8", "replace")
    return str(reply)


def _number_and_int(line: bytes) -> tuple[int, int]:
    number, value = line.split()[:2]
    return int(number), int(value)


def _number_and_text(line: bytes) -> tuple[int, str]:
    number, value = line.split()[:2]
    return int(number), value.decode("ascii", "replace")


# --- the session of one poll -----------------------------------------------------------------


class Pop3Server(Protocol):
    """What a poll asks of one POP3 connection (`Pop3Mailbox`; tests pass wrappers)."""

    @property
    def is_usable(self) -> bool: ...
    def listing(self) -> dict[int, int]: ...
    def uidls(self) -> dict[int, str]: ...
    def retrieve(self, number: int, max_bytes: int | None = None) -> bytes: ...
    def head(self, number: int, max_bytes: int) -> bytes: ...
    def delete(self, number: int) -> None: ...
    def quit(self) -> None: ...
    def close(self) -> None: ...


def open_pop3(mailbox: Mailbox, hosts: HostPolicy | None = None) -> Pop3Server:
    """The default way to open a mailbox: a POP3 session, logged in, on a host the policy allows
    (AGORA_MAIL_ALLOW_PRIVATE_HOSTS's, unless one is given)."""

    return Pop3Mailbox(
        mailbox.server_name,
        mailbox.server_port,
        mailbox.server_username,
        mailbox.password,
        is_ssl=mailbox.is_ssl,
        hosts=hosts or HostPolicy(get_settings().mail_allow_private_hosts),
    )


class MailSession:
    """The POP3 session of one poll, addressed by UIDL, reconnecting when it breaks.

    Message numbers change between sessions (RFC 1939 §7); UIDLs do not, so everything above
    speaks UIDLs. Deletions marked before a reconnection are rolled back by the server; their
    markers make the next poll delete them.
    """

    def __init__(
        self,
        opener: Callable[[Mailbox], Pop3Server],
        mailbox: Mailbox,
        session_seconds: float = SESSION_SECONDS,
    ) -> None:
        self._reopen: Callable[[], Pop3Server] = lambda: opener(mailbox)
        # One deadline for every connection of the poll (SESSION_SECONDS).
        self.session_seconds = session_seconds
        self.ends_at = time.monotonic() + session_seconds
        self.reconnects = 0
        self.numbers: dict[str, int] = {}
        self.sizes: dict[str, int] = {}
        self.order: list[str] = []
        self.server = self._open()

    def _open(self) -> Pop3Server:
        if time.monotonic() >= self.ends_at:
            raise SessionExpired(
                f"the session went on longer than {self.session_seconds:g} seconds; the rest "
                "of the mail waits for the next poll"
            )
        server = self._reopen()
        end_by = getattr(server, "end_by", None)  # a Pop3Mailbox; tests' fakes keep no time
        if end_by is not None:
            end_by(self.ends_at)
        sizes = server.listing()
        uidls = server.uidls()
        self.numbers, self.sizes, self.order = {}, {}, []
        for number in sorted(sizes):
            uidl = uidls.get(number, f"#{number}")
            if uidl in self.numbers:  # a server repeating a UIDL: the later copy waits
                continue
            self.numbers[uidl] = number
            self.sizes[uidl] = sizes[number]
            self.order.append(uidl)
        return server

    def ensure_usable(self) -> None:
        if self.server.is_usable:
            return
        if self.reconnects >= MAX_RECONNECTS:
            raise SessionLost(
                f"the connection to the mail server broke {self.reconnects + 1} times in one "
                "poll; the rest of the mail waits for the next poll"
            )
        self.reconnects += 1
        self.close()
        self.server = self._open()

    def retrieve(self, uidl: str, max_bytes: int) -> bytes | None:
        """The message, or None when it is gone from the server since the listing."""
        self.ensure_usable()
        number = self.numbers.get(uidl)
        if number is None:
            return None
        return bytes(self.server.retrieve(number, max_bytes))

    def head(self, uidl: str, max_bytes: int = HEAD_BYTES) -> bytes:
        """The message's header block (`Pop3Mailbox.head`); b"" when it is gone, its server
        answers no TOP or the block is over `max_bytes` (a broken session reconnects at the
        next call, as after a failed RETR)."""
        self.ensure_usable()
        number = self.numbers.get(uidl)
        if number is None:
            return b""
        try:
            return bytes(self.server.head(number, max_bytes))
        except MailboxError:
            return b""

    def delete(self, uidl: str) -> bool:
        self.ensure_usable()
        number = self.numbers.get(uidl)
        if number is None:
            return False
        self.server.delete(number)
        return True

    def quit(self) -> None:
        self.server.quit()

    def close(self) -> None:
        try:
            self.server.close()
        except Exception:  # closing a broken connection may fail again; it is gone either way
            pass
