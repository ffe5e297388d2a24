"""HTML sanitising for every stored HTML field (pages, posts, comments, events, disclaimer)."""

from __future__ import annotations

import html


def clean_html(text: str) -> str:
    """Keep ordinary formatting; drop scripts, event-handler attributes and `javascript:` links."""
    import nh3

    return nh3.clean(text, link_rel="noopener noreferrer nofollow").strip()


def text_to_html(text: str) -> str:
    """Plain text as escaped HTML paragraphs (blank lines separate paragraphs)."""
    paragraphs = [p.strip() for p in text.replace("\r\n", "\n").split("\n\n")]
    return "".join("<p>" + html.escape(p).replace("\n", "<br>") + "</p>" for p in paragraphs if p)


def html_to_text(markup: str) -> str:
    """Text of an HTML fragment, for search and summaries."""
    import nh3

    return html.unescape(nh3.clean(markup, tags=set())).strip()
