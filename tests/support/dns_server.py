"""A small authoritative DNS server on loopback for mail authentication tests: it answers TXT
look-ups from a dict (DKIM keys, DMARC records), NXDOMAIN for any other name; or, `silent`,
never answers at all (a resolver timeout). Built with dnspython, served by one thread."""

from __future__ import annotations

import socket
import threading
from types import TracebackType

import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset


def txt_strings(text: str) -> list[str]:
    """A TXT value as quoted character-strings of at most 255 bytes (DKIM keys are longer)."""
    chunks = [text[i : i + 250] for i in range(0, len(text), 250)] or [""]
    return ['"' + chunk.replace("\\", "\\\\").replace('"', '\\"') + '"' for chunk in chunks]


class DnsServer:
    def __init__(self, records: dict[str, list[str]] | None = None, *, silent: bool = False):
        self.records = {
            name.lower().rstrip("."): values for name, values in (records or {}).items()
        }
        self.silent = silent
        self.queries: list[str] = []
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def address(self) -> str:
        """The server as AGORA_DNS_SERVERS names it."""
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> DnsServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.socket.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self.socket.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                query = dns.message.from_wire(data)
            except Exception:  # not DNS: a real server drops it too
                continue
            question = query.question[0]
            name = question.name.to_text().lower().rstrip(".")
            self.queries.append(name)
            if self.silent:
                continue
            response = dns.message.make_response(query)
            response.flags |= dns.flags.AA
            values = self.records.get(name)
            if values is None:
                response.set_rcode(dns.rcode.NXDOMAIN)
            elif question.rdtype == dns.rdatatype.TXT and values:
                texts = [" ".join(txt_strings(value)) for value in values]
                response.answer.append(
                    dns.rrset.from_text_list(question.name, 300, "IN", "TXT", texts)
                )
            self.socket.sendto(response.to_wire(), peer)
