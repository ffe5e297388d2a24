"""Figures, the printed table, bench/results.json and the Benchmarks table of docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import platform
import re
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_PATH = BENCH_DIR / "results.json"
# The manual's page that holds every generated benchmark table (bench, load, scale, cost).
PAGE = REPO_ROOT / "docs" / "benchmarks.md"
# `make bench` replaces only what sits between these two lines of the page.
BLOCK_START = "<!-- bench:start -->"
BLOCK_END = "<!-- bench:end -->"


@dataclass
class Figure:
    """One measured figure. `value` is Agora's, `reference` the baseline's; None when skipped.
    `measured_on`: the day it was measured when that is not the results file's `taken_on` (a
    figure merged in later by `make simulate` or a bench run alone)."""

    name: str
    value: float | None
    reference: float | None
    unit: str
    note: str | None = None
    measured_on: str | None = None

    @property
    def ratio(self) -> float | None:
        if self.value is None or self.reference is None or self.reference == 0:
            return None
        return significant(self.value / self.reference)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "value": significant(self.value),
            "reference": significant(self.reference),
            "ratio": self.ratio,
            "unit": self.unit,
        }
        # Only a skipped or doubtful figure says why, and only a figure measured another day
        # than the file's `taken_on` says when; the others keep the five keys.
        if self.note:
            out["note"] = self.note
        if self.measured_on:
            out["measured_on"] = self.measured_on
        return out

    @classmethod
    def of(cls, stored: dict[str, Any]) -> Figure:
        """A figure as bench/results.json holds it."""
        return cls(
            stored["name"],
            stored["value"],
            stored["reference"],
            stored["unit"],
            stored.get("note"),
            stored.get("measured_on"),
        )


def skipped(names_and_units: list[tuple[str, str]], note: str) -> list[Figure]:
    return [Figure(name, None, None, unit, note) for name, unit in names_and_units]


def significant(number: float | None, digits: int = 4) -> float | None:
    """Rounded to a few significant digits: more would only be noise."""
    if number is None:
        return None
    if number == 0:
        return 0.0
    return float(f"{number:.{digits}g}")


def shown(number: float | None) -> str:
    if number is None:
        return "n/a"
    return f"{number:,.4g}" if abs(number) < 1e4 else f"{number:,.0f}"


def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        total_kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {total_kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores{memory}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def text_table(figures: list[Figure]) -> str:
    rows = [("figure", "value", "reference", "ratio", "unit", "note")]
    rows += [
        (f.name, shown(f.value), shown(f.reference), shown(f.ratio), f.unit, f.note or "")
        for f in figures
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, 4)]
        lines.append("  ".join([*cells, row[4].ljust(widths[4]), row[5]]).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_row(f: Figure) -> str:
    value = shown(f.value) if f.value is not None else f"n/a ({f.note})"
    if f.measured_on:
        value += f" (measured {f.measured_on})"  # not on the table's own day
    return f"| `{f.name}` | {value} | {shown(f.reference)} | {shown(f.ratio)} | {f.unit} |"


def markdown_table(figures: list[Figure]) -> str:
    lines = ["| figure | Agora | reference | ratio | unit |", "|---|---:|---:|---:|---|"]
    lines += [markdown_row(f) for f in figures]
    return "\n".join(lines)


def results_document(figures: list[Figure], taken_on: date, machine: str) -> dict[str, Any]:
    return {
        "taken_on": taken_on.isoformat(),
        "machine": machine,
        "figures": [f.as_json() for f in figures],
    }


# Figures `make simulate` writes (bench/simulate.py): a `make bench` run keeps them as they were.
SIMULATED_PREFIXES = ("mail_day_", "digest_")


def write_results(document: dict[str, Any], path: Path = RESULTS_PATH) -> None:
    """Write a whole `make bench` run; the simulated figures already there stay, each saying the
    day it was measured when that is not the new run's (the old file's `taken_on` was theirs)."""
    names = {figure["name"] for figure in document["figures"]}
    was = json.loads(path.read_text(encoding="utf-8"))["taken_on"] if path.exists() else None
    kept = [
        _dated(figure, figure.get("measured_on") or was, document["taken_on"])
        for figure in _read_figures(path)
        if figure["name"].startswith(SIMULATED_PREFIXES) and figure["name"] not in names
    ]
    document = {**document, "figures": document["figures"] + kept}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def _dated(figure: dict[str, Any], measured_on: str | None, taken_on: str) -> dict[str, Any]:
    """A stored figure saying `measured_on` when that is not the file's `taken_on`."""
    undated = {k: v for k, v in figure.items() if k != "measured_on"}
    return undated if measured_on in (None, taken_on) else {**undated, "measured_on": measured_on}


def merge_results(
    figures: list[Figure],
    taken_on: date,
    machine: str,
    path: Path = RESULTS_PATH,
    page: Path = PAGE,
) -> dict[str, Any]:
    """Put these figures, measured on `taken_on`, into the results file, each in its place (or
    at the end when new), the others as they were; the file's date and machine stay those of its
    `make bench` run, and a figure measured another day says its own (`measured_on`). The page's
    Benchmarks table gets each figure's new row where it has one, so that it never shows a
    figure the results file no longer holds."""
    old: dict[str, Any] = {"taken_on": taken_on.isoformat(), "machine": machine, "figures": []}
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
    day = taken_on.isoformat()
    figures = [
        replace(figure, measured_on=None if day == old["taken_on"] else day) for figure in figures
    ]
    if page.exists():
        _replace_page_rows(figures, page)
    new = {figure.name: figure.as_json() for figure in figures}
    merged = [new.pop(f["name"], f) for f in old["figures"]] + list(new.values())
    document = {"taken_on": old["taken_on"], "machine": old["machine"], "figures": merged}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return document


def _replace_page_rows(figures: list[Figure], page: Path) -> None:
    table = read_section(page, BLOCK_START, BLOCK_END)
    if table is None:
        return
    rows = {f"| `{f.name}` |": markdown_row(f) for f in figures}
    lines = [
        next((row for start, row in rows.items() if line.startswith(start)), line)
        for line in table.split("\n")
    ]
    write_section(page, BLOCK_START, BLOCK_END, "\n".join(lines))


def _read_figures(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    figures: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["figures"]
    return figures


def _section(start: str, end: str) -> re.Pattern[str]:
    return re.compile(re.escape(start) + r"\n?(.*?)\n?" + re.escape(end), re.DOTALL)


def read_section(path: Path, start: str, end: str) -> str | None:
    """What stands between the markers `start` and `end` of a file; None without them."""
    found = _section(start, end).search(path.read_text(encoding="utf-8"))
    return found.group(1) if found else None


def write_section(path: Path, start: str, end: str, body: str) -> bool:
    """Put `body` between the markers `start` and `end` (each on its own line) of a file, the
    rest as it was; False, and nothing written, when the file lacks them. Every generated table of
    the bench (`make bench`, `make cost`, `make scale`, `make load`) is written so."""
    text = path.read_text(encoding="utf-8")
    pattern = _section(start, end)
    if not pattern.search(text):
        return False
    section = f"{start}\n{body}\n{end}"
    path.write_text(pattern.sub(lambda _: section, text, count=1), encoding="utf-8")
    return True


def update_page(figures: list[Figure], taken_on: date, machine: str, path: Path = PAGE) -> bool:
    """Replace the table between the page's bench markers; False when the markers are missing."""
    body = f"Taken on {taken_on.isoformat()} on {machine}.\n\n{markdown_table(figures)}"
    return write_section(path, BLOCK_START, BLOCK_END, body)


def agora_logs_to_file(name: str) -> Path:
    """Agora's JSON logs (one line a request, a mail) go to bench/work/NAME, not the console: they
    still cost what they cost in Lambda, and the table stays readable."""
    import logging

    from chalicelib.logs import JsonFormatter, get_logger

    path = BENCH_DIR / "work" / name
    path.parent.mkdir(exist_ok=True)
    get_logger("bench")  # configures the "chalicelib" logger and its stderr handler
    root = logging.getLogger("chalicelib")
    for handler in list(root.handlers):
        root.removeHandler(handler)
    to_file = logging.FileHandler(path, mode="w", encoding="utf-8")
    to_file.setFormatter(JsonFormatter())
    root.addHandler(to_file)
    return path
