"""Trimming a mailed reply down to what the sender wrote, for comments (CONTRACT §9).

The reply-header detection ("On … wrote:" in a dozen languages, also wrapped over two lines;
"-----Original Message-----"; forward markers; Outlook's underscore line) comes from
`quotequail` (closeio, MIT), which keeps the text byte for byte. `mail-parser-reply` was tried
too: it strips every line's indentation (code in comments) and cuts at any line starting with
"Thanks," or "- item", which loses real comment text.

Hand-written below, each because quotequail does not do it (it only splits a mail in two at the
first reply header): `>` quoted lines anywhere, Outlook "From: … Sent: …" header blocks with no
separator line above them, `-- ` signatures and "Sent from my iPhone"-style mobile signatures.
"""

from __future__ import annotations

import re

import quotequail

_QUOTED_LINE = re.compile(r"^[ \t]*>")
_SIGNATURE_DELIMITER = re.compile(r"^--[ \t]?$")  # "-- " per RFC 3676; many clients drop the space
_MOBILE_SIGNATURE = re.compile(
    r"^[ \t]*(?:sent from my \S.{0,40}|sent from (?:outlook|mail|yahoo mail|proton ?mail)\b.{0,60}"
    r"|sent with proton ?mail.{0,60}|get outlook for \S.{0,40}|envoy[ée] de mon \S.{0,40}"
    r"|von meinem \S.{0,40} gesendet|verstuurd vanaf mijn \S.{0,40}|enviado desde mi \S.{0,40}"
    r"|inviato da(?:l mio)? \S.{0,40}|skickat fr[åa]n min \S.{0,40})[ \t]*$",
    re.IGNORECASE,
)
# Outlook and Exchange put the original's headers under the reply with no marker line; two
# header lines in a row, the first being the sender, is the tell (English, German, French,
# Dutch, Spanish labels).
_HEADER_BLOCK_FROM = re.compile(r"^[ \t]*\*?(?:from|von|de|van)\s*:\*?[ \t]+\S", re.IGNORECASE)
_HEADER_BLOCK_NEXT = re.compile(
    r"^[ \t]*\*?(?:sent|date|to|subject|cc|gesendet|datum|an|betreff|envoy[ée]|[àa]|objet"
    r"|verzonden|aan|onderwerp|enviado|para|asunto)\s*:\*?",
    re.IGNORECASE,
)


# Trimming reads at most this much of a mail's text: a reply is short, and what is past this
# would not fit in a comment anyway (mail-in caps stored content further).
MAX_TRIM_CHARS = 100_000
MAX_HEADER_SCAN_LINES = 400


def trim_reply(text: str) -> str:
    """The new text of a mailed reply: without quoted mail, reply headers and signatures.

    Never returns an empty string for a mail that had text: when everything looks quoted (a
    mail that only forwards something, a text that is all `>` lines), the untrimmed text is
    kept, since dropping a member's whole message is worse than showing a quote. Linear in the
    text's length, and only the first `MAX_TRIM_CHARS` are read.
    """
    original = text[:MAX_TRIM_CHARS].replace("\r\n", "\n").replace("\r", "\n")
    trimmed = _cut_at_reply_header(original)
    trimmed = _without_quoted_lines(trimmed)
    trimmed = _cut_at_header_block(trimmed)
    trimmed = _cut_at_signature(trimmed)
    trimmed = _tidy(trimmed)
    return trimmed if trimmed else original.strip()


def _cut_at_reply_header(text: str) -> str:
    """Top-posted reply: the text above the reply header. Bottom-posted or inline reply (nothing
    above the header): the whole text minus the header line(s), for the `>` pass to finish."""

    lines = text.split("\n")
    # quotequail tries dozens of patterns on every line: only the first lines are searched (a
    # reply header further down is under a reply nobody writes), the rest follows as it is.
    head = "\n".join(lines[:MAX_HEADER_SCAN_LINES])
    rest = "".join("\n" + line for line in lines[MAX_HEADER_SCAN_LINES:])
    limit = len(lines) + 1  # quotequail quotes everything past `limit` lines; we never want that
    header_start = quotequail.quote(head, limit=limit, quote_intro_line=True)
    if len(header_start) < 2:
        return text
    above = header_start[0][1]
    if _has_own_text(above):
        return above
    header_end = quotequail.quote(head, limit=limit, quote_intro_line=False)
    below = header_end[1][1] if len(header_end) > 1 else ""
    return above + "\n" + below + rest


def _has_own_text(text: str) -> bool:
    return any(line.strip() and not _QUOTED_LINE.match(line) for line in text.split("\n"))


def _without_quoted_lines(text: str) -> str:
    lines = text.split("\n")
    # The next non-blank line after each line, found in one backward pass (linear time: a
    # forward search per line made a 2 MB mail take minutes).
    following: list[str] = [""] * len(lines)
    upcoming = ""
    for index in range(len(lines) - 1, -1, -1):
        following[index] = upcoming
        if lines[index].strip():
            upcoming = lines[index]
    kept: list[str] = []
    for index, line in enumerate(lines):
        if _QUOTED_LINE.match(line):
            continue
        # An attribution such as "Ann wrote:" right above a quote belongs to the quote.
        if (
            line.rstrip().endswith(":")
            and _QUOTED_LINE.match(following[index])
            and _is_attribution(line)
        ):
            continue
        kept.append(line)
    return "\n".join(kept)


def _is_attribution(line: str) -> bool:
    return bool(re.search(r"\b(?:wrote|writes|schrieb|a écrit|schreef|escribió|skrev)\b", line))


def _cut_at_header_block(text: str) -> str:
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if not _HEADER_BLOCK_FROM.match(line):
            continue
        next_lines = [later for later in lines[index + 1 : index + 4] if later.strip()]
        if next_lines and _HEADER_BLOCK_NEXT.match(next_lines[0]):
            before = "\n".join(lines[:index])
            # The underscore rule Outlook draws above the block goes too.
            return re.sub(r"\n[ \t]*_{5,}[ \t]*\n*$", "\n", before)
    return text


def _cut_at_signature(text: str) -> str:
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if _SIGNATURE_DELIMITER.match(line):
            return "\n".join(lines[:index])
    # A mobile signature only counts as the last thing written, else it is a sentence.
    last = max((index for index, line in enumerate(lines) if line.strip()), default=None)
    if last is not None and _MOBILE_SIGNATURE.match(lines[last]):
        return "\n".join(lines[:last])
    return text


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n").rstrip()
