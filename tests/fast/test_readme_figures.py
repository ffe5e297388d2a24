"""README's measured figures (the package's size, the suite's size and time) are the ones their
commands wrote into bench/figures.json (bench/figures.py), never typed by hand."""

from __future__ import annotations

import json
import time
import zipfile

import pytest

from bench import figures
from tests.support import REPO_ROOT

pytestmark = pytest.mark.fast

NAMES = ["package-size", "package-measured", "test-count", "test-time", "test-measured"]


def test_the_readme_says_what_the_source_recorded():
    if not figures.SOURCE.exists():
        pytest.skip("no bench/figures.json yet: make package and make test write it")
    for attempt in range(2):
        source = figures.load_source()
        shown = figures.read_readme_figures(figures.README.read_text(encoding="utf-8"), NAMES)
        expected = figures.rendered(source)
        if {name: shown[name] for name in expected} == expected or attempt:
            break
        # `make package` runs beside the suite and rewrites both files, one after the other.
        time.sleep(0.2)
    assert {name: shown[name] for name in expected} == expected
    # Every figure README marks has its measurement in the source.
    assert {name for name, text in shown.items() if text is not None} == set(expected)


def test_writing_replaces_the_marked_figures_and_nothing_else(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "The zip is <!-- figure:package-size -->9.0 MB<!-- /figure:package-size --> today.\n"
        "Its <!-- figure:test-count -->1<!-- /figure:test-count --> tests.\n"
    )
    source = {"package": {"zipMB": 14.63, "arch": "x86_64", "measuredOn": "2026-11-26"}}
    missing = figures.write_readme(source, readme)
    assert missing == ["package-measured"]
    assert readme.read_text() == (
        "The zip is <!-- figure:package-size -->14.6 MB<!-- /figure:package-size --> today.\n"
        "Its <!-- figure:test-count -->1<!-- /figure:test-count --> tests.\n"
    )


def test_the_package_size_is_the_zips_in_megabytes(tmp_path):
    archive = tmp_path / "deployment.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as out:
        out.writestr("big.bin", b"\0" * 1_500_000)
    found = figures.package_figures(archive, "x86_64", "2026-11-26")
    assert found == {
        "zipMB": round(archive.stat().st_size / 1e6, 2),
        "arch": "x86_64",
        "measuredOn": "2026-11-26",
    }
    assert figures.rendered({"package": found})["package-size"] == "1.5 MB"


def test_the_test_figures_come_from_pytests_report_and_the_clock(tmp_path):
    report = tmp_path / "junit.xml"
    report.write_text(
        '<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="2013" skipped="4" '
        'failures="0" errors="0" time="250.1"/></testsuites>'
    )
    found = figures.test_figures(report, 273.6, 2, "2026-11-26")
    assert (found["count"], found["seconds"], found["workers"]) == (2013, 274, 2)
    shown = figures.rendered({"tests": {**found, "cores": 2}})
    assert (shown["test-count"], shown["test-time"]) == ("2,013", "4 minutes 34 seconds")
    assert shown["test-measured"] == "2 workers on 2 cores, measured 2026-11-26"


def test_the_script_records_and_writes_through_its_command_line(tmp_path, monkeypatch):
    source, readme = tmp_path / "figures.json", tmp_path / "README.md"
    readme.write_text(
        "<!-- figure:package-size -->?<!-- /figure:package-size --> "
        "(<!-- figure:package-measured -->?<!-- /figure:package-measured -->)\n"
    )
    archive = tmp_path / "deployment.zip"
    archive.write_bytes(b"x" * 2_000_000)
    monkeypatch.setattr(figures, "SOURCE", source)
    monkeypatch.setattr(figures, "README", readme)
    assert figures.main(["package", str(archive)]) == 0
    assert json.loads(source.read_text())["package"]["zipMB"] == 2.0
    assert readme.read_text().startswith("<!-- figure:package-size -->2.0 MB<!--")
    assert REPO_ROOT.joinpath("bench", "figures.py").exists()
