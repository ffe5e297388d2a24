"""Which POP3 hosts a mailbox may name (CONTRACT §8): never a link-local or cloud metadata
address, and loopback or private networks only where AGORA_MAIL_ALLOW_PRIVATE_HOSTS says so.

Otherwise a group administrator could make the mail function connect to the instance metadata
service or to anything on the function's network (server-side request forgery). A name is
checked by every address it resolves to, on save and again when connecting (DNS may change in
between); the connection then goes to an address that was checked, never to a fresh look-up.

An IPv6 address that carries an IPv4 address is judged by the IPv4 address: IPv4-mapped
(`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`, RFC 6052) and 6to4
(`2002::/16`, RFC 3056) all reach that IPv4 host through a translator or a tunnel.
"""

from __future__ import annotations

import ipaddress
import socket
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


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host` (an IP address gives itself)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in found))


NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _address(text: str) -> Address:
    address = ipaddress.ip_address(text.split("%", 1)[0])  # a zone id (fe80::1%eth0) is dropped
    return embedded_ipv4(address) or address


def embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (module docstring), or None."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped  # ::ffff:169.254.169.254
    if address.sixtofour is not None:
        return address.sixtofour  # 2002:a9fe:a9fe::1
    number = int(address)
    if address in NAT64 or (number >> 32 == 0 and number > 1):  # not :: nor ::1
        return ipaddress.IPv4Address(number & 0xFFFFFFFF)  # 64:ff9b::a9fe:a9fe, ::a9fe:a9fe
    return None


def refusal(text: str, allow_private: bool) -> str | None:
    """Why this address may not be connected to, or None when it may."""
    address = _address(text)
    what = text if str(address) == text.split("%", 1)[0] else f"{text} (which carries {address})"
    if address in METADATA_ADDRESSES or address.is_link_local:
        return f"{what} is a link-local or cloud metadata address, never a mail server"
    if address.is_unspecified or address.is_multicast:
        return f"{what} is not the address of a single server"
    if not address.is_global and not allow_private:
        return (
            f"{what} is a loopback or private-network address; only public mail servers are "
            "allowed here (AGORA_MAIL_ALLOW_PRIVATE_HOSTS)"
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

    def connectable(self, host: str, port: int) -> str:
        """On connect: the address to connect to, every address of the name being allowed."""
        addresses = self._addresses(host, port)
        if not addresses:
            raise HostUnresolved(f"{host} does not resolve to any address")
        for address in addresses:
            reason = refusal(address, self.allow_private)
            if reason is not None:
                raise HostRefused(self._reason(host, address, reason))
        return addresses[0]

    def _addresses(self, host: str, port: int) -> list[str]:
        bare = host.strip("[]")
        try:
            _address(bare)
            return [bare]
        except ValueError:
            return self.resolve(bare, port)

    @staticmethod
    def _reason(host: str, address: str, reason: str) -> str:
        if host.strip("[]") == address:
            return reason
        return f"{host} resolves to {reason}"
