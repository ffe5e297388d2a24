"""Which POP3 hosts a mailbox may name (CONTRACT §8): never a link-local or cloud metadata
address, and loopback or private networks only where AGORA_MAIL_ALLOW_PRIVATE_HOSTS says so.

Otherwise a group administrator could make the mail function connect to the instance metadata
service or to anything on the function's network (server-side request forgery). A name is
checked by every address it resolves to, on save and again when connecting (DNS may change in
between); the connection then goes to an address that was checked, never to a fresh look-up.
A poll's look-up ends with its run (`connectable`'s `ends_at`), whatever the resolver's own
timeouts: the run's platform would otherwise kill it mid-look-up.

An IPv6 address that carries an IPv4 address is judged by the IPv4 address too: IPv4-mapped
(`::ffff:a.b.c.d`), SIIT (`::ffff:0:a.b.c.d`, RFC 2765), IPv4-compatible (`::a.b.c.d`), NAT64
(`64:ff9b::/96`, RFC 6052), local-use NAT64 (`64:ff9b:1::/48`, RFC 8215: its operator chooses the
prefix length within it, so every RFC 6052 position is read), 6to4 (`2002::/16`, RFC 3056) and
Teredo (`2001::/32`, RFC 4380: its server and its client) all reach that IPv4 host through a
translator or a tunnel. The `ipaddress` module's own readings are used where it has them.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

# Instance metadata services that are not link-local addresses: AWS's IPv6 one (in fd00::/8),
# Alibaba Cloud's, Oracle Cloud's. 169.254.169.254 (AWS, GCP, Azure) is link-local anyway.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("fd00:ec2::254", "100.100.100.200", "192.0.0.192")
)


class HostRefused(ValueError):
    """The host may not be used; the message says why in plain words (for a 400 on
    `serverName`, or the mailbox's last error)."""


class HostUnresolved(HostRefused):
    """The name resolves to no address (now): a poll failure of reason `dns`, not `refused`."""


class LookupUnfinished(Exception):
    """The name's look-up was not done by the time `connectable` was given: nothing was
    checked, nothing is to be connected to."""


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host` (an IP address gives itself)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in found))


NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
SIIT = ipaddress.IPv6Network("::ffff:0:0:0/96")
# RFC 6052 §2.2: the prefix lengths an IPv4 address may follow in a NAT64 address.
RFC6052_PREFIXES = (32, 40, 48, 56, 64, 96)


def _address(text: str) -> Address:
    return ipaddress.ip_address(text.split("%", 1)[0])  # a zone id (fe80::1%eth0) is dropped


def embedded_ipv4s(address: Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (module docstring), or none."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    number = int(address)
    low = ipaddress.IPv4Address(number & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]  # ::ffff:169.254.169.254
    if address.sixtofour is not None:
        return [address.sixtofour]  # 2002:a9fe:a9fe::1
    if address.teredo is not None:
        return list(address.teredo)  # (server, client)
    if address in LOCAL_NAT64:
        return list(dict.fromkeys(_rfc6052(number, length) for length in RFC6052_PREFIXES))
    if address in SIIT or address in NAT64 or (number >> 32 == 0 and number > 1):
        return [low]  # ::ffff:0:a9fe:a9fe, 64:ff9b::a9fe:a9fe, ::a9fe:a9fe (not :: nor ::1)
    return []


def _rfc6052(number: int, prefix: int) -> ipaddress.IPv4Address:
    """The IPv4 address after a `prefix`-bit NAT64 prefix (RFC 6052 §2.2: bits 64-71 are
    skipped)."""
    if prefix == 96:
        return ipaddress.IPv4Address(number & 0xFFFFFFFF)
    squeezed = (number >> 64) << 56 | (number & ((1 << 56) - 1))  # the 120 bits without u
    return ipaddress.IPv4Address((squeezed >> (120 - prefix - 32)) & 0xFFFFFFFF)


def refusal(text: str, allow_private: bool) -> str | None:
    """Why this address may not be connected to, or None when it may. An address carrying IPv4
    addresses is refused when it or any of them may never be used, and is private when any of
    them is (the translator or tunnel reaches them, whatever network the IPv6 prefix is in)."""
    address = _address(text)
    carried: list[tuple[str, Address]] = [
        (f"{text} (which carries {ipv4})", ipv4) for ipv4 in embedded_ipv4s(address)
    ]
    never = _never_reason(text, address, carried)
    if never is not None or allow_private:
        return never
    return _private_reason(text, address, carried)


def _never_reason(text: str, address: Address, carried: list[tuple[str, Address]]) -> str | None:
    for what, candidate in [(text, address), *carried]:
        if candidate in METADATA_ADDRESSES or candidate.is_link_local:
            return f"{what} is a link-local or cloud metadata address, never a mail server"
    # A local-use NAT64 address is read at every prefix length, most of them junk (0.0.0.0):
    # only an unambiguous reading is judged a single server or not.
    for what, candidate in [(text, address), *(carried if len(carried) == 1 else [])]:
        if candidate.is_unspecified or candidate.is_multicast:
            return f"{what} is not the address of a single server"
    return None


def _private_reason(text: str, address: Address, carried: list[tuple[str, Address]]) -> str | None:
    if address in LOCAL_NAT64:  # RFC 8215: a network's own prefix, never global
        return (
            f"{text} is a local-use NAT64 address (64:ff9b:1::/48), a private network's; only "
            "public mail servers are allowed here (AGORA_MAIL_ALLOW_PRIVATE_HOSTS)"
        )
    # Judged by what it carries, and a Teredo address by itself too (2001::/32 is not global).
    teredo = isinstance(address, ipaddress.IPv6Address) and address.teredo is not None
    itself = [(text, address)] if teredo or not carried else []
    for what, candidate in [*carried, *itself]:
        if not candidate.is_global:
            return (
                f"{what} is a loopback or private-network address; only public mail servers "
                "are allowed here (AGORA_MAIL_ALLOW_PRIVATE_HOSTS)"
            )
    return None


class HostPolicy:
    """The check, with the setting and the resolver it uses (tests pass their own resolver)."""

    def __init__(self, allow_private: bool, resolve: Resolver = system_resolver) -> None:
        self.allow_private = allow_private
        self.resolve = resolve

    def check_name(self, host: str, port: int) -> None:
        """On save: refuse an address that may never be used, or a name resolving to one. A name
        that does not resolve now is accepted: connecting checks it again, and says so then."""
        for address in self._addresses(host, port):
            reason = refusal(address, self.allow_private)
            if reason is not None:
                raise HostRefused(self._reason(host, address, reason))

    def connectable(self, host: str, port: int, ends_at: float | None = None) -> str:
        """On connect: the address to connect to, every address of the name being allowed. The
        look-up is waited for until `ends_at` (time.monotonic()) if given, then
        `LookupUnfinished`."""
        addresses = self._addresses(host, port, ends_at)
        if not addresses:
            raise HostUnresolved(f"{host} does not resolve to any address")
        for address in addresses:
            reason = refusal(address, self.allow_private)
            if reason is not None:
                raise HostRefused(self._reason(host, address, reason))
        return addresses[0]

    def _addresses(self, host: str, port: int, ends_at: float | None = None) -> list[str]:
        bare = host.strip("[]")
        try:
            _address(bare)
            return [bare]
        except ValueError:
            pass
        if ends_at is None:
            return self.resolve(bare, port)
        return _resolve_by(self.resolve, bare, port, ends_at)

    @staticmethod
    def _reason(host: str, address: str, reason: str) -> str:
        if host.strip("[]") == address:
            return reason
        return f"{host} resolves to {reason}"


def _resolve_by(resolve: Resolver, host: str, port: int, ends_at: float) -> list[str]:
    """`resolve(host, port)`, waited for until `ends_at` (time.monotonic()) only. Nothing cuts a
    getaddrinfo short, and the resolver's own timeouts (glibc: 5 s an attempt, for each attempt
    and server) may run well past it: the look-up runs in a daemon thread, whose late answer is
    dropped (it was never checked, so never connected to)."""
    answers: list[list[str]] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def look_up() -> None:
        try:
            answers.append(resolve(host, port))
        except BaseException as error:  # the caller's to see, as when resolving inline
            errors.append(error)
        finally:
            done.set()

    threading.Thread(target=look_up, name=f"look-up {host}", daemon=True).start()
    if not done.wait(max(0.0, ends_at - time.monotonic())):
        raise LookupUnfinished(f"looking up {host} was not done in time")
    if errors:
        raise errors[0]
    return answers[0]
