"""Reading headers of mail in the wild: encoded words, raw 8-bit bytes, folded lines, dates,
senders (a plain `local@domain` or nothing) and `Authentication-Results`; a malformed header costs
that field, never the mail."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email import errors
from email.header import decode_header, make_header
from email.message import EmailMessage, Message
from email.utils import parsedate_to_datetime
from typing import Any

from chalicelib.mail.charsets import clean_line

# Longer header values are cut before decoding (RFC 2047 decoding is slower than linear).
MAX_HEADER_CHARS = 8000


@dataclass(frozen=True)
class AuthenticationResult:
    """One `Authentication-Results` header: who wrote it and what it said about DMARC."""

    authserv_id: str
    dmarc: str | None


def header_text(message: Message, name: str) -> str | None:
    """A header as text (encoded-words decoded), or None; never raises on a malformed one."""
    values = header_texts(message, name)
    return values[0] if values else None


def header_texts(message: Message, name: str) -> list[str]:
    wanted = name.lower()
    values: list[str] = []
    for key, value in message.raw_items():  # raw: policy.default can raise on malformed values
        if key.lower() == wanted:
            values.append(_unfold(decode_words(str(value)[:MAX_HEADER_CHARS])))
    return values


def decode_words(value: str) -> str:
    """RFC 2047 encoded-words to text; raw 8-bit header bytes were read as UTF-8 if they can be."""
    value = _undo_surrogates(value)
    if "=?" not in value:
        return value
    try:
        return str(make_header(decode_header(value)))
    except (LookupError, UnicodeError, ValueError, AssertionError):
        return value


def _undo_surrogates(value: str) -> str:
    # The bytes parser keeps undecodable header bytes as surrogate escapes; read them as UTF-8,
    # or as windows-1252 when they are not (old clients sent raw Latin-1 headers).
    if not any("\udc80" <= character <= "\udcff" for character in value):
        return value
    data = value.encode("utf-8", "surrogateescape")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("windows-1252", "replace")


def _unfold(value: str) -> str:
    return re.sub(r"\s*\r?\n\s*", " ", value).strip()


ANGLE_ID = re.compile(r"<\s*([^<>\s]+?)\s*>")


def message_id_of(value: str | None) -> str | None:
    if not value:
        return None
    match = ANGLE_ID.search(value)
    if match:
        return match.group(1)
    bare = value.strip().strip("<>").strip()
    return bare if bare and " " not in bare else None


def subject_of(message: Message) -> str:
    return clean_line(header_text(message, "Subject") or "")


def date_of(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed.tzinfo is None:  # "-0000" or no zone: RFC 5322 says UTC-ish, take it as UTC
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        return None


# RFC 5322 dot-atom local part and a host name: no quoted local parts, no address literals, no
# comments. Stricter than the RFC on purpose: a sender must be an address we can compare.
_PLAIN_LOCAL_PART = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
)
_PLAIN_DOMAIN = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}")


MAX_ADDRESS_HEADER_CHARS = 4000


def _address_list(message: EmailMessage, name: str) -> list[Any]:
    """The standard parser's addresses of a header ([] when it cannot read them)."""
    if sum(len(value) for value in header_texts(message, name)) > MAX_ADDRESS_HEADER_CHARS:
        return []  # the standard address parser is slower than linear on long lists
    try:
        header = message[name]
        return list(getattr(header, "addresses", ()) or ())
    except Exception:  # the standard parser has raised on real-world headers
        return []


def _malformed(message: EmailMessage, name: str) -> bool:
    """Whether the standard parser found the header invalid (obsolete syntax is allowed)."""
    try:
        defects = message[name].defects
    except Exception:  # the standard parser has raised on real-world headers
        return True
    return any(not isinstance(defect, errors.ObsoleteHeaderDefect) for defect in defects)


def _plain(address: Any) -> str | None:
    username, domain = str(address.username or ""), str(address.domain or "")
    if _PLAIN_LOCAL_PART.fullmatch(username) and _PLAIN_DOMAIN.fullmatch(domain):
        return f"{username}@{domain}".lower()
    return None


def sender_of(message: EmailMessage) -> tuple[str | None, str | None, str | None]:
    """(address, display name, None), or (None, None, why not)."""
    headers = header_texts(message, "From")
    if not headers:
        return None, None, "the mail has no From header"
    if len(headers) > 1:
        return None, None, "the mail has more than one From header"
    if len(headers[0]) > MAX_ADDRESS_HEADER_CHARS:
        return None, None, "the From header is too long"
    if _malformed(message, "From"):
        # The standard parser reads what it can and drops the rest, so a defective header may
        # yield an address from a display name ("admin@example.org <x@evil.example>").
        return None, None, "the From header is malformed"
    addresses = _address_list(message, "From")
    if len(addresses) != 1:
        if not addresses:
            return None, None, "the From header holds no readable address"
        return None, None, f"the From header names {len(addresses)} addresses, not one"
    [address] = addresses
    plain = _plain(address)
    if plain is None:
        return None, None, "the From address is not a plain name@domain address"
    return plain, str(address.display_name or "") or None, None


def _addresses(message: EmailMessage, name: str) -> list[str]:
    found = []
    for address in _address_list(message, name):
        plain = _plain(address)
        if plain:
            found.append(plain)
    return found


def recipients_of(message: EmailMessage) -> tuple[str, ...]:
    """The addresses the mail was sent to: To, Cc, and Delivered-To (the receiving server's
    record of the mailbox it delivered to: the one a Bcc or a forward leaves out of To and Cc).
    Mail-in looks for a reply key in them (chalicelib/mail/reply_keys.py)."""
    found: list[str] = []
    for address in [
        *_addresses(message, "To"),
        *_addresses(message, "Cc"),
        *_delivered_to(message),
    ]:
        if address not in found:
            found.append(address)
    return tuple(found)


def _delivered_to(message: EmailMessage) -> list[str]:
    """Every Delivered-To's plain address (the standard parser reads it as unstructured text)."""
    from email.utils import getaddresses

    values = header_texts(message, "Delivered-To")
    if sum(len(value) for value in values) > MAX_ADDRESS_HEADER_CHARS:
        return []
    found = []
    for _, address in getaddresses(values):
        username, at, domain = address.rpartition("@")
        if at and _PLAIN_LOCAL_PART.fullmatch(username) and _PLAIN_DOMAIN.fullmatch(domain):
            found.append(f"{username}@{domain}".lower())
    return found


def authentication_results_of(message: Message) -> list[AuthenticationResult]:
    """Every `Authentication-Results` header, top first (RFC 8601 syntax, leniently)."""
    results: list[AuthenticationResult] = []
    for value in header_texts(message, "Authentication-Results"):
        value = _without_comments(value)
        first, _, rest = value.partition(";")
        tokens = first.split()
        if not tokens:
            continue
        dmarc = re.search(r"(?:^|;)\s*dmarc\s*=\s*([A-Za-z]+)", ";" + rest)
        results.append(
            AuthenticationResult(
                authserv_id=tokens[0].lower(), dmarc=dmarc.group(1).lower() if dmarc else None
            )
        )
    return results


def _without_comments(value: str) -> str:
    previous = None
    while previous != value:  # innermost first, so nested comments go too
        previous, value = value, re.sub(r"\([^()]*\)", " ", value)
    return value
