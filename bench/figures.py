"""Figures the manual quotes that come from the build itself: the package's size and the suite's
size and time.

`make package` runs `python -m bench.figures package build/package/deployment.zip`; `make test`
runs `python -m bench.figures tests build/junit.xml SECONDS` once every part of it passed. Each only
records what it measured in build/figures.json (untracked: a test run leaves the tree as it was).
`make figures` (`python -m bench.figures publish`) takes those records into bench/figures.json (the
source) and writes them into the manual's pages between inline markers
(`<!-- figure:NAME -->…<!-- /figure:NAME -->`, invisible once rendered), so the docs say what was
measured last and nothing typed by hand; tests/fast/test_readme_figures.py checks that the pages
and the source agree.

The package's size has one source, `make package`'s measurement: publishing it writes it into
bench/results.json too (`package_zip_mb`, the bench's figure beside the bare app's zip, with the
day it was measured), and a whole `make bench` run publishes the size of the zip its `make
package` made (bench/run.py; a `--only` run writes nothing), so the manual and the results never
say two sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ElementTree
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE = REPO_ROOT / "bench" / "figures.json"
# What the last `make test` and `make package` measured, until `make figures` publishes it.
MEASURED = REPO_ROOT / "build" / "figures.json"
# The pages whose markers hold the figures: the suite's in the tests page, the package's in deploy.
PAGES = [REPO_ROOT / "docs" / "development.md", REPO_ROOT / "docs" / "deploy.md"]
# The bench's results and its page, where the package's size is `package_zip_mb` too.
RESULTS = REPO_ROOT / "bench" / "results.json"
BENCH_PAGE = REPO_ROOT / "docs" / "benchmarks.md"
PACKAGE_FIGURE = "package_zip_mb"


def _replace(path: Path, text: str) -> None:
    """Write the whole file at once (a reader, a test beside `make package`, never sees half)."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def _marker(name: str) -> re.Pattern[str]:
    return re.compile(rf"<!-- figure:{name} -->(.*?)<!-- /figure:{name} -->", re.DOTALL)


def _minutes_and_seconds(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    if not minutes:
        return f"{rest} seconds"
    return f"{minutes} minute{'s' if minutes != 1 else ''} {rest} seconds"


# Each figure: its name (the marker's) and how the source's record reads in the sentence.
def rendered(source: dict[str, Any]) -> dict[str, str]:
    """The text each marker holds for this source (only the figures it records)."""
    shown: dict[str, str] = {}
    package = source.get("package")
    if package:
        shown["package-size"] = f"{package['zipMB']:.1f} MB"
        shown["package-measured"] = f"{package['arch']}, measured {package['measuredOn']}"
    tests = source.get("tests")
    if tests:
        shown["test-count"] = f"{tests['count']:,}"
        shown["test-time"] = _minutes_and_seconds(tests["seconds"])
        workers, cores = tests["workers"], tests["cores"]
        shown["test-measured"] = (
            f"{workers} worker{'s' if workers != 1 else ''} on {cores} core{'s' if cores != 1 else ''}"
            f", measured {tests['measuredOn']}"
        )
    return shown


def read_figures(text: str, names: list[str]) -> dict[str, str | None]:
    """What the markers of `text` hold for each name (None where the marker is missing)."""
    found: dict[str, str | None] = {}
    for name in names:
        match = _marker(name).search(text)
        found[name] = match.group(1) if match else None
    return found


def read_page_figures(names: list[str], pages: list[Path] | None = None) -> dict[str, str | None]:
    """What the pages' markers hold for each name, whichever page holds it."""
    found: dict[str, str | None] = dict.fromkeys(names)
    for page in pages or PAGES:
        shown = read_figures(page.read_text(encoding="utf-8"), names)
        found.update({name: text for name, text in shown.items() if text is not None})
    return found


def write_pages(source: dict[str, Any], pages: list[Path] | None = None) -> list[str]:
    """Put every figure of `source` between its markers, in whichever page holds them; answers the
    names no page marks (their figure is then not written). A page is rewritten only when its text
    changes."""
    written: set[str] = set()
    for page in pages or PAGES:
        text = original = page.read_text(encoding="utf-8")
        for name, value in rendered(source).items():
            pattern = _marker(name)
            if not pattern.search(text):
                continue
            written.add(name)
            text = pattern.sub(
                lambda _, n=name, v=value: f"<!-- figure:{n} -->{v}<!-- /figure:{n} -->", text
            )
        if text != original:
            _replace(page, text)
    return [name for name in rendered(source) if name not in written]


def load_source(path: Path | None = None) -> dict[str, Any]:
    path = path or SOURCE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def record(part: str, figures: dict[str, Any], path: Path | None = None) -> dict[str, Any]:
    path = path or SOURCE
    source = load_source(path)
    source[part] = figures
    _replace(path, json.dumps(source, indent=2, sort_keys=True) + "\n")
    return source


def package_figures(zip_path: Path, arch: str, today: str) -> dict[str, Any]:
    # MB of 10^6 bytes, as the bench's package_zip_mb.
    return {"zipMB": round(zip_path.stat().st_size / 1e6, 2), "arch": arch, "measuredOn": today}


def test_figures(junit: Path, seconds: float, workers: int, today: str) -> dict[str, Any]:
    """The tests pytest ran (its JUnit report: every test, passed or skipped) and the time the
    whole `make test` took."""
    root = ElementTree.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    count = sum(int(suite.get("tests", 0)) for suite in suites)
    return {
        "count": count,
        "seconds": round(seconds),
        # TEST_WORKERS=0: pytest runs in its own process, one worker.
        "workers": max(workers, 1),
        "cores": os.cpu_count() or 1,
        "measuredOn": today,
    }


def publish(measured: Path, source: Path | None = None, pages: list[Path] | None = None) -> int:
    """`make figures`: the last measurements into the source and the pages."""
    found = load_source(measured)
    if not found:
        print(
            f"nothing measured yet in {measured}: run make test (and make package)", file=sys.stderr
        )
        return 1
    everything = load_source(source)
    for part, figures in found.items():
        everything = record(part, figures, source)
    if "package" in found:
        package_result(found["package"])
    missing = write_pages(everything, pages)
    for name in missing:
        print(f"no page of the manual has a <!-- figure:{name} --> marker", file=sys.stderr)
    print(f"figures: {', '.join(f'{k} {v}' for k, v in rendered(found).items())}")
    return 1 if missing else 0


def package_result(package: dict[str, Any]) -> None:
    """The package's published size as bench/results.json's `package_zip_mb` (its reference,
    the bare app's zip, as the last `make bench` measured it), dated as it was measured."""
    from datetime import date

    from bench.report import Figure, machine_description, merge_results

    stored = load_source(RESULTS).get("figures", [])
    reference = next((f["reference"] for f in stored if f["name"] == PACKAGE_FIGURE), None)
    figure = Figure(PACKAGE_FIGURE, package["zipMB"], reference, "MB")
    measured_on = date.fromisoformat(package["measuredOn"])
    merge_results([figure], measured_on, machine_description(), path=RESULTS, page=BENCH_PAGE)


def publish_package(zip_path: Path, arch: str, today: str) -> float:
    """`make bench`: the size of the zip its `make package` just made, measured as `make package`
    measures it and published as `make figures` would (the source, the manual, the results);
    answers it in MB."""
    package = package_figures(zip_path, arch, today)
    record("package", package)
    package_result(package)
    write_pages(load_source())
    return float(package["zipMB"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.figures", description=__doc__)
    parts = parser.add_subparsers(dest="part", required=True)
    package = parts.add_parser("package", help="record the package's size, from its zip")
    package.add_argument("zip", type=Path)
    package.add_argument("--arch", default="x86_64")
    tests = parts.add_parser("tests", help="record the suite's size and time, from a make test run")
    tests.add_argument("junit", type=Path, help="pytest's --junitxml report")
    tests.add_argument("seconds", type=float, help="how long make test took")
    tests.add_argument("--workers", type=int, default=2)
    parts.add_parser("publish", help="the recorded figures into bench/figures.json and the manual")
    args = parser.parse_args(argv)
    if args.part == "publish":
        return publish(MEASURED)
    today = datetime.now(UTC).date().isoformat()
    if args.part == "package":
        figures = package_figures(args.zip, args.arch, today)
    else:
        figures = test_figures(args.junit, args.seconds, args.workers, today)
    MEASURED.parent.mkdir(parents=True, exist_ok=True)
    record(args.part, figures, MEASURED)
    shown = ", ".join(f"{k} {v}" for k, v in rendered({args.part: figures}).items())
    print(f"measured (make figures writes them into the manual): {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
