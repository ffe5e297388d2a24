"""Mail bodies as HTML and as text: plain text made into paragraphs, mail HTML made safe to show,
and HTML read back as text (for search and trimming)."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import nh3
from inscriptis import get_text


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


_BLOCK_END = re.compile(
    r"<\s*(?:br\s*/?|hr\s*/?|/\s*(?:p|div|li|tr|h[1-6]|blockquote|pre|table|ul|ol))\s*>",
    re.IGNORECASE,
)


def html_to_text(markup: str) -> str:
    """Readable text of mail HTML (line breaks kept at block ends), for search and trimming."""

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


# --- the mail Agora sends: a small inline-styled layout, and its text made from it -------------

FONT = "-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif"
# Mail clients drop <style> and most CSS: every style is inline, the layout a single table.
_PAGE = (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width,initial-scale=1">'
    "<title>{title}</title></head>"
    '<body style="margin:0;padding:0;background-color:#f3f4f6">'
    '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"'
    ' style="background-color:#f3f4f6"><tr><td align="center" style="padding:24px 12px">'
    '<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0"'
    ' style="width:100%;max-width:600px;background-color:#ffffff;border:1px solid #e5e7eb">'
    '<tr><td style="padding:24px;font-family:{font};font-size:16px;line-height:1.5;'
    'color:#111827">{content}</td></tr>'
    '<tr><td style="padding:16px 24px;border-top:1px solid #e5e7eb;font-family:{font};'
    'font-size:13px;line-height:1.5;color:#4b5563">{footer}</td></tr>'
    "</table></td></tr></table></body></html>"
)


def mail_layout(title: str, content_html: str, footer_html: str) -> str:
    """The HTML part: the content in a card, the footer (why it came, how to stop it) below."""
    return _PAGE.format(
        title=html_lib.escape(title), font=FONT, content=content_html, footer=footer_html
    )


def mail_text(markup: str) -> str:
    """The text part of a mail, rendered from its HTML by inscriptis: paragraphs stay apart,
    list items keep their bullets and numbers, a link shows its address after its text.

    inscriptis (Apache-2.0, on lxml that Lambda ships for mail-in already) lays the text out
    from a CSS model of the HTML; html2text was the other choice, but it is GPL-3.0.
    """

    text = get_text(markup, _text_config())
    # A link whose text is its address needs it once: "[https://x](https://x)" reads "https://x",
    # "[a@b](mailto:a@b)" reads "a@b".
    text = re.sub(r"\[(\S+)\]\((?:mailto:)?\1\)", r"\1", text)
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


_CONFIG: list[Any] = []


def _text_config() -> Any:
    if not _CONFIG:
        from inscriptis.css_profiles import STRICT_CSS_PROFILE
        from inscriptis.html_properties import Display
        from inscriptis.model.config import ParserConfig
        from inscriptis.model.html_element import HtmlElement

        css = STRICT_CSS_PROFILE.copy()
        # A quotation is set off as in a plain-text mail: indented, a blank line around it.
        css["blockquote"] = HtmlElement(
            display=Display.block, margin_before=1, margin_after=1, padding_inline=4
        )
        _CONFIG.append(ParserConfig(css=css, display_links=True))
    return _CONFIG[0]
