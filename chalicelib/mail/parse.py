"""Turning one raw mail into the facts mail-in needs (CONTRACT §9), without ever crashing on it.

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
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesHeaderParser

from chalicelib.mail.headers import (
    AuthenticationResult,
    HeaderFacts,
    clean_line,
    clean_text,
    decode_bytes,
    facts_of,
    header_text,
    looks_binary,
    message_id_of,
    sender_of,
)
from chalicelib.mail.mime import (
    Attachment,
    MailParseError,
    body_parts,
    body_problem_of,
    check_structure,
    chosen_body,
    forwarded_body,
    html_to_text,
    mail_bytes,
    read_message,
    reading_problem,
    sanitise_html,
    text_to_html,
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
    # Why its header block reads differently to a signature check (chalicelib/mail/mime.py):
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
