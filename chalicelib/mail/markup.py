"""Mail bodies as HTML and as text: plain text made into paragraphs, mail HTML made safe to show,
and HTML read back as text (for search and trimming)."""

from __future__ import annotations

import html as html_lib
import re


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
