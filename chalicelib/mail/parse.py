"""Turning one raw mail into the facts mail-in needs (CONTRACT §9), without ever crashing on it:
its bytes read once, as the signature check reads them (last: one reading); its MIME tree walked,
bombs (depth, part count, giant parameters) refused before and while parsing; then the sender's
text and HTML parts, the attachments, and a forwarded mail's text when the sender wrote none; and
its bodies as HTML and as text (plain text made into paragraphs, mail HTML made safe to show, HTML
read back as text for search and trimming). Its headers are read by `chalicelib/mail/headers.py`.

Mail in the wild lies: charsets are mislabelled, headers are malformed, multiparts lose their
boundaries. Every field here is read on its own with a fallback, so one broken header costs that
field, not the mail. Only input that holds no mail at all raises `MailParseError`.

Classification rules (read with the other headers, `chalicelib/mail/headers.py` `facts_of`;
used by ingestion to ignore mail):

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
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesHeaderParser, BytesParser

import dkim
import nh3

from chalicelib.mail.headers import (
    BINARY,
    AuthenticationResult,
    HeaderFacts,
    clean_line,
    clean_text,
    decode_bytes,
    decode_words,
    decoded_text,
    facts_of,
    header_text,
    looks_binary,
    message_id_of,
    sender_of,
)

# Callers import these from here (the mail's facts and the text helpers in one place).
__all__ = [
    "Attachment",
    "AuthenticationResult",
    "MailParseError",
    "ParsedMail",
    "ReadableHeaders",
    "clean_line",
    "clean_text",
    "content_hash",
    "decode_bytes",
    "dmarc_failed",
    "headers_of",
    "html_to_text",
    "looks_binary",
    "parse_mail",
    "sanitise_html",
    "text_to_html",
]


MAX_MIME_DEPTH = 20
MAX_MIME_HEADER_CHARS = 4000
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
class ParsedMail(HeaderFacts):
    """A mail's header facts (`HeaderFacts`, read by `facts_of`) and what its body holds."""

    content_hash: str
    size: int
    text: str
    html: str
    attachments: tuple[Attachment, ...]
    is_auto_reply: bool
    is_bounce: bool
    # Why the mail has nothing to post (rules in the module docstring); None when it has text.
    body_problem: str | None = None
    # Why its header block reads differently to a signature check (`reading_problem`, last):
    # no signature, nor a receiving server's verdict on it, is about what is read here.
    reading_problem: str | None = None

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
    return dmarc_result(parsed, authserv_id) == "fail"


def dmarc_result(parsed: ParsedMail, authserv_id: str) -> str | None:
    """What OUR receiving server said of DMARC (the topmost header with its id, as above)."""
    wanted = authserv_id.strip().lower()
    for result in parsed.authentication_results:
        if result.authserv_id == wanted:
            return result.dmarc
    return None


# ---------------------------------------------------------------------------------------------
# Entry point


def parse_mail(raw: bytes) -> ParsedMail:
    """Parse one raw RFC 5322 mail (as fetched over POP3 or read from a file)."""
    if not isinstance(raw, bytes | bytearray):
        raise MailParseError(f"a mail is bytes, not {type(raw).__name__}")
    raw = bytes(raw)
    try:
        message = read_message(raw)
        if not message.keys():
            raise MailParseError("no mail headers found")
        check_structure(message)
        return _parsed(raw, message)
    except MailParseError:
        raise
    except RecursionError as error:
        raise MailParseError("MIME parts nested too deeply") from error
    except Exception as error:  # a parser bug must reject this one mail, not the mailbox run
        raise MailParseError(f"the mail is malformed ({type(error).__name__})") from error


def _parsed(raw: bytes, message: EmailMessage) -> ParsedMail:
    said = facts_of(message)  # the headers, each read on its own (mail/headers.py)
    body = body_parts(message)
    text, html = chosen_body(body.text_parts, body.html_parts)
    attachments = body.attachments
    if not text.strip() and body.forwarded:
        forwarded, text, html = forwarded_body(body.forwarded[0])
        if text.strip():
            attachments = [a for a in attachments if a is not forwarded]
    text, html = clean_text(text), clean_text(html)
    return ParsedMail(
        **vars(said),
        content_hash=content_hash(raw),
        size=len(raw),
        text=text,
        html=html,
        attachments=tuple(attachments),
        is_auto_reply=said.auto_reason is not None,
        is_bounce=said.bounce_reason is not None,
        body_problem=body_problem_of(text, body, attachments),
        reading_problem=reading_problem(raw),
    )


def read_message(raw: bytes) -> EmailMessage:
    # Some exports start with blank lines, which a strict parser reads as "no headers at all";
    # the signature check reads the same bytes (`mail_bytes`, below). An mbox "From "
    # line is read by the parser as the unix-from and needs nothing here.
    content = blank_lines_blank(mail_bytes(raw))
    # Cheap early answers for MIME bombs: the standard parser recurses per level, and its time
    # grows faster than the number of parts.
    if len(_MIME_NESTING_HINT.findall(content, 0, _HINT_WINDOW)) > MAX_MIME_DEPTH:
        _check_boundary_nesting(content)
    _check_boundary_count(content)
    # The quick parser first: the standard one builds header objects whose parsing is slower
    # than linear in a header's length (a Content-Type of 20,000 parameters takes half a minute).
    check_structure(BytesParser(policy=policy.compat32).parsebytes(content))
    message = BytesParser(policy=policy.default).parsebytes(content)
    assert isinstance(message, EmailMessage)
    return message


# A body line of white space only: relaxed body canonicalisation (RFC 6376 §3.4.4) reads it as
# a blank line, and the parser as the continuation of a part's last header.
_WHITE_LINE = re.compile(rb"(?m)^[ \t]+(\r?)$")


def blank_lines_blank(content: bytes) -> bytes:
    """`content` with every body line of white space only made empty, as relaxed body
    canonicalisation reads it: the blank line after a part's headers turned into spaces keeps
    the signature, and the parser would then read the part's leading `Word: …` lines as headers
    and drop them from its text. The header block is left as it is (one reading compares it)."""
    head = header_block(content)
    body = content[len(head) :]
    if b" " not in body and b"\t" not in body:
        return content
    return head + _WHITE_LINE.sub(rb"\1", body)


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


def check_structure(message: Message) -> None:
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


@dataclass
class Body:
    text_parts: list[str]
    html_parts: list[str]
    attachments: list[Attachment]
    # Forwarded mails (message/rfc822), with their attachment entries, in mail order.
    forwarded: list[tuple[Attachment, Message]]
    binary: list[str]  # content types of "text" parts whose bytes are binary


def body_parts(message: Message) -> Body:
    """Inline text/plain parts, inline text/html parts and everything else, in mail order.

    Attached mails (message/*) are not opened here: their text is not the sender's text
    (`forwarded_body` reads a forwarded one when the sender wrote nothing else).
    """
    found = _BodyWalk()
    found.visit(message)
    if found.undecodable and not found.text_parts and not found.html_parts:
        raise MailParseError("its text cannot be decoded (broken base64)")
    return Body(
        found.text_parts, found.html_parts, found.attachments, found.forwarded, found.binary
    )


@dataclass
class _BodyWalk:
    """What `body_parts` finds, part by part."""

    text_parts: list[str] = field(default_factory=list)
    html_parts: list[str] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    forwarded: list[tuple[Attachment, Message]] = field(default_factory=list)
    undecodable: list[str] = field(default_factory=list)
    binary: list[str] = field(default_factory=list)

    def visit(self, part: Message) -> None:
        content_type = part.get_content_type()
        if part.is_multipart() and not content_type.startswith("message/"):
            for child in part.get_payload():
                if isinstance(child, Message):
                    self.visit(child)
            return
        filename = _filename(part)
        is_attachment = part.get_content_disposition() == "attachment" or filename is not None
        if part.get_content_maintype() == "multipart":
            # A multipart that lost its boundaries reaches us as one text blob: read it as
            # text when it is text (Apple Mail), reject it when it is raw MIME.
            _check_lost_boundary(part)
            content_type = "text/plain"
        if content_type in ("text/plain", "text/html") and not is_attachment:
            self._text(part, content_type)
        else:
            self._attachment(part, filename, content_type)

    def _text(self, part: Message, content_type: str) -> None:
        decoded = decoded_text(part)
        if decoded is None:
            self.undecodable.append(content_type)
        elif decoded is BINARY:
            self.binary.append(content_type)
        else:
            (self.text_parts if content_type == "text/plain" else self.html_parts).append(decoded)

    def _attachment(self, part: Message, filename: str | None, content_type: str) -> None:
        attachment = Attachment(
            filename=filename, content_type=content_type, size=_payload_size(part)
        )
        self.attachments.append(attachment)
        if content_type == "message/rfc822":
            inner = part.get_payload()
            if isinstance(inner, list) and inner and isinstance(inner[0], Message):
                self.forwarded.append((attachment, inner[0]))


def forwarded_body(forwarded: tuple[Attachment, Message]) -> tuple[Attachment, str, str]:
    """(its attachment entry, text, HTML) of a forwarded mail, behind a line saying so."""
    attachment, inner = forwarded
    body = body_parts(inner)
    text, html = chosen_body(body.text_parts, body.html_parts)
    if not text.strip() and body.forwarded:  # a forward of a forward (depth is bounded)
        _, text, html = forwarded_body(body.forwarded[0])
    if not text.strip():
        return attachment, "", ""
    lines = ["---------- Forwarded message ----------"]
    for name in ("From", "Date", "Subject"):
        value = clean_line(header_text(inner, name) or "")
        if value:
            lines.append(f"{name}: {value}")
    heading = "\n".join(lines)
    return attachment, f"{heading}\n\n{text}", text_to_html(heading) + html


def body_problem_of(text: str, body: Body, attachments: list[Attachment]) -> str | None:
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
    return decode_words(str(filename)).strip() or None


def _payload_size(part: Message) -> int:
    try:
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):  # message/* parts hold messages, not bytes
            payload = part.as_bytes()
    except Exception:  # a size is not worth rejecting a mail for
        return 0
    return len(payload)


# -----------------------------------------------------------------------------------------------
# Mail bodies as HTML and as text: plain text made into paragraphs, mail HTML made safe to show,
# and HTML read back as text (for search and trimming).


def chosen_body(text_parts: list[str], html_parts: list[str]) -> tuple[str, str]:
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

    return nh3.clean(
        markup,
        clean_content_tags={"script", "style", "head", "title"},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    ).strip()


_HTML_BLOCK_END = re.compile(
    r"<\s*(?:br\s*/?|hr\s*/?|/\s*(?:p|div|li|tr|h[1-6]|blockquote|pre|table|ul|ol))\s*>",
    re.IGNORECASE,
)


def html_to_text(markup: str) -> str:
    """Readable text of mail HTML (line breaks kept at block ends), for search and trimming."""

    # Newlines go next to the tags, not instead of them: removing closing tags would change how
    # the HTML parser nests (and reorders) table content.
    with_breaks = _HTML_BLOCK_END.sub(lambda tag: tag.group(0) + "\n", markup)
    without_tags = nh3.clean(
        with_breaks, tags=set(), clean_content_tags={"script", "style", "head", "title"}
    )
    text = html_lib.unescape(without_tags).replace("\xa0", " ")
    # Source indentation and runs of spaces mean nothing in HTML (outside <pre>, a rare case).
    lines = [" ".join(line.split()) for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


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

    content = mail_bytes(bytes(raw))[:_HEADER_WINDOW]
    try:
        headers = BytesHeaderParser(policy=policy.default).parsebytes(content)
    except Exception:  # no header block worth reading
        return ReadableHeaders(None, None, None)
    assert isinstance(headers, EmailMessage)
    values: list[str | None] = []
    for read in (
        lambda: message_id_of(header_text(headers, "Message-ID")),
        lambda: sender_of(headers)[0],
        lambda: clean_line(header_text(headers, "Subject") or "") or None,
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


# -----------------------------------------------------------------------------------------------
# One reading of a mail (CONTRACT §9): the header lines the signature check reads must be the
# ones the mail parser reads, or no signature counts for the mail.
#
# dkimpy ends a header line at CRLF or LF only; the standard mail parser also ends one at a bare CR,
# and ends the header block at the first line that is not a header, where dkimpy refuses the mail.
# So one unsigned header hiding `\rFrom: …\rSubject: …\r\r<text>` in front of a genuine signed
# mail verifies (dkimpy reads the genuine headers) while the parser reads the hidden ones. The rules:
#
# * Both read the same bytes, `mail_bytes(raw)`: the mail without the blank lines some exports
#   start with (the parser would read none of its headers after them).
# * The header block is everything up to and including dkimpy's first empty line (the parser's
#   block never reaches past it: every line end dkimpy sees, the parser sees too).
# * A header block holding a NUL, a CR that does not start a CRLF, or an LF without its CR while
#   another line ends in CRLF, is read by no signature. A header block whose lines all end in LF
#   (mail stored by Dovecot or in a maildir) is one reading and stays verifiable.
# * Otherwise the two readings are compared: the same header fields (names and values) in the
#   same order, and the body starting at the same byte. Any difference (an empty header name, a
#   `From ` line the parser pushes into the body, or one between a header and its folded line,
#   which the parser drops and dkimpy reads on) and no signature counts. A header block dkimpy
#   refuses (a line that is no header) is read by no signature anyway.

# dkimpy's end of the header block: its first empty line, CRLF or LF (the mail's first line too).
_HEADER_BLOCK_END = re.compile(rb"\A\r?\n|\r?\n\r?\n")
_BARE_CR = re.compile(rb"\r(?!\n)")
_BARE_LF = re.compile(rb"(?<!\r)\n")


def mail_bytes(raw: bytes) -> bytes:
    """The bytes both the signature check and the parser read: leading blank lines (and white
    space) dropped, as some exports start with them."""
    return raw.lstrip(b"\r\n\t ")


def header_block(raw: bytes) -> bytes:
    """The header block as dkimpy reads it, its closing empty line included."""
    end = _HEADER_BLOCK_END.search(raw)
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
    """The same as the mail parser (`read_message`, above) reads `raw`."""
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
