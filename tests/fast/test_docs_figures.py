"""The manual's measured figures (the package's size, the suite's size and time) are the ones their
commands measured, published by `make figures` into bench/figures.json and the pages
(bench/figures.py), never typed by hand; `make test` and `make package` only record them in build/."""

from __future__ import annotations

import json
import time
import zipfile

from bench import figures

NAMES = ["package-size", "package-measured", "test-count", "test-time", "test-measured"]


def test_the_manual_says_what_the_source_recorded():
    assert figures.SOURCE.exists(), "bench/figures.json is the source of the manual's figures"
    for attempt in range(2):
        source = figures.load_source()
        shown = figures.read_page_figures(NAMES)
        expected = figures.rendered(source)
        if {name: shown[name] for name in expected} == expected or attempt:
            break
        # `make figures` may run beside the suite and rewrites the files one after the other.
        time.sleep(0.2)
    assert {name: shown[name] for name in expected} == expected
    # Every figure a page marks has its measurement in the source, and every one is marked.
    assert {name for name, text in shown.items() if text is not None} == set(expected) == set(NAMES)


def test_writing_replaces_the_marked_figures_and_nothing_else(tmp_path):
    page = tmp_path / "deploy.md"
    page.write_text(
        "The zip is <!-- figure:package-size -->9.0 MB<!-- /figure:package-size --> today.\n"
        "Its <!-- figure:test-count -->1<!-- /figure:test-count --> tests.\n"
    )
    source = {"package": {"zipMB": 14.63, "arch": "x86_64", "measuredOn": "2026-11-26"}}
    missing = figures.write_pages(source, [page])
    assert missing == ["package-measured"]
    assert page.read_text() == (
        "The zip is <!-- figure:package-size -->14.6 MB<!-- /figure:package-size --> today.\n"
        "Its <!-- figure:test-count -->1<!-- /figure:test-count --> tests.\n"
    )


def test_each_figure_goes_to_the_page_that_marks_it_and_other_pages_are_not_rewritten(tmp_path):
    tests_page, deploy_page = tmp_path / "development.md", tmp_path / "deploy.md"
    tests_page.write_text("<!-- figure:test-count -->1<!-- /figure:test-count -->\n")
    deploy_page.write_text("<!-- figure:package-size -->1 MB<!-- /figure:package-size -->\n")
    before = deploy_page.stat().st_mtime_ns
    source = {"tests": {"count": 2013, "seconds": 5, "workers": 1, "cores": 2, "measuredOn": "x"}}
    missing = figures.write_pages(source, [tests_page, deploy_page])
    assert missing == ["test-time", "test-measured"]
    assert tests_page.read_text() == "<!-- figure:test-count -->2,013<!-- /figure:test-count -->\n"
    assert deploy_page.stat().st_mtime_ns == before
    shown = figures.read_page_figures(["test-count", "package-size"], [tests_page, deploy_page])
    assert shown == {"test-count": "2,013", "package-size": "1 MB"}


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


def test_measuring_writes_only_under_build_and_publishing_writes_the_source_and_pages(
    tmp_path, monkeypatch
):
    source, measured, page = tmp_path / "figures.json", tmp_path / "build.json", tmp_path / "p.md"
    page.write_text(
        "<!-- figure:package-size -->?<!-- /figure:package-size --> "
        "(<!-- figure:package-measured -->?<!-- /figure:package-measured -->)\n"
    )
    archive = tmp_path / "deployment.zip"
    archive.write_bytes(b"x" * 2_000_000)
    results = tmp_path / "results.json"
    results.write_text(
        json.dumps(
            {
                "taken_on": "2026-11-22",
                "machine": "2 cores",
                "figures": [
                    {"name": "package_zip_mb", "value": 1.5, "reference": 0.02, "unit": "MB"}
                ],
            }
        )
    )
    monkeypatch.setattr(figures, "SOURCE", source)
    monkeypatch.setattr(figures, "MEASURED", measured)
    monkeypatch.setattr(figures, "PAGES", [page])
    monkeypatch.setattr(figures, "RESULTS", results)
    monkeypatch.setattr(figures, "BENCH_PAGE", tmp_path / "no-bench-page.md")
    assert figures.main(["package", str(archive)]) == 0
    # Measuring (what make package and make test do) leaves the source and the pages alone.
    assert json.loads(measured.read_text())["package"]["zipMB"] == 2.0
    assert not source.exists()
    assert page.read_text().startswith("<!-- figure:package-size -->?<!--")
    # `make figures` publishes.
    assert figures.main(["publish"]) == 0
    assert json.loads(source.read_text())["package"]["zipMB"] == 2.0
    assert page.read_text().startswith("<!-- figure:package-size -->2.0 MB<!--")
    # The bench's figure is the same measurement, its reference kept, dated as measured.
    [zipped] = json.loads(results.read_text())["figures"]
    measured_on = json.loads(source.read_text())["package"]["measuredOn"]
    assert (zipped["value"], zipped["reference"]) == (2.0, 0.02)
    assert zipped["measured_on"] == measured_on


def test_the_package_size_has_one_source_the_results_and_the_manual_say_the_same():
    """bench/results.json's `package_zip_mb` and the manual's package size are one measurement:
    they said 13.44 MB and 13.7 MB, taken two weeks apart by two commands."""
    from bench.report import RESULTS_PATH

    package = figures.load_source()["package"]
    document = json.loads(RESULTS_PATH.read_text(encoding="utf-8"))
    [zipped] = [f for f in document["figures"] if f["name"] == "package_zip_mb"]
    assert zipped["value"] == package["zipMB"]
    assert zipped.get("measured_on", document["taken_on"]) == package["measuredOn"]
    assert figures.RESULTS == RESULTS_PATH


def test_publishing_nothing_measured_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(figures, "MEASURED", tmp_path / "none.json")
    assert figures.main(["publish"]) == 1
    assert "run make test" in capsys.readouterr().err
