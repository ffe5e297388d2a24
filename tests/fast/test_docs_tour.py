"""The manual holds the README's five-minute tour (issue 56): docs/tour.md takes it from README.md
at each build (mkdocs_hooks.py), so the page says what the front page says, every command of the
blocks tests/local/test_local.py runs included, and its links lead to the manual's pages."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.support import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"


def readme_tour_commands() -> list[str]:
    """The lines of the README's ```sh blocks between its tour markers (the ones test_local runs)."""
    text = README.read_text(encoding="utf-8")
    chunks = [c.split("<!-- tour:end -->", 1)[0] for c in text.split("<!-- tour:start -->")[1:]]
    blocks = [c.split("```sh\n", 1)[1].split("\n```", 1)[0] for c in chunks]
    assert len(blocks) == 2
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_the_manuals_tour_page_is_the_readmes_tour_with_every_command():
    import mkdocs_hooks

    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert "mkdocs_hooks.py" in config.get("hooks", [])
    assert {"A five-minute tour": "tour.md"} in config["nav"]
    page = mkdocs_hooks.on_page_markdown((DOCS / "tour.md").read_text(encoding="utf-8"))
    lines = page.splitlines()
    assert [line for line in readme_tour_commands() if line not in lines] == []
    for words in ("Start Agora and leave it running", "Ctrl-C stops `make run`"):
        assert words in page


def test_the_tours_links_name_the_manuals_own_files_and_its_headings_sit_under_the_title():
    import mkdocs_hooks

    page = mkdocs_hooks.on_page_markdown((DOCS / "tour.md").read_text(encoding="utf-8"))
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page)
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert "mail.md" in local and "console-moderation.png" in local
    assert [t for t in local if not (DOCS / t).is_file()] == []
    prose = re.sub(r"```.*?```", "", page, flags=re.DOTALL)
    assert re.findall(r"^#+ ", prose, re.MULTILINE) == ["# ", "## ", "## "]
    # The shell's comments in the code blocks are the README's, untouched.
    assert "# Sign in: the answer's object is the token every other call sends in X-Auth." in page


def test_a_readme_without_its_markers_is_an_error_not_an_empty_page():
    import mkdocs_hooks

    with pytest.raises(ValueError, match="docs/tour.md:start"):
        mkdocs_hooks.readme_tour("# Agora\n\n## A five-minute tour\n\nmake run\n")
