"""`make load` writes docs/benchmarks.md's Load table for the full run only (issue 56): the manual's
short run (`make load WORKERS=4 OPERATIONS=200`) replaced the published 3,000-operation table with
its own and left the working tree changed."""

from __future__ import annotations

from bench.admin_load import page_refusal, parse_args


def test_the_full_run_writes_the_page():
    assert page_refusal(parse_args(["--write-page"])) is None
    assert (
        page_refusal(parse_args(["--workers", "8", "--operations", "3000", "--write-page"])) is None
    )


def test_a_shorter_run_leaves_the_page_and_says_why():
    said = page_refusal(parse_args(["--workers", "4", "--operations", "200", "--write-page"]))
    assert said == (
        "docs/benchmarks.md keeps the full run's table (WORKERS=8 OPERATIONS=3000); this shorter "
        "one is not written there"
    )
    assert page_refusal(parse_args(["--operations", "200", "--write-page"])) is not None


def test_without_write_page_nothing_is_refused():
    assert page_refusal(parse_args(["--workers", "4", "--operations", "200"])) is None
