"""The sockets of a POP3 session (chalicelib/mail/pop3.py): poplib's clients connecting to an
address already checked, and the watchdog that ends a session at its deadline."""

from __future__ import annotations

import poplib
import socket
import ssl
import threading
import time
from typing import Any


class Watchdog:
    """Drops a connection at its deadline (time.monotonic()): the read in progress then fails,
    however slowly the server trickles bytes, which no per-read timeout catches."""

    def __init__(self, ends_at: float) -> None:
        self.ends_at = ends_at
        self.expired = False
        self._sock: socket.socket | None = None
        self._timer: threading.Timer | None = None

    def watch(self, sock: socket.socket) -> None:
        self._sock = sock
        self._arm()

    def end_by(self, deadline: float) -> None:
        self.ends_at = min(self.ends_at, deadline)
        self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _arm(self) -> None:
        self.stop()
        if self._sock is None:
            return
        self._timer = threading.Timer(max(0.0, self.ends_at - time.monotonic()), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        self.expired = True
        try:
            # The plain socket's shutdown, a TLS one's too: it wakes a blocked read at once.
            socket.socket.shutdown(self._sock, socket.SHUT_RDWR)  # type: ignore[arg-type]
        except OSError:
            pass  # closed already


class PinnedPOP3(poplib.POP3):
    """poplib's client, connecting to an address already checked rather than looking the
    host up again (a second look-up could answer another address); `watchdog` watches the
    socket from before the greeting on."""

    def __init__(
        self, host: str, port: int, address: str, *, timeout: float, watchdog: Watchdog
    ) -> None:
        self._address = address
        self._watchdog = watchdog
        super().__init__(host, port, timeout=timeout)

    def _create_socket(self, timeout: Any) -> socket.socket:
        sock = socket.create_connection((self._address, self.port), timeout)
        self._watchdog.watch(sock)
        return sock


class PinnedPOP3SSL(poplib.POP3_SSL):
    """The same over TLS: the certificate is still checked against the host's name."""

    def __init__(
        self,
        host: str,
        port: int,
        address: str,
        *,
        timeout: float,
        context: ssl.SSLContext,
        watchdog: Watchdog,
    ) -> None:
        self._address = address
        # Kept here too: poplib keeps it as `context`, which its type stubs do not declare.
        self._tls = context
        self._watchdog = watchdog
        super().__init__(host, port, timeout=timeout, context=context)

    def _create_socket(self, timeout: Any) -> socket.socket:
        sock = socket.create_connection((self._address, self.port), timeout)
        tls = self._tls.wrap_socket(sock, server_hostname=self.host, do_handshake_on_connect=False)
        self._watchdog.watch(tls)  # the handshake is watched too
        tls.do_handshake()
        return tls
