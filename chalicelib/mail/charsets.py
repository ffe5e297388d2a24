"""Text out of mail bytes: charsets that lie, binary data posing as text, and the characters
stored text must not hold (XML and UTF-8 refuse them). Never raises on what a mail sends."""

from __future__ import annotations

import re
from email import errors
from email.message import Message

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def clean_text(value: str) -> str:
    """Body text without C0 controls (tab and newline kept; CR becomes a line end), lone
    surrogates or noncharacters: none of them is valid in XML, and surrogates not in UTF-8."""
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", value)


# What breaks a line (CONTRACT §8: CR, LF, NEL, U+2028, U+2029, VT, FF, and the separators
# str.splitlines also ends a line at), and the tab: each becomes a space in a one-line text.
_LINE_BREAKS = re.compile("[\t\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")


def clean_line(value: str) -> str:
    """One line of text (a subject, a name): tabs and line breaks become spaces (a title holding
    U+2028 would break the mail header it goes into), other controls go."""
    value = _LINE_BREAKS.sub(" ", value)
    return _CONTROL.sub("", value).strip()


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
