"""Tests in tiers (issue 60): every test file sits in a folder of tests/ named after what its tests
need, never at the top of tests/, and docs/development.md names each of those folders."""

from __future__ import annotations

from tests.support import REPO_ROOT

TESTS = REPO_ROOT / "tests"


def tier_folders() -> set[str]:
    return {path.parent.relative_to(TESTS).parts[0] for path in TESTS.rglob("test_*.py")} - {
        "support"
    }


def test_no_test_file_sits_at_the_top_of_tests():
    at_the_top = sorted(path.name for path in TESTS.glob("test_*.py"))
    assert at_the_top == [], "move these into the tier folder that says what they need"


def test_the_development_page_names_every_tier_folder():
    page = (REPO_ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    unnamed = sorted(name for name in tier_folders() if f"`tests/{name}/`" not in page)
    assert unnamed == [], "docs/development.md's tests section omits these folders"
