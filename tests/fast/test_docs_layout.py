"""The manual's Layout section (docs/architecture.md) names the modules that exist, where they are
(issue 29)."""

from __future__ import annotations

import re

from tests.support import REPO_ROOT


def layout_block() -> str:
    page = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Layout", 1)[1]
    return section.split("```", 2)[1]


def test_every_top_level_module_of_chalicelib_is_in_the_layout_under_chalicelib():
    block = layout_block()
    chalicelib_part = block.split("chalicelib/", 1)[1].split("\nagora_local/", 1)[0]
    named = set(re.findall(r"([a-z_]+\.py)", chalicelib_part))
    modules = {p.name for p in (REPO_ROOT / "chalicelib").glob("*.py") if p.name != "__init__.py"}
    assert modules - named == set(), "docs/architecture.md's Layout omits these chalicelib modules"
    assert {n for n in named if "/" not in n} - modules - {"app.py"} <= {
        f.name for f in (REPO_ROOT / "chalicelib").rglob("*.py")
    }


def test_the_layout_names_no_module_under_tests_that_is_not_there():
    block = layout_block()
    tests_part = block.split("\ntests/", 1)[1].split("\ninfra/", 1)[0]
    for name in re.findall(r"^\s+([a-z_]+\.py)", tests_part, re.MULTILINE):
        assert (REPO_ROOT / "tests" / name).exists(), f"{name} is listed under tests/"


def test_every_module_of_make_runs_package_is_in_the_layout_under_agora_local():
    block = layout_block()
    local_part = block.split("\nagora_local/", 1)[1].split("\ndemo/", 1)[0]
    named = set(re.findall(r"^\s+([a-z_]+\.py)", local_part, re.MULTILINE))
    modules = {p.name for p in (REPO_ROOT / "agora_local").glob("*.py") if p.name[0] != "_"}
    assert named == modules
