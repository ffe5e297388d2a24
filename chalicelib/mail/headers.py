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
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

from chalicelib.sanitize import BIDI_CONTROLS

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


# An id in angle brackets whose line breaks were made spaces (`<a\u2028b@x>` is `a b@x`).
_SPACED_ANGLE_ID = re.compile(r"<\s*([^<>]+?)\s*>")


def message_id_of(value: str | None) -> str | None:
    """The id of a Message-ID, In-Reply-To or the like, as it is stored: its line breaks made
    spaces and its control characters removed (CONTRACT §8: every stored header value)."""
    if not value:
        return None
    value = clean_line(value)
    match = ANGLE_ID.search(value) or _SPACED_ANGLE_ID.search(value)
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
    """The addresses the mail was sent to: To, Cc, Delivered-To and X-Original-To (the receiving
    server's record of the mailbox it delivered to: the one a Bcc or a forward leaves out of To
    and Cc). Mail-in looks for a reply key in them (mail/threads.py), and for the
    mailbox's own address (a signed mail sent elsewhere is not the signer's post)."""
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
    """Every Delivered-To's and X-Original-To's plain address (the standard parser reads them as
    unstructured text)."""

    values = [*header_texts(message, "Delivered-To"), *header_texts(message, "X-Original-To")]
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


# -----------------------------------------------------------------------------------------------
# Text out of mail bytes: charsets that lie, binary data posing as text, and the characters
# stored text must not hold (XML and UTF-8 refuse them). Never raises on what a mail sends.


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def clean_text(value: str) -> str:
    """Body text without C0 controls (tab and newline kept; CR becomes a line end), lone
    surrogates or noncharacters: none of them is valid in XML, and surrogates not in UTF-8."""
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", value)


# What breaks a line (CONTRACT §8: CR, LF, NEL, U+2028, U+2029, VT, FF, and the separators
# str.splitlines also ends a line at), and the tab: each becomes a space in a one-line text.
_LINE_BREAKS = re.compile("[\t\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
# What a line loses besides: the controls `clean_text` removes, and the bidirectional overrides
# and isolates (sanitize.BIDI_CONTROLS), in one pass.
_NOT_IN_A_LINE = re.compile(
    f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}\ud800-\udfff\ufffe\uffff]"
)


def clean_line(value: str) -> str:
    """One line of text (a subject, a name): tabs and line breaks become spaces (a title holding
    U+2028 would break the mail header it goes into), other controls go, and so do bidirectional
    overrides and isolates (a subject must read as it says)."""
    value = _LINE_BREAKS.sub(" ", value)
    return _NOT_IN_A_LINE.sub("", value).strip()


# Labels whose bytes are in practice windows-1252 (the WHATWG Encoding Standard maps them so):
# "iso-8859-1" mail from Windows carries curly quotes and euro signs in 0x80-0x9F.
_WINDOWS_1252_LABELS = {"iso-8859-1", "latin-1", "latin1", "us-ascii", "ascii", "iso8859-1"}


class _Binary(str):
    """The marker `decoded_text` answers for a part whose bytes are not text."""


BINARY = _Binary()
# How much of a part is looked at to tell text from binary data.
_BINARY_SAMPLE = 65536
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")


def looks_binary(payload: bytes) -> bool:
    """Whether a part's bytes are binary data rather than text in some charset.

    Text in any charset a mail declares is valid UTF-8 or nearly free of C0 control bytes
    (tab, line ends, form feed and escape, which ISO-2022 uses, are text); images, archives and
    executables are neither: their bytes are not UTF-8 and hold NULs or many control bytes.
    """
    sample = payload[:_BINARY_SAMPLE]
    if not sample:
        return False
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as error:
        if error.start >= len(sample) - 3:  # cut inside a character by the sample window
            return False
    controls = len(_CONTROL_BYTES.findall(sample))
    return b"\x00" in sample or controls > len(sample) // 20


def decoded_text(part: Message) -> str | None:
    """The part's text; None when its transfer encoding is broken beyond reading, `BINARY`
    when its bytes are binary data (`looks_binary`)."""
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if any(isinstance(defect, errors.InvalidBase64CharactersDefect) for defect in part.defects):
        return None
    if not isinstance(payload, bytes):
        fallback = part.get_payload()
        payload = fallback.encode("utf-8", "surrogateescape") if isinstance(fallback, str) else b""
    if looks_binary(payload):
        return BINARY
    try:
        declared = part.get_content_charset()
    except Exception:
        declared = None
    return decode_bytes(payload, declared).replace("\r\n", "\n").replace("\r", "\n")


def decode_bytes(payload: bytes, declared_charset: str | None) -> str:
    """Text from bytes whose declared charset may be wrong or unknown; never raises.

    Valid UTF-8 with non-ASCII bytes wins over the label: mislabelled UTF-8 (a Big5 label over
    UTF-8 bytes) is the common lie, and legacy-charset text is almost never valid UTF-8 by chance.
    """
    if payload.isascii():
        return payload.decode("ascii")
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        pass
    label = (declared_charset or "").strip().lower()
    candidates: list[str] = []
    if label in _WINDOWS_1252_LABELS:
        candidates += ["windows-1252", "latin-1"]
    elif label:
        candidates.append(label)
    candidates.append("windows-1252")
    for candidate in candidates:
        try:
            return payload.decode(candidate)
        except (LookupError, UnicodeDecodeError):
            continue
    # Unknown label and bytes that are not windows-1252 either: keep what can be read.
    try:
        return payload.decode(label or "utf-8", "replace")
    except LookupError:
        return payload.decode("utf-8", "replace")


# -----------------------------------------------------------------------------------------------
# What a mail's headers say, read in one place: `parse_mail` asks once.


@dataclass(frozen=True)
class HeaderFacts:
    message_id: str | None
    from_address: str | None
    from_name: str | None
    sender_problem: str | None
    to_addresses: tuple[str, ...]
    subject: str
    date: datetime | None
    in_reply_to: str | None
    references: tuple[str, ...]
    auto_reason: str | None
    bounce_reason: str | None
    is_spam: bool
    authentication_results: tuple[AuthenticationResult, ...]
    # RFC 2919: mail of a mailing list (no auto-reply, but never answered automatically either).
    list_id: str | None


def facts_of(message: EmailMessage) -> HeaderFacts:
    """Every header fact of a mail (each read on its own: a malformed header costs that field)."""
    from_address, from_name, sender_problem = sender_of(message)
    subject = subject_of(message)
    return HeaderFacts(
        message_id=message_id_of(header_text(message, "Message-ID")),
        from_address=from_address,
        from_name=clean_line(from_name) if from_name else None,
        sender_problem=sender_problem,
        to_addresses=recipients_of(message),
        subject=subject,
        date=date_of(header_text(message, "Date")),
        in_reply_to=message_id_of(header_text(message, "In-Reply-To")),
        references=tuple(ANGLE_ID.findall(header_text(message, "References") or "")),
        auto_reason=auto_reason_of(message, subject),
        bounce_reason=bounce_reason_of(message, from_address),
        is_spam=is_spam_mail(message),
        authentication_results=tuple(authentication_results_of(message)),
        list_id=_present(header_text(message, "List-Id")),
    )


def _present(value: str | None) -> str | None:
    """A header's value as one line, "" for one that is there but empty; None when absent."""
    return None if value is None else clean_line(value)


# -----------------------------------------------------------------------------------------------
# Mail that is not a member writing: auto-replies, bounces and spam (rules in
# chalicelib/mail/parse.py's docstring).


_PRECEDENCE_REASONS = {
    "bulk": "Precedence: bulk",
    "junk": "Precedence: junk",
    "auto_reply": "Precedence: auto_reply",
    "list": "Precedence: list (mailing-list mail, not written to the community)",
}
_AUTO_SUBJECT_MARKER = re.compile(r"\[\s*auto[\s_-]*generated\s*\]", re.IGNORECASE)
_AUTO_SUBJECT_PREFIX = re.compile(
    r"^\s*(?:auto|auto[ -]?reply|automatic reply|auto[ -]?response|out of (?:the )?office"
    r"|out of office reply|abwesenheitsnotiz|automatische antwort|automatisch antwoord"
    r"|r[ée]ponse automatique|respuesta autom[áa]tica|risposta automatica|autosvar"
    r"|automatisk svar)\s*:",
    re.IGNORECASE,
)


def auto_reason_of(message: Message, subject: str) -> str | None:
    auto_submitted = header_text(message, "Auto-Submitted")
    if auto_submitted is not None:
        keyword = auto_submitted.split(";")[0].strip().lower()
        if keyword != "no":
            return f"Auto-Submitted: {keyword or '(empty)'}"
    for name in ("X-Autoreply", "X-Autorespond", "X-Autoresponse"):
        if header_text(message, name) is not None:
            return f"{name} header"
    precedence = (header_text(message, "Precedence") or "").strip().lower()
    if precedence in _PRECEDENCE_REASONS:
        return _PRECEDENCE_REASONS[precedence]
    if _AUTO_SUBJECT_MARKER.search(subject) or _AUTO_SUBJECT_PREFIX.match(subject):
        return f"auto-reply subject: {subject[:80]}"
    return None


_DAEMON_SENDER = re.compile(r"^(?:mailer[-_]?daemon|postmaster)@", re.IGNORECASE)


def bounce_reason_of(message: Message, from_address: str | None) -> str | None:
    if message.get_content_type() == "multipart/report":
        report_type = str(message.get_param("report-type", "", header="content-type") or "")
        if report_type.lower() == "delivery-status":
            return "delivery status report (multipart/report)"
    if from_address and _DAEMON_SENDER.match(from_address):
        return f"sent by {from_address.split('@')[0]}"
    return_path = header_text(message, "Return-Path")
    if return_path is not None and return_path.strip() in ("<>", ""):
        return "empty return path"
    if header_text(message, "X-Failed-Recipients") is not None:
        return "X-Failed-Recipients header"
    return None


def is_spam_mail(message: Message) -> bool:
    flag = (header_text(message, "X-Spam-Flag") or "").strip().lower()
    status = (header_text(message, "X-Spam-Status") or "").strip().lower()
    return flag == "yes" or status.startswith("yes")
