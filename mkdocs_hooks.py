"""`make docs`'s hook (mkdocs.yml, `hooks`): docs/tour.md is the README's five-minute tour, taken
from README.md each time the manual is built, never a copy kept by hand. README.md marks the text
with `<!-- docs/tour.md:start -->` and `<!-- docs/tour.md:end -->`; the page holds
`<!-- README.md's tour -->` where it goes. Outside code blocks, the README's links into docs/ become
the manual's own (`docs/mail.md` → `mail.md`, the strict build checks each) and its headings rise
one level under the page's title."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent / "README.md"
START, END = "<!-- docs/tour.md:start -->", "<!-- docs/tour.md:end -->"
PLACE = "<!-- README.md's tour -->"


def readme_tour(readme: str) -> str:
    """The README's text between the markers, as a page of the manual reads it."""
    if readme.count(START) != 1 or readme.count(END) != 1:
        raise ValueError(f"README.md marks its tour once with {START} and {END}")
    section = readme.split(START, 1)[1].split(END, 1)[0]
    lines, fenced = [], False
    for line in section.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            line = re.sub(r"^#(#+ )", r"\1", line)
            line = re.sub(r"\]\(docs/", "](", line)
        lines.append(line)
    return "\n".join(lines).strip("\n") + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    if PLACE not in markdown:
        return markdown
    return markdown.replace(PLACE, readme_tour(README.read_text(encoding="utf-8")))
