"""One reading of a mail (CONTRACT §9): the header lines the signature check reads must be the
ones the mail parser reads, or no signature counts for the mail.

dkimpy ends a header line at CRLF or LF only; the standard mail parser also ends one at a bare CR,
and ends the header block at the first line that is not a header, where dkimpy refuses the mail.
So one unsigned header hiding `\\rFrom: …\\rSubject: …\\r\\r<text>` in front of a genuine signed
mail verifies (dkimpy reads the genuine headers) while the parser reads the hidden ones. The rules:

* Both read the same bytes, `mail_bytes(raw)`: the mail without the blank lines some exports
  start with (the parser would read none of its headers after them).
* The header block is everything up to and including dkimpy's first empty line (the parser's
  block never reaches past it: every line end dkimpy sees, the parser sees too).
* A header block holding a NUL, a CR that does not start a CRLF, or an LF without its CR while
  another line ends in CRLF, is read by no signature. A header block whose lines all end in LF
  (mail stored by Dovecot or in a maildir) is one reading and stays verifiable.
* Otherwise the two readings are compared: the same header fields (names and values) in the
  same order, and the body starting at the same byte. Any difference (an empty header name, a
  `From ` line the parser pushes into the body, or one between a header and its folded line,
  which the parser drops and dkimpy reads on) and no signature counts. A header block dkimpy
  refuses (a line that is no header) is read by no signature anyway.
"""

from __future__ import annotations

import re
from email import policy
from email.parser import BytesParser

import dkim

# dkimpy's end of the header block: its first empty line, CRLF or LF (the mail's first line too).
_BLOCK_END = re.compile(rb"\A\r?\n|\r?\n\r?\n")
_BARE_CR = re.compile(rb"\r(?!\n)")
_BARE_LF = re.compile(rb"(?<!\r)\n")


def mail_bytes(raw: bytes) -> bytes:
    """The bytes both the signature check and the parser read: leading blank lines (and white
    space) dropped, as some exports start with them."""
    return raw.lstrip(b"\r\n\t ")


def header_block(raw: bytes) -> bytes:
    """The header block as dkimpy reads it, its closing empty line included."""
    end = _BLOCK_END.search(raw)
    return raw[: end.end()] if end else raw


def reading_problem(raw: bytes) -> str | None:
    """Why the signature check and the mail parser would read `raw`'s headers differently (plain
    words for the mail log), or None when they read the same header lines."""
    raw = mail_bytes(raw)
    block = header_block(raw)
    if b"\0" in block:
        return "its header block holds a NUL byte"
    if _BARE_CR.search(block):
        return "its header block holds a CR that does not end a line (a bare CR)"
    if b"\r\n" in block and _BARE_LF.search(block):
        return "its header block mixes LF line ends with CRLF ones (a bare LF)"
    signature = _signature_reading(raw)
    # A header block dkimpy refuses is no reading of its: no signature of the mail verifies.
    if signature is not None and signature != _parser_reading(raw):
        return "its header block reads differently to the signature check and to the mail reader"
    return None


Field = tuple[bytes, bytes]
Reading = tuple[tuple[Field, ...], int] | None


def _signature_reading(raw: bytes) -> Reading:
    """(the header fields dkimpy reads, in order; where it starts the body), or None when dkimpy
    cannot read the mail (then no signature of it verifies anyway)."""

    try:
        headers, _ = dkim.rfc822_parse(raw)
    except Exception:  # dkimpy refuses the header block: no signature can be checked
        return None
    fields = tuple(_field(bytes(name), bytes(value)) for name, value in headers)
    return fields, len(header_block(raw))


def _parser_reading(raw: bytes) -> Reading:
    """The same as the mail parser (chalicelib.mail.mime.read_message) reads `raw`."""
    try:
        message = BytesParser(policy=policy.compat32).parsebytes(raw, headersonly=True)
    except Exception:  # the parser refuses it: parse_mail rejects the mail
        return None
    # The payload as the parser keeps it: get_payload() would decode 8-bit bytes by its charset.
    body = message._payload  # type: ignore[attr-defined]  # noqa: SLF001
    rest = body.encode("ascii", "surrogateescape") if isinstance(body, str) else b""
    fields = tuple(
        _field(name.encode("ascii", "surrogateescape"), value.encode("ascii", "surrogateescape"))
        for name, value in message.raw_items()
    )
    return fields, len(raw) - len(rest)


def _field(name: bytes, value: bytes) -> Field:
    """A header field as both readers keep it: the name in lower case, the value without the
    white space after the colon and its last line end (the parser drops both)."""
    return name.lower(), value.replace(b"\r\n", b"\n").lstrip(b" \t").rstrip(b"\n")
