"""`make bench`'s bookkeeping: the results file's shape, wrk's and importtime's output, the manual's Benchmarks table.

Benchmarks measure; these tests never time anything, they only check what the bench writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from bench.cold_start import import_ms
from bench.load import parse_wrk
from bench.report import (
    BLOCK_END,
    BLOCK_START,
    RESULTS_PATH,
    Figure,
    merge_results,
    results_document,
    update_page,
    write_results,
)

ISSUE_NAMES = {
    "cold_start_import",
    "package_zip_mb",
    "request_home_page",
    "request_event_get",
    "request_events_page",
    "request_comments_page",
    "ddb_items_events_page_10k_over_100",
    "ddb_items_comments_page_10k_over_100",
    "ddb_requests_single_get",
    "mail_ingest_over_poplib",
    "purge_items_read_per_purged",
    "load_requests_per_second",
    "load_p99_ms",
}

WRK_OUTPUT = """\
Running 30s test @ http://127.0.0.1:8000/api/v1/en_US/system-page/home-page
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   100.69ms   12.11ms 300.00ms   90.00%
    Req/Sec    40.12      5.10    50.00     70.00%
  Latency Distribution
     50%  100.60ms
     75%  105.00ms
     90%  110.00ms
     99%    1.44s
  1196 requests in 30.00s, 1.00MB read
Requests/sec:     39.88
Transfer/sec:     34.13KB
"""


def test_committed_results_hold_every_figure_the_issue_names_in_its_shape():
    document = json.loads(RESULTS_PATH.read_text())
    assert set(document) == {"taken_on", "machine", "figures"}
    date.fromisoformat(document["taken_on"])
    assert document["machine"]
    names = [figure["name"] for figure in document["figures"]]
    assert ISSUE_NAMES <= set(names) and len(names) == len(set(names))
    for figure in document["figures"]:
        assert {"name", "value", "reference", "ratio", "unit"} <= set(figure)
        assert set(figure) <= {"name", "value", "reference", "ratio", "unit", "note", "measured_on"}
        if "measured_on" in figure:  # merged in on a day other than the file's own
            assert date.fromisoformat(figure["measured_on"]) > date.fromisoformat(
                document["taken_on"]
            )
        if figure["value"] is None:
            assert figure["note"] and figure["ratio"] is None


def test_ratio_is_value_over_reference_and_null_when_either_is_missing():
    assert Figure("x", 30, 30, "items read").as_json()["ratio"] == 1
    assert Figure("x", 1, 100, "items/comment").as_json()["ratio"] == 0.01
    skipped = Figure("x", None, 0.2, "ms", "no events route in the tree").as_json()
    assert skipped["value"] is None and skipped["ratio"] is None
    assert skipped["note"] == "no events route in the tree"
    assert "note" not in Figure("x", 2, 1, "ms").as_json()


def test_wrk_latencies_are_read_in_milliseconds_whatever_unit_wrk_prints():
    result = parse_wrk(WRK_OUTPUT)
    assert result.requests_per_second == 39.88
    assert result.p50_ms == 100.6
    assert result.p99_ms == 1440.0
    assert result.errors is None


def test_wrk_errors_are_reported():
    output = WRK_OUTPUT + "  Non-2xx or 3xx responses: 12\n"
    assert parse_wrk(output).errors == "Non-2xx or 3xx responses: 12"


def test_import_time_is_the_app_module_s_own_line(tmp_path):
    (tmp_path / "app.py").write_text("import json\n\napp = json.dumps({})\n")
    assert import_ms(tmp_path) > 0


def test_the_pages_table_is_replaced_between_the_markers_and_nothing_else(tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# Title\n\nintro\n\n{BLOCK_START}\nold table\n{BLOCK_END}\n\n## After\n")
    figures = [
        Figure("cold_start_import", 700, 40, "ms"),
        Figure("load_p99_ms", None, 50, "ms", "x"),
    ]
    assert update_page(figures, date(2026, 11, 22), "2 cores", path=page)
    text = page.read_text()
    assert text.startswith("# Title\n\nintro\n\n") and text.endswith(f"{BLOCK_END}\n\n## After\n")
    assert "old table" not in text
    assert "Taken on 2026-11-22 on 2 cores." in text
    assert "| `cold_start_import` | 700 | 40 | 17.5 | ms |" in text
    assert "| `load_p99_ms` | n/a (x) | 50 | n/a | ms |" in text


def test_merged_figures_replace_their_rows_of_the_pages_table_and_nothing_else(tmp_path):
    """`python -m bench.console` and `make simulate` merge their figures: the page's table
    shows the new ones where it has a row for them, and the results file holds them."""
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# Title\n\n{BLOCK_START}\n{BLOCK_END}\n")
    old = [Figure("console_first_page", 3223, 1712, "ms"), Figure("load_p50_ms", 48, 44, "ms")]
    results = tmp_path / "results.json"
    write_results(results_document(old, date(2026, 11, 22), "2 cores"), results)
    update_page(old, date(2026, 11, 22), "2 cores", path=page)
    before = page.read_text()

    new = [Figure("console_first_page", 565.1, 246.3, "ms"), Figure("mail_day_x", 1, 2, "s")]
    merge_results(new, date(2026, 11, 28), "another", path=results, page=page)

    text = page.read_text()
    row = "| `console_first_page` | 565.1 (measured 2026-11-28) | 246.3 | 2.294 | ms |"
    assert row in text
    assert "3,223" not in text and "mail_day_x" not in text  # a figure without a row adds none
    assert text.replace(row, "") == (
        before.replace("| `console_first_page` | 3,223 | 1,712 | 1.883 | ms |", "")
    )
    stored = json.loads(results.read_text())["figures"]
    assert [f["name"] for f in stored] == ["console_first_page", "load_p50_ms", "mail_day_x"]
    assert stored[0]["value"] == 565.1


def test_a_figure_merged_another_day_than_the_files_says_its_own_day(tmp_path):
    """The file's `taken_on` is its `make bench` run's: a figure merged later (make simulate,
    bench.console, bench.mail_push) carries the day it was measured, the others none."""
    results, page = tmp_path / "results.json", tmp_path / "missing.md"
    old = [Figure("load_p50_ms", 48, 44, "ms"), Figure("console_first_page", 3223, 1712, "ms")]
    write_results(results_document(old, date(2026, 11, 22), "2 cores"), results)
    merge_results([Figure("load_p50_ms", 47, 44, "ms")], date(2026, 11, 22), "x", results, page)
    merge_results(
        [Figure("console_first_page", 565, 246, "ms")], date(2026, 12, 7), "x", results, page
    )
    document = json.loads(results.read_text())
    assert document["taken_on"] == "2026-11-22"
    by_name = {f["name"]: f for f in document["figures"]}
    assert "measured_on" not in by_name["load_p50_ms"]  # the file's own day
    assert by_name["console_first_page"]["measured_on"] == "2026-12-07"
    assert Figure.of(by_name["console_first_page"]).measured_on == "2026-12-07"
    # Measured again on the file's day: it says no other day.
    merge_results(
        [Figure("console_first_page", 560, 246, "ms")], date(2026, 11, 22), "x", results, page
    )
    assert "measured_on" not in json.loads(results.read_text())["figures"][1]


def test_a_page_without_markers_is_left_alone(tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text("# Title\n")
    assert not update_page([], date(2026, 11, 22), "2 cores", path=page)
    assert page.read_text() == "# Title\n"


def test_results_document_has_the_issue_shape():
    document = results_document([Figure("x", 2, 1, "ms")], date(2026, 11, 22), "2 cores")
    assert document == {
        "taken_on": "2026-11-22",
        "machine": "2 cores",
        "figures": [{"name": "x", "value": 2.0, "reference": 1.0, "ratio": 2.0, "unit": "ms"}],
    }


def test_the_per_call_rows_are_the_calls_the_bench_counts():
    from bench.requests_in_process import CALLS
    from bench.run import CALL_NAMES

    assert [name for name, _, _ in CALLS] == CALL_NAMES


def test_the_mailbox_rows_are_the_figures_the_mailbox_bench_gives():
    from bench.mailboxes import DISPATCH_NAMES, RACE_NAMES
    from bench.run import MAILBOX_FIGURES

    assert MAILBOX_FIGURES == DISPATCH_NAMES + RACE_NAMES


@pytest.mark.fast
def test_scale_table_holds_a_read_to_its_twin_and_flags_growth_scans_and_missing_reads():
    from bench.scale import table

    twin = {"events_page": (1, 15, ["Query"]), "call:post_get": (1, 1, ["GetItem"])}
    rows, within = table(twin, {"events_page": (1, 15, ["Query"]), "call:post_get": (1, 1, [])})
    assert within
    assert "| `events_page` (moderator) | 1 | 1 | 15 | 15 | 1.00 |" in rows
    assert "| `post_get` (root administrator) | 1 | 1 | 1 | 1 | 1.00 |" in rows
    # 16 items where the twin read 15 is within 1.1; 17 is not.
    assert table(twin, {**twin, "events_page": (1, 16, ["Query"])})[1]
    assert not table(twin, {**twin, "events_page": (1, 17, ["Query"])})[1]
    grown, within = table(twin, {**twin, "call:post_get": (2, 2, ["GetItem", "GetItem"])})
    assert not within
    assert "| `post_get` (root administrator) (also GetItem) | 2 | 1 | 2 | 1 | 2.00 |" in grown
    scanned, within = table(twin, {**twin, "events_page": (1, 15, ["Scan"])})
    assert not within and "(Scan)" in scanned
    missing, within = table(twin, {"events_page": (1, 15, ["Query"])})
    assert not within
    assert "| `post_get` (root administrator) | n/a | 1 | n/a | 1 | n/a |" in missing


def test_a_whole_bench_run_keeps_a_simulated_figure_under_the_day_it_was_measured(tmp_path):
    """`make bench` keeps `make simulate`'s figures as they were, under its own new `taken_on`:
    one measured on the old file's day (no `measured_on` of its own) must say that day, not
    stand under the new run's."""
    results = tmp_path / "results.json"
    old = [Figure("load_p50_ms", 48, 44, "ms"), Figure("mail_day_delay_p95_s", 853.8, 1, "s")]
    write_results(results_document(old, date(2026, 11, 22), "2 cores"), results)

    def simulate_then_bench(simulated_on: date, load_p50_ms: float) -> dict:
        """make simulate merges a figure on `simulated_on`, then a whole make bench on 2026-12-07
        writes the file: its figures by name."""
        merge_results(
            [Figure("digest_x", 1, 2, "s")], simulated_on, "x", results, tmp_path / "no.md"
        )
        run = [Figure("load_p50_ms", load_p50_ms, 44, "ms")]
        write_results(results_document(run, date(2026, 12, 7), "2 cores"), results)
        return {f["name"]: f for f in json.loads(results.read_text())["figures"]}

    by_name = simulate_then_bench(date(2026, 11, 25), 47)
    assert by_name["mail_day_delay_p95_s"]["measured_on"] == "2026-11-22"
    assert by_name["digest_x"]["measured_on"] == "2026-11-25"
    assert "measured_on" not in by_name["load_p50_ms"]
    # Measured again on the new run's day: it says no other day.
    by_name = simulate_then_bench(date(2026, 12, 7), 46)
    assert "measured_on" not in by_name["digest_x"]


# `make package`, as the bench runs it, made a small real zip: the measuring part of the package
# family without the minutes of the real build (chalice still packages the bare app).
FAKE_MAKE = """import pathlib, sys, zipfile
assert sys.argv[1:] == ["--no-print-directory", "package"], sys.argv
out = pathlib.Path("build", "package")
out.mkdir(parents=True, exist_ok=True)
with zipfile.ZipFile(out / "deployment.zip", "w") as zipped:
    zipped.writestr("app.py", "app = None\\n" * 100_000)
"""


def tracked_copy(into: Path) -> dict[str, bytes]:
    """The repository's tracked files copied into `into`: each one's bytes by name."""
    from tests.support import REPO_ROOT

    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout
    names = [name for name in listed.decode().split("\0") if (REPO_ROOT / name).is_file()]
    copied = {name: (REPO_ROOT / name).read_bytes() for name in names}
    for name, text in copied.items():
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        (into / name).write_bytes(text)
    return copied


def python_with_fake_make(copy: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`python ARGUMENTS` in `copy`, where `make` is FAKE_MAKE."""
    tools = copy.parent / "bin"
    tools.mkdir(exist_ok=True)
    (tools / "make").write_text(f"#!{sys.executable}\n{FAKE_MAKE}")
    (tools / "make").chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": ""}
    return subprocess.run(
        [sys.executable, *arguments], cwd=copy, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_bench_run_of_only_the_package_writes_no_file_the_repository_tracks(tmp_path):
    """`python -m bench.run --only package` says "nothing written", and writes nothing: not the
    package's size into bench/figures.json, bench/results.json or the manual, which only a whole
    run publishes. Run in a copy of the repository's tracked files, whose bytes must be as they
    were, with `make package` making a small real zip."""
    copy = tmp_path / "repository"
    before = tracked_copy(copy)
    done = python_with_fake_make(copy, "-m", "bench.run", "--only", "package")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "(--only: nothing written)" in done.stdout
    [row] = [line for line in done.stdout.splitlines() if line.startswith("package_zip_mb")]
    assert "packaging failed" not in row and "not measured" not in row, done.stdout
    assert [name for name, text in before.items() if (copy / name).read_bytes() != text] == []


def test_a_whole_bench_run_publishes_the_size_of_the_zip_it_measured(tmp_path):
    """What a whole run does with the package family's figure once its results are written
    (bench/run.py `publish_package`): the size of the zip it measured goes into bench/figures.json,
    bench/results.json and the manual; a run whose packaging failed publishes nothing."""
    copy = tmp_path / "repository"
    before = tracked_copy(copy)
    code = (
        "from datetime import date\n"
        "from bench.cold_start import package_figures\n"
        "from bench.report import Figure\n"
        "from bench.run import publish_package\n"
        "from pathlib import Path\n"
        "source = Path('bench/figures.json').read_bytes()\n"
        "failed = Figure('package_zip_mb', None, None, 'MB', 'packaging failed')\n"
        "assert not publish_package([failed], date(2026, 12, 7))\n"
        "assert Path('bench/figures.json').read_bytes() == source\n"
        "[measured] = package_figures()\n"
        "print(measured.value)\n"
        "assert publish_package([measured], date(2026, 12, 7))\n"
    )
    done = python_with_fake_make(copy, "-c", code)
    assert done.returncode == 0, done.stderr[-2000:]
    # Only the published files changed.
    changed = {name for name, text in before.items() if (copy / name).read_bytes() != text}
    published = {"bench/figures.json", "bench/results.json", "docs/deploy.md", "docs/benchmarks.md"}
    assert changed <= published, changed
    size = float(done.stdout.split()[-1])
    package = json.loads((copy / "bench" / "figures.json").read_text())["package"]
    assert (package["zipMB"], package["measuredOn"]) == (size, "2026-12-07")
    results = json.loads((copy / "bench" / "results.json").read_text())["figures"]
    assert [f["value"] for f in results if f["name"] == "package_zip_mb"] == [size]
    assert f"{size:.1f} MB" in (copy / "docs" / "deploy.md").read_text()
    from bench.report import shown

    page = (copy / "docs" / "benchmarks.md").read_text().splitlines()
    assert [row for row in page if row.startswith(f"| `package_zip_mb` | {shown(size)} ")]
