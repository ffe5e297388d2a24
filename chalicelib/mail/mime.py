"""Walking a mail's MIME tree without being taken down by it: bombs (depth, part count, giant
parameters) refused before and while parsing, then the sender's text and HTML parts, the
attachments, and a forwarded mail's text when the sender wrote none."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser

from chalicelib.mail.headers import BINARY, clean_line, decode_words, decoded_text, header_text
from chalicelib.mail.markup import chosen_body, text_to_html
from chalicelib.mail.reading import mail_bytes

MAX_MIME_DEPTH = 20
MAX_MIME_HEADER_CHARS = 4000
MAX_MIME_PARTS = 200  # the standard parser slows down with the square of the part count


class MailParseError(ValueError):
    """The input cannot be read as a mail (rules in chalicelib/mail/parse.py); the message is plain
    words, fit for the mail-in log."""


@dataclass(frozen=True)
class Attachment:
    """A part that is not imported (files, inline images, attached mails, delivery reports)."""

    filename: str | None
    content_type: str
    size: int


def read_message(raw: bytes) -> EmailMessage:
    # Some exports start with blank lines, which a strict parser reads as "no headers at all";
    # the signature check reads the same bytes (chalicelib/mail/reading.py). An mbox "From "
    # line is read by the parser as the unix-from and needs nothing here.
    content = mail_bytes(raw)
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
