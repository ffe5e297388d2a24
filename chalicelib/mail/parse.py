"""Turning one raw mail into the facts mail-in needs (CONTRACT §9), without ever crashing on it.

Mail in the wild lies: charsets are mislabelled, headers are malformed, multiparts lose their
boundaries. Every field here is read on its own with a fallback, so one broken header costs that
field, not the mail. Only input that holds no mail at all raises `MailParseError`.

Classification rules (decided here, used by ingestion to ignore mail):

* Auto-reply (`is_auto_reply`, `auto_reason`):
  - `Auto-Submitted` present with any value but `no` (RFC 3834);
  - `X-Autoreply`, `X-Autorespond` or `X-Autoresponse` present (vacation scripts, cPanel, Zimbra);
  - `Precedence: bulk`, `junk`, `auto_reply`, and also `list`. RFC 3834 does not call list mail
    an auto-reply, but a community's mailbox receiving mailing-list traffic is not a member
    writing to the community: importing every list post as a post (or looping our own
    notifications back through a list) is not what an admin expects. The corpus file
    `auto_generated_precedence.eml` (from Discourse, which decided the same) carries only that
    header, so we treat it as automatic and say "mailing-list" in the reason.
  - a Subject marker `[AUTO GENERATED]` / `[AUTO-GENERATED]` anywhere, or a subject that starts
    with a well-known out-of-office prefix followed by a colon ("Automatic reply:", "Auto:",
    "Out of Office:", "Abwesenheitsnotiz:", ...). The colon keeps "Out of office party" posts in.
* Bounce (`is_bounce`, `bounce_reason`): `multipart/report; report-type=delivery-status`, a
  sender `MAILER-DAEMON@…` or `postmaster@…`, an empty return path (`Return-Path: <>`, which
  RFC 5321 reserves for notifications), or an `X-Failed-Recipients` header.
* Spam (`is_spam`): SpamAssassin's `X-Spam-Flag: YES` (or `X-Spam-Status: Yes, …`).

What raises `MailParseError` (the mail is rejected "cannot be read: …", never posted):
* no header block at all (binary junk, an empty file);
* MIME nested deeper than `MAX_MIME_DEPTH` or with more than `MAX_MIME_PARTS` parts (a bomb:
  the standard parser recurses per level, and every part costs time);
* a multipart without a usable boundary whose body still holds MIME part headers (raw MIME
  would be posted as text); a multipart whose boundary is merely missing from a plain body, as
  Apple Mail sends, is read as that text;
* text parts that all fail to decode (base64 with characters outside its alphabet).
A mail refused so still has headers worth logging: `headers_of` reads the Message-ID, the sender
and the Subject from the top header block alone, so the log entry can be found by them.

Body (`text`, `html`, `body_problem`): the sender's inline text/plain parts, else their HTML.
When the sender wrote nothing themselves and forwarded a mail (`message/rfc822`), the forwarded
mail's text is the text (behind a "Forwarded message" line with its From and Subject): that is
what they meant to share. A forwarded mail beside text of their own stays an attachment.
`body_problem` says why there is nothing to import: no text at all (only attachments, or an
empty body), or a "text" part whose bytes are binary (an image sent as the whole mail, bytes
that are neither UTF-8 nor free of control bytes); mail-in rejects such a mail with that reason.

Sender (`from_address`): the standard parser's reading of `From`, exactly one mailbox with a
plain `local@domain` addr-spec; anything else leaves it None and says why in `sender_problem`.
The raw header text is never scanned for an address: a display name is text the sender chose
(`"<admin@example.org>" <"x y"@evil.example>`), not an identity.

Every text field is free of C0 control characters (tab and newline kept in body text), lone
surrogates and U+FFFE/U+FFFF: what is stored from mail must be valid in XML (RSS) and UTF-8.
"""

from __future__ import annotations

import hashlib
import html as html_lib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email import errors, policy
from email.header import decode_header, make_header
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import parsedate_to_datetime
from typing import Any

# ---------------------------------------------------------------------------------------------
# Result


MAX_MIME_DEPTH = 20
MAX_MIME_HEADER_CHARS = 4000
# Longer header values are cut before decoding (RFC 2047 decoding is slower than linear).
MAX_HEADER_CHARS = 8000
MAX_MIME_PARTS = 200  # the standard parser slows down with the square of the part count


class MailParseError(ValueError):
    """The input cannot be read as a mail (rules in the module docstring); the message is plain
    words, fit for the mail-in log."""


@dataclass(frozen=True)
class Attachment:
    """A part that is not imported (files, inline images, attached mails, delivery reports)."""

    filename: str | None
    content_type: str
    size: int


@dataclass(frozen=True)
class AuthenticationResult:
    """One `Authentication-Results` header: who wrote it and what it said about DMARC."""

    authserv_id: str
    dmarc: str | None


@dataclass(frozen=True)
class ParsedMail:
    message_id: str | None
    content_hash: str
    size: int
    headers_size: int
    from_address: str | None
    from_name: str | None
    sender_problem: str | None
    to_addresses: tuple[str, ...]
    subject: str
    date: datetime | None
    in_reply_to: str | None
    references: tuple[str, ...]
    text: str
    html: str
    attachments: tuple[Attachment, ...]
    is_auto_reply: bool
    auto_reason: str | None
    is_bounce: bool
    bounce_reason: str | None
    is_spam: bool
    authentication_results: tuple[AuthenticationResult, ...]
    # Why the mail has nothing to post (rules in the module docstring); None when it has text.
    body_problem: str | None = None

    @property
    def dedup_key(self) -> str:
        """What makes a mail the same mail (CONTRACT §9): its Message-ID, else its content."""
        if self.message_id:
            return f"message-id:{self.message_id}"
        return f"sha256:{self.content_hash}"


def dmarc_failed(parsed: ParsedMail, authserv_id: str) -> bool:
    """Whether OUR receiving server said DMARC failed.

    Only the topmost `Authentication-Results` header carrying our authserv-id counts: our MTA
    prepends its header above everything the mail arrived with, so any header lower down,
    whatever id it names, may have been written by the sender (RFC 8601 §5).
    """
    wanted = authserv_id.strip().lower()
    for result in parsed.authentication_results:
        if result.authserv_id == wanted:
            return result.dmarc == "fail"
    return False


# ---------------------------------------------------------------------------------------------
# Entry point


def parse_mail(raw: bytes) -> ParsedMail:
    """Parse one raw RFC 5322 mail (as fetched over POP3 or read from a file)."""
    if not isinstance(raw, bytes | bytearray):
        raise MailParseError(f"a mail is bytes, not {type(raw).__name__}")
    raw = bytes(raw)
    try:
        message = _read_message(raw)
        if not message.keys():
            raise MailParseError("no mail headers found")
        _check_structure(message)
        return _parsed(raw, message)
    except MailParseError:
        raise
    except RecursionError as error:
        raise MailParseError("MIME parts nested too deeply") from error
    except Exception as error:  # a parser bug must reject this one mail, not the mailbox run
        raise MailParseError(f"the mail is malformed ({type(error).__name__})") from error


def _read_message(raw: bytes) -> EmailMessage:
    # Some exports start with blank lines, which a strict parser reads as "no headers at all".
    # An mbox "From " line is read by the parser as the unix-from and needs nothing here.
    content = raw.lstrip(b"\r\n\t ")
    # Cheap early answers for MIME bombs: the standard parser recurses per level, and its time
    # grows faster than the number of parts.
    if len(_MIME_NESTING_HINT.findall(content, 0, _HINT_WINDOW)) > MAX_MIME_DEPTH:
        _check_boundary_nesting(content)
    _check_boundary_count(content)
    # The quick parser first: the standard one builds header objects whose parsing is slower
    # than linear in a header's length (a Content-Type of 20,000 parameters takes half a minute).
    _check_structure(BytesParser(policy=policy.compat32).parsebytes(content))
    message = BytesParser(policy=policy.default).parsebytes(content)
    assert isinstance(message, EmailMessage)
    return message


_MIME_NESTING_HINT = re.compile(rb"(?im)^[ \t]*content-type:[ \t]*multipart/")
_HINT_WINDOW = 4 * 1024 * 1024


def _check_boundary_nesting(content: bytes) -> None:
    """Reject before parsing when multipart headers open more levels than allowed.

    Counts multipart headers that come before the first closing boundary: in a MIME tree each
    of those is one level deeper than the one before.
    """
    depth = 0
    for line in content.split(b"\n"):
        stripped = line.strip()
        if _MIME_NESTING_HINT.match(stripped):
            depth += 1
            if depth > MAX_MIME_DEPTH:
                raise MailParseError(f"MIME parts nested deeper than {MAX_MIME_DEPTH} levels")
        elif stripped.startswith(b"--") and stripped.endswith(b"--") and len(stripped) > 4:
            return


_BOUNDARY_PARAMETER = re.compile(rb'(?i)\bboundary\s*=\s*"?([^";\r\n]{1,200})')


def _check_boundary_count(content: bytes) -> None:
    """Reject before parsing when the declared boundaries open more parts than allowed."""
    boundaries = set(_BOUNDARY_PARAMETER.findall(content))
    if not boundaries:
        return
    if len(boundaries) > MAX_MIME_PARTS:
        raise MailParseError(f"more than {MAX_MIME_PARTS} MIME parts")
    delimiters = sum(content.count(b"\n--" + boundary.strip()) for boundary in boundaries)
    # One opening line per part, one closing line per multipart.
    if delimiters > MAX_MIME_PARTS + len(boundaries):
        raise MailParseError(f"more than {MAX_MIME_PARTS} MIME parts")


def _check_structure(message: Message) -> None:
    """MIME depth and part count within bounds (walked without recursion)."""
    stack: list[tuple[Message, int]] = [(message, 1)]
    parts = 0
    while stack:
        part, depth = stack.pop()
        parts += 1
        if depth > MAX_MIME_DEPTH:
            raise MailParseError(f"MIME parts nested deeper than {MAX_MIME_DEPTH} levels")
        if parts > MAX_MIME_PARTS:
            raise MailParseError(f"more than {MAX_MIME_PARTS} MIME parts")
        for name, value in part.raw_items():
            if name.lower().startswith("content-") and len(str(value)) > MAX_MIME_HEADER_CHARS:
                raise MailParseError(
                    f"a {name} header longer than {MAX_MIME_HEADER_CHARS} characters"
                )
        if part.is_multipart():
            payload = part.get_payload()
            if isinstance(payload, list):
                stack.extend((child, depth + 1) for child in payload if isinstance(child, Message))


def _parsed(raw: bytes, message: EmailMessage) -> ParsedMail:
    from_address, from_name, sender_problem = _sender(message)
    subject = _subject(message)
    body = _body_parts(message)
    text, html = _chosen_body(body.text_parts, body.html_parts)
    attachments = body.attachments
    if not text.strip() and body.forwarded:
        forwarded, text, html = _forwarded_body(body.forwarded[0])
        if text.strip():
            attachments = [a for a in attachments if a is not forwarded]
    text, html = clean_text(text), clean_text(html)
    auto_reason = _auto_reason(message, subject)
    bounce_reason = _bounce_reason(message, from_address)
    return ParsedMail(
        message_id=_message_id(_header(message, "Message-ID")),
        content_hash=content_hash(raw),
        size=len(raw),
        headers_size=_headers_size(raw),
        from_address=from_address,
        from_name=clean_line(from_name) if from_name else None,
        sender_problem=sender_problem,
        to_addresses=_recipients(message),
        subject=subject,
        date=_date(_header(message, "Date")),
        in_reply_to=_message_id(_header(message, "In-Reply-To")),
        references=tuple(_ANGLE_ID.findall(_header(message, "References") or "")),
        text=text,
        html=html,
        attachments=tuple(attachments),
        is_auto_reply=auto_reason is not None,
        auto_reason=auto_reason,
        is_bounce=bounce_reason is not None,
        bounce_reason=bounce_reason,
        is_spam=_is_spam(message),
        authentication_results=tuple(_authentication_results(message)),
        body_problem=_body_problem(text, body, attachments),
    )


@dataclass(frozen=True)
class ReadableHeaders:
    """What the top header block of a mail `parse_mail` refused still tells its log entry."""

    message_id: str | None
    from_address: str | None
    subject: str | None


# The header block of a mail is small; a refused mail's body is never read for these.
_HEADER_WINDOW = 65536


def headers_of(raw: bytes) -> ReadableHeaders:
    """The Message-ID, sender (a plain address, by the same rule as `parse_mail`) and Subject
    of a mail whose body could not be read; each None when that header cannot be read."""
    from email.parser import BytesHeaderParser

    content = bytes(raw).lstrip(b"\r\n\t ")[:_HEADER_WINDOW]
    try:
        headers = BytesHeaderParser(policy=policy.default).parsebytes(content)
    except Exception:  # no header block worth reading
        return ReadableHeaders(None, None, None)
    assert isinstance(headers, EmailMessage)
    values: list[str | None] = []
    for read in (
        lambda: _message_id(_header(headers, "Message-ID")),
        lambda: _sender(headers)[0],
        lambda: clean_line(_header(headers, "Subject") or "") or None,
    ):
        try:
            values.append(read())
        except Exception:  # one unreadable header costs that field only
            values.append(None)
    return ReadableHeaders(*values)


def content_hash(raw: bytes) -> str:
    """sha256 of the mail with LF line ends and one final LF, so the same mail hashes the same
    whether it was stored with LF, sent over POP3 with CRLF, or lost its last line end."""
    normalised = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n").strip(b"\n") + b"\n"
    return hashlib.sha256(normalised).hexdigest()


def _headers_size(raw: bytes) -> int:
    content = raw.lstrip(b"\r\n\t ")
    match = re.search(rb"\r?\n\r?\n", content)
    return match.end() if match else len(content)


# ---------------------------------------------------------------------------------------------
# Headers


def _header(message: Message, name: str) -> str | None:
    """A header as text (encoded-words decoded), or None; never raises on a malformed one."""
    values = _headers(message, name)
    return values[0] if values else None


def _headers(message: Message, name: str) -> list[str]:
    wanted = name.lower()
    values: list[str] = []
    for key, value in message.raw_items():  # raw: policy.default can raise on malformed values
        if key.lower() == wanted:
            values.append(_unfold(_decode_words(str(value)[:MAX_HEADER_CHARS])))
    return values


def _decode_words(value: str) -> str:
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


_ANGLE_ID = re.compile(r"<\s*([^<>\s]+?)\s*>")


def _message_id(value: str | None) -> str | None:
    if not value:
        return None
    match = _ANGLE_ID.search(value)
    if match:
        return match.group(1)
    bare = value.strip().strip("<>").strip()
    return bare if bare and " " not in bare else None


def _subject(message: Message) -> str:
    return clean_line(_header(message, "Subject") or "")


_CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_CONTROL_IN_LINE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def clean_text(value: str) -> str:
    """Body text without C0 controls (tab and newline kept; CR becomes a line end), lone
    surrogates or noncharacters: none of them is valid in XML, and surrogates not in UTF-8."""
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL_IN_TEXT.sub("", value)


def clean_line(value: str) -> str:
    """One line of text (a subject, a name): tabs and line ends become spaces, other controls go."""
    value = re.sub("[\t\r\n]+", " ", value)
    return _CONTROL_IN_LINE.sub("", value).strip()


def _date(value: str | None) -> datetime | None:
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
    if sum(len(value) for value in _headers(message, name)) > MAX_ADDRESS_HEADER_CHARS:
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


def _sender(message: EmailMessage) -> tuple[str | None, str | None, str | None]:
    """(address, display name, None), or (None, None, why not)."""
    headers = _headers(message, "From")
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


def _recipients(message: EmailMessage) -> tuple[str, ...]:
    found: list[str] = []
    for name in ("To", "Cc"):
        for address in _addresses(message, name):
            if address not in found:
                found.append(address)
    return tuple(found)


def _authentication_results(message: Message) -> list[AuthenticationResult]:
    """Every `Authentication-Results` header, top first (RFC 8601 syntax, leniently)."""
    results: list[AuthenticationResult] = []
    for value in _headers(message, "Authentication-Results"):
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


# ---------------------------------------------------------------------------------------------
# Classification (rules in the module docstring)

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


def _auto_reason(message: Message, subject: str) -> str | None:
    auto_submitted = _header(message, "Auto-Submitted")
    if auto_submitted is not None:
        keyword = auto_submitted.split(";")[0].strip().lower()
        if keyword != "no":
            return f"Auto-Submitted: {keyword or '(empty)'}"
    for name in ("X-Autoreply", "X-Autorespond", "X-Autoresponse"):
        if _header(message, name) is not None:
            return f"{name} header"
    precedence = (_header(message, "Precedence") or "").strip().lower()
    if precedence in _PRECEDENCE_REASONS:
        return _PRECEDENCE_REASONS[precedence]
    if _AUTO_SUBJECT_MARKER.search(subject) or _AUTO_SUBJECT_PREFIX.match(subject):
        return f"auto-reply subject: {subject[:80]}"
    return None


_DAEMON_SENDER = re.compile(r"^(?:mailer[-_]?daemon|postmaster)@", re.IGNORECASE)


def _bounce_reason(message: Message, from_address: str | None) -> str | None:
    if message.get_content_type() == "multipart/report":
        report_type = str(message.get_param("report-type", "", header="content-type") or "")
        if report_type.lower() == "delivery-status":
            return "delivery status report (multipart/report)"
    if from_address and _DAEMON_SENDER.match(from_address):
        return f"sent by {from_address.split('@')[0]}"
    return_path = _header(message, "Return-Path")
    if return_path is not None and return_path.strip() in ("<>", ""):
        return "empty return path"
    if _header(message, "X-Failed-Recipients") is not None:
        return "X-Failed-Recipients header"
    return None


def _is_spam(message: Message) -> bool:
    flag = (_header(message, "X-Spam-Flag") or "").strip().lower()
    status = (_header(message, "X-Spam-Status") or "").strip().lower()
    return flag == "yes" or status.startswith("yes")


# ---------------------------------------------------------------------------------------------
# Body


@dataclass
class _Body:
    text_parts: list[str]
    html_parts: list[str]
    attachments: list[Attachment]
    # Forwarded mails (message/rfc822), with their attachment entries, in mail order.
    forwarded: list[tuple[Attachment, Message]]
    binary: list[str]  # content types of "text" parts whose bytes are binary


def _body_parts(message: Message) -> _Body:
    """Inline text/plain parts, inline text/html parts and everything else, in mail order.

    Attached mails (message/*) are not opened here: their text is not the sender's text
    (`_forwarded_body` reads a forwarded one when the sender wrote nothing else).
    """
    text_parts: list[str] = []
    html_parts: list[str] = []
    attachments: list[Attachment] = []
    forwarded: list[tuple[Attachment, Message]] = []
    undecodable: list[str] = []
    binary: list[str] = []

    def visit(part: Message) -> None:
        content_type = part.get_content_type()
        if part.is_multipart() and not content_type.startswith("message/"):
            for child in part.get_payload():
                if isinstance(child, Message):
                    visit(child)
            return
        filename = _filename(part)
        is_attachment = part.get_content_disposition() == "attachment" or filename is not None
        if part.get_content_maintype() == "multipart":
            # A multipart that lost its boundaries reaches us as one text blob: read it as
            # text when it is text (Apple Mail), reject it when it is raw MIME.
            _check_lost_boundary(part)
            content_type = "text/plain"
        if content_type in ("text/plain", "text/html") and not is_attachment:
            decoded = _decoded_text(part)
            if decoded is None:
                undecodable.append(content_type)
                return
            if decoded is BINARY:
                binary.append(content_type)
                return
            (text_parts if content_type == "text/plain" else html_parts).append(decoded)
            return
        attachment = Attachment(
            filename=filename, content_type=content_type, size=_payload_size(part)
        )
        attachments.append(attachment)
        if content_type == "message/rfc822":
            inner = part.get_payload()
            if isinstance(inner, list) and inner and isinstance(inner[0], Message):
                forwarded.append((attachment, inner[0]))

    visit(message)
    if undecodable and not text_parts and not html_parts:
        raise MailParseError("its text cannot be decoded (broken base64)")
    return _Body(text_parts, html_parts, attachments, forwarded, binary)


def _forwarded_body(forwarded: tuple[Attachment, Message]) -> tuple[Attachment, str, str]:
    """(its attachment entry, text, HTML) of a forwarded mail, behind a line saying so."""
    attachment, inner = forwarded
    body = _body_parts(inner)
    text, html = _chosen_body(body.text_parts, body.html_parts)
    if not text.strip() and body.forwarded:  # a forward of a forward (depth is bounded)
        _, text, html = _forwarded_body(body.forwarded[0])
    if not text.strip():
        return attachment, "", ""
    lines = ["---------- Forwarded message ----------"]
    for name in ("From", "Date", "Subject"):
        value = clean_line(_header(inner, name) or "")
        if value:
            lines.append(f"{name}: {value}")
    heading = "\n".join(lines)
    return attachment, f"{heading}\n\n{text}", text_to_html(heading) + html


def _body_problem(text: str, body: _Body, attachments: list[Attachment]) -> str | None:
    if text.strip():
        return None
    if body.binary:
        return f"its {body.binary[0]} part is binary data, not text"
    if attachments:
        names = ", ".join(a.filename or a.content_type for a in attachments)
        return f"the mail has no text, only attachments: {names}"[:300]
    return "the mail has no text"


_PART_HEADER = re.compile(r"(?im)^content-(?:type|transfer-encoding|disposition)[ \t]*:")


def _check_lost_boundary(part: Message) -> None:
    boundary = part.get_boundary()
    payload = part.get_payload()
    text = payload if isinstance(payload, str) else ""
    if not boundary:
        raise MailParseError(f"a {part.get_content_type()} part without a boundary")
    if _PART_HEADER.search(text):
        raise MailParseError(f"a {part.get_content_type()} part whose boundary never appears")


def _filename(part: Message) -> str | None:
    try:
        filename = part.get_filename()
    except Exception:  # malformed parameters
        filename = None
    if not filename:
        # Non-standard but common: an encoded-word as the whole (unquoted) parameter value,
        # which the standard parser gives up on.
        for name, parameter in (("Content-Disposition", "filename"), ("Content-Type", "name")):
            raw_value = next(
                (value for key, value in part.raw_items() if key.lower() == name.lower()), ""
            )
            match = re.search(rf'\b{parameter}\*?\s*=\s*"?([^";\r\n]+)"?', str(raw_value))
            if match:
                filename = match.group(1)
                break
    if not filename:
        return None
    return _decode_words(str(filename)).strip() or None


def _payload_size(part: Message) -> int:
    try:
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):  # message/* parts hold messages, not bytes
            payload = part.as_bytes()
    except Exception:  # a size is not worth rejecting a mail for
        return 0
    return len(payload)


# Labels whose bytes are in practice windows-1252 (the WHATWG Encoding Standard maps them so):
# "iso-8859-1" mail from Windows carries curly quotes and euro signs in 0x80-0x9F.
_WINDOWS_1252_LABELS = {"iso-8859-1", "latin-1", "latin1", "us-ascii", "ascii", "iso8859-1"}


class _Binary(str):
    """The marker `_decoded_text` answers for a part whose bytes are not text."""


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


def _decoded_text(part: Message) -> str | None:
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


def _chosen_body(text_parts: list[str], html_parts: list[str]) -> tuple[str, str]:
    """(plain text, sanitised HTML): the text/plain parts when there are any, else the HTML."""
    text = "\n\n".join(part.strip("\n") for part in text_parts if part.strip())
    if text:
        return text, text_to_html(text)
    markup = "\n".join(html_parts)
    if not markup.strip():
        return "", ""
    return html_to_text(markup), sanitise_html(markup)


def text_to_html(text: str) -> str:
    """Plain text as escaped HTML paragraphs: blank lines split paragraphs, lines get <br>."""
    paragraphs = re.split(r"\n\s*\n", text.replace("\r\n", "\n").strip())
    return "".join(
        "<p>" + html_lib.escape(paragraph.strip("\n")).replace("\n", "<br>") + "</p>"
        for paragraph in paragraphs
        if paragraph.strip()
    )


def sanitise_html(markup: str) -> str:
    """Mail HTML made safe to show: no scripts, styles, event handlers or javascript: links.

    Only http(s) and mailto links survive: cid: and data: images point nowhere once imported.
    """
    import nh3  # import here: only HTML-only mails need it

    return nh3.clean(
        markup,
        clean_content_tags={"script", "style", "head", "title"},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    ).strip()


_BLOCK_END = re.compile(
    r"<\s*(?:br\s*/?|hr\s*/?|/\s*(?:p|div|li|tr|h[1-6]|blockquote|pre|table|ul|ol))\s*>",
    re.IGNORECASE,
)


def html_to_text(markup: str) -> str:
    """Readable text of mail HTML (line breaks kept at block ends), for search and trimming."""
    import nh3

    # Newlines go next to the tags, not instead of them: removing closing tags would change how
    # the HTML parser nests (and reorders) table content.
    with_breaks = _BLOCK_END.sub(lambda tag: tag.group(0) + "\n", markup)
    without_tags = nh3.clean(
        with_breaks, tags=set(), clean_content_tags={"script", "style", "head", "title"}
    )
    text = html_lib.unescape(without_tags).replace("\xa0", " ")
    # Source indentation and runs of spaces mean nothing in HTML (outside <pre>, a rare case).
    lines = [" ".join(line.split()) for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
