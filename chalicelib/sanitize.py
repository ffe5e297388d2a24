"""HTML sanitising for every stored HTML field (pages, posts, comments, events, disclaimer), and
the slug a stored title or name becomes (`slugify`)."""

from __future__ import annotations

import html
import re
import unicodedata

# C0 control characters other than tab and newline (CONTRACT §6: removed from stored strings).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What XML 1.0 cannot carry at all, escaped or not (its Char production).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# Bidirectional embedding, override and isolate controls (CONTRACT §8: removed from single-line
# text): a title holding U+202E shows its words backwards, so "gpj.exe" reads "exe.jpg".
BIDI_CONTROLS = (
    "\u202a-\u202e\u2066-\u2069"  # a character class's ranges, for a pattern of one's own
)
_BIDI_CONTROLS = re.compile(f"[{BIDI_CONTROLS}]")


def without_bidi(text: str) -> str:
    """`text` without bidirectional embedding, override and isolate controls (U+202A to U+202E,
    U+2066 to U+2069), for single-line text (titles, names, subjects)."""
    if _BIDI_CONTROLS.search(text) is None:
        return text
    return _BIDI_CONTROLS.sub("", text)


def without_controls(text: str) -> str:
    """`text` without C0 control characters other than tab and newline (the same object when it
    has none, so callers can tell cheaply)."""
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub("", text)


class SentText(str):
    """A body's string the router removed control characters from, with its length as sent: a
    maxLength counts what the client sent, as the document's JSON Schema does (schemas/common.py
    `ApiModel._length_as_sent`), not what is left to store."""

    sent_length: int

    def __new__(cls, text: str, sent_length: int) -> SentText:
        made = super().__new__(cls, text)
        made.sent_length = sent_length
        return made

    def __getnewargs__(self) -> tuple[str, int]:  # type: ignore[override]
        # A copy or a pickle of a body keeps what was sent.
        return str(self), self.sent_length


def sent_length(text: str) -> int:
    """The length `text` had as the client sent it (control characters included)."""
    return text.sent_length if isinstance(text, SentText) else len(text)


def xml_text(text: str) -> str:
    """`text` without the characters XML cannot carry (control characters, lone surrogates),
    for text that was stored before it was cleaned or came in by mail."""
    if _NOT_XML.search(text) is None:
        return text
    return _NOT_XML.sub("", text)


def clean_html(text: str) -> str:
    """Keep ordinary formatting; drop scripts, event-handler attributes and `javascript:` links."""
    import nh3

    return nh3.clean(text, link_rel="noopener noreferrer nofollow").strip()


def text_to_html(text: str) -> str:
    """Plain text as escaped HTML paragraphs (blank lines separate paragraphs)."""
    paragraphs = [p.strip() for p in text.replace("\r\n", "\n").split("\n\n")]
    return "".join("<p>" + html.escape(p).replace("\n", "<br>") + "</p>" for p in paragraphs if p)


# Where a block ends (a paragraph, a list item, a line break) the text breaks a line, so that
# "<p>morning.</p><p>Second" reads "morning.\nSecond", not "morning.Second".
_BLOCK_END = re.compile(
    r"<\s*(?:br\s*/?|hr\s*/?|/\s*(?:p|div|li|dt|dd|tr|h[1-6]|blockquote|pre|table|ul|ol))\s*>",
    re.IGNORECASE,
)


def html_to_text(markup: str) -> str:
    """Text of an HTML fragment, for search and summaries: blocks end lines, tags go."""
    import nh3

    # The newline goes next to the tag, not instead of it: removing closing tags would change
    # how the HTML parser nests the rest.
    with_breaks = _BLOCK_END.sub(lambda tag: tag.group(0) + "\n", markup)
    return html.unescape(nh3.clean(with_breaks, tags=set())).strip()


# A people search needs this many characters of search key (one letter matches too many people).
MIN_SEARCH_CHARACTERS = 2
# C0 and C1 control characters and DEL: never part of what a search compares.
_ANY_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"\s+")


def search_key(text: str) -> str:
    """`text` as people searches compare it: case folded, accents dropped (`Zoë` is found by
    `zoe`), control characters removed and runs of white space made one space."""
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", _ANY_CONTROL.sub("", text))
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _SPACES.sub(" ", bare.casefold()).strip()


def slugify(text: str, fallback: str = "item") -> str:
    """URL slug: lowercase ASCII words joined by `-`."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:80].strip("-") or fallback
