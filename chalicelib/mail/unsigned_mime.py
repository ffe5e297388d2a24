"""How a signed body reads when its signature leaves the MIME headers unsigned (CONTRACT §9, one
reading): what a post or comment says depends only on bytes a signature fixes.

Many signers do not sign `Content-Type` (Gmail's `h=` has not since 2023; bench/mime_signing.py
counts them), so whoever relays the mail may change it: put a `multipart/mixed` whose boundary is
a line of a forwarded text on top, and the parts the parser finds are the forwarded text's author's,
not the signer's; put `text/plain` on top, and every byte of the body (attachments, forwarded mails,
raw MIME) reads as the signer's text. Refusing every such signature would refuse every Gmail mail,
so the rule reads the shape the signed body has of its own and lets the unsigned headers only
confirm it:

* each unsigned MIME header appears once (a second one on top is never the signer's);
* a body whose first line is a MIME delimiter `--B` (B: 1 to 70 characters, no white space, two
  different characters at least, as every generator writes them, Gnus's `=-=-=` too; before it,
  blank lines or a short notice naming MIME, as Ruby's, Mutt's, Thunderbird's and Mailman's write)
  and which holds its closing `--B--` line is multipart by its own bytes: the unsigned
  `Content-Type` must be a multipart (not `digest`, whose parts read as mails) with boundary B,
  and the `Content-Transfer-Encoding` an identity one. A boundary taken from a forwarded text never starts the body, so it never matches;
* any other body is one part: a multipart or message `Content-Type` is refused, and so is one that
  reads it otherwise than `text/plain` would (`text/html`). An unsigned transfer encoding may be an
  identity one or quoted-printable (which only spells the signed bytes: every character stays in
  the text), or base64 when the body is exactly what a base64 encoder writes (Exchange signs no
  `Content-Transfer-Encoding` and sends non-ASCII text so; no one writes such a body as text).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from collections.abc import Callable, Iterable
from email import policy
from email.message import Message
from email.parser import BytesHeaderParser

import dkim
import dkim.util

from chalicelib.mail.parse import (
    body_parts,
    chosen_body,
    header_block,
    mail_bytes,
    read_message,
)

MIME_HEADERS = ("content-type", "content-transfer-encoding", "mime-version")
_IDENTITY = ("", "7bit", "8bit", "binary")
_BOUNDARY = re.compile(rb"[^\s]{1,70}")
MAX_NOTICE = 300  # bytes of a preamble's notice


def title(name: str) -> str:
    """A header's name as mail writes it (`Content-Type`, `MIME-Version`)."""
    return "-".join("MIME" if word == "mime" else word.title() for word in name.split("-"))


def problem(raw: bytes, unsigned: Iterable[str], *, preamble: str = "notice") -> str | None:
    """Why `raw` would read otherwise were its `unsigned` MIME headers (names in lower case,
    present in the mail, not signed) changed: plain words that name the header; None when the
    signed bytes decide the reading (rules in the module docstring)."""
    names = [name for name in MIME_HEADERS if name in {n.lower() for n in unsigned}]
    if not names:
        return None
    raw = mail_bytes(raw)
    headers = BytesHeaderParser(policy=policy.compat32).parsebytes(raw)
    for name in names:
        count = len(headers.get_all(name) or [])
        if count > 1:
            return f"the mail has {count} {title(name)} headers and the signature signs none"
    body = raw[len(header_block(raw)) :]
    own = own_boundary(body, preamble=preamble)
    if own is not None:
        return _multipart_problem(headers, own, names)
    return _single_part_problem(raw, headers, body, names)


def _single_part_problem(raw: bytes, headers: Message, body: bytes, names: list[str]) -> str | None:
    if "content-type" in names:
        declared = headers.get_content_type()
        if headers.get_content_maintype() in ("multipart", "message"):
            return f"its unsigned Content-Type reads a body of one part as {declared}"
        if reading(raw) != reading(as_plain_text(raw, headers)):
            return f"its unsigned Content-Type reads the signed text as {declared}"
    encoding = str(headers.get("content-transfer-encoding") or "").strip().lower()
    if "content-transfer-encoding" in names and encoding not in (*_IDENTITY, "quoted-printable"):
        if encoding != "base64" or not encoded_as_base64(body):
            return (
                f"its unsigned Content-Transfer-Encoding ({encoding[:40]}) recodes the signed text"
            )
    return None


def signers_problem(raw: bytes, is_aligned: Callable[[str], bool]) -> str | None:
    """Under AGORA_MAIL_AUTH=header, where the receiving server checked the signatures: why no
    DKIM signature aligned with the From domain (`is_aligned` of its `d=`) fixes how the body
    reads (each leaves a MIME header open to change, `problem`); None when one does, or when
    none is aligned (DMARC then passed on SPF, which no relay of a signed mail can reuse)."""
    raw = mail_bytes(raw)
    try:
        fields, _ = dkim.rfc822_parse(raw)
    except Exception:  # noqa: BLE001  the receiving server could verify none of them either
        return None
    present = Counter(bytes(name).decode("latin-1").lower() for name, _ in fields)
    found: str | None = None
    for name, value in fields:
        tags = _signature_tags(bytes(name), bytes(value))
        if tags is None or not is_aligned(tags.get(b"d", b"").decode("latin-1")):
            continue
        why = _signature_problem(raw, tags, present)
        if why is None:
            return None
        found = found or why
    return found


def _signature_tags(name: bytes, value: bytes) -> dict[bytes, bytes] | None:
    """A DKIM-Signature's tags; None for another header or a malformed signature."""
    if name.lower() != b"dkim-signature":
        return None
    try:
        return dict(dkim.util.parse_tag_value(value))
    except Exception:  # noqa: BLE001  a malformed signature verified nowhere
        return None


def _signature_problem(raw: bytes, tags: dict[bytes, bytes], present: Counter[str]) -> str | None:
    """Why one signature leaves the body's reading open (`problem`), or None."""
    signed = Counter(h.strip().decode("latin-1").lower() for h in tags.get(b"h", b"").split(b":"))
    gap = next((n for n in MIME_HEADERS if 0 < signed[n] < present[n]), None)
    if gap is not None:
        return f"a {title(gap)} header its signature does not sign"
    return problem(raw, [n for n in MIME_HEADERS if present[n] and not signed[n]])


def _multipart_problem(headers: Message, own: bytes, names: list[str]) -> str | None:
    if "content-type" in names:
        if headers.get_content_maintype() != "multipart":
            return (
                f"its unsigned Content-Type reads the signed body's parts as one "
                f"{headers.get_content_type()}"
            )
        if headers.get_content_subtype() == "digest":
            return "its unsigned Content-Type reads the signed body's parts as mails (digest)"
        declared = str(headers.get_boundary() or "").encode("utf-8", "surrogateescape")
        if declared.rstrip() != own:
            return "its unsigned Content-Type names another boundary than the signed body's own"
    encoding = str(headers.get("content-transfer-encoding") or "").strip().lower()
    if "content-transfer-encoding" in names and encoding not in _IDENTITY:
        return f"its unsigned Content-Transfer-Encoding ({encoding[:40]}) recodes a multipart body"
    return None


def own_boundary(body: bytes, *, preamble: str = "notice") -> bytes | None:
    """The boundary a body delimits its own parts with: its first line that starts with `--` is
    `--B`, and a later line is `--B--` (trailing white space allowed, as RFC 2046 allows it); None
    otherwise. What may stand before it (`preamble`): "none"; "notice", blank lines or a short
    notice naming MIME ("This is a multi-part message in MIME format."), as every generator
    bench/mime_signing.py met writes; "any" (measured there, not used)."""
    lines = body.split(b"\n")
    start = next((i for i, line in enumerate(lines) if line.startswith(b"--")), None)
    if start is None or not _preamble_allowed(b"\n".join(lines[:start]), preamble):
        return None
    first = lines[start].rstrip(b"\r \t")
    boundary = first[2:]
    # Two characters at least, so a text's rule line (`----------`) is never taken for one;
    # Gnus writes `=-=-=`.
    if not _BOUNDARY.fullmatch(boundary) or len(set(boundary)) < 2:
        return None
    close = b"--" + boundary + b"--"
    if not any(line.rstrip(b"\r \t") == close for line in lines[start + 1 :]):
        return None
    return boundary


def encoded_as_base64(body: bytes) -> bool:
    """Whether a body is what a base64 encoder writes: lines of one length (a multiple of 4),
    the last no longer, that decode without a stray character."""
    lines = body.rstrip(b"\r\n").replace(b"\r\n", b"\n").split(b"\n")
    width = len(lines[0])
    if not width or width % 4 or any(len(line) != width for line in lines[:-1]):
        return False
    try:
        return bool(base64.b64decode(b"".join(lines), validate=True))
    except (binascii.Error, ValueError):
        return False


def _preamble_allowed(text: bytes, preamble: str) -> bool:
    text = text.strip()
    if not text or preamble == "any":
        return True
    return preamble == "notice" and len(text) <= MAX_NOTICE and b"mime" in text.lower()


def without(raw: bytes, names: Iterable[str]) -> bytes:
    """`raw` without its header fields named `names` (folded lines included)."""
    wanted = {name.lower().encode() for name in names}
    block = header_block(raw)
    kept: list[bytes] = []
    dropping = False
    for line in block.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t"):
            if not dropping:
                kept.append(line)
            continue
        name = line.split(b":", 1)[0].strip().lower() if b":" in line else None
        dropping = name in wanted
        if not dropping:
            kept.append(line)
    return b"".join(kept) + raw[len(block) :]


def as_plain_text(raw: bytes, headers: Message) -> bytes:
    """`raw` with its Content-Type made `text/plain` (its charset kept)."""
    charset = str(headers.get_content_charset() or "us-ascii").encode("ascii", "replace")
    end = b"\r\n" if b"\r\n" in header_block(raw) else b"\n"
    return b"Content-Type: text/plain; charset=" + charset + end + without(raw, ["content-type"])


def reading(raw: bytes) -> tuple[object, ...]:
    """What a mail's body reads as (its text, HTML and attachments), or why it cannot be read."""
    try:
        body = body_parts(read_message(raw))
    except Exception as error:  # noqa: BLE001  (any failure to read is one reading: "unreadable")
        return ("unreadable", str(error))
    text, html = chosen_body(body.text_parts, body.html_parts)
    return (text, html, tuple(body.attachments), tuple(body.binary))
