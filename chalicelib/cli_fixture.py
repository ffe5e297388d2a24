"""`cli load` and `cli export`: the fixture file in and out (CONTRACT §3, §4).

`load` says what it changed: the stored community is read once, as `export` writes it, before
the load, for the sections the file holds, and each record of the file is counted as created,
updated or unchanged against what the load wrote (FixtureReport.written, in the same form: a
field a reload keeps when the file leaves it out is the stored one). `export` writes nothing until every section has answered its
first page (a missing region, key, endpoint or table is one line and no output), writes a file
under a temporary name that takes the file's name only once whole (mode 600), and ends quietly
when the reader of its standard output goes away.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from chalicelib.cli_progress import Progress

# Exit status of a command whose standard output was closed by its reader (`export - | head`):
# 128 + SIGPIPE, as a shell reports a command that signal ended. Not 0: the output is not whole.
EXIT_CLOSED_PIPE = 141

Sections = list[tuple[str, Iterator[Mapping[str, object]]]]


# --- load ------------------------------------------------------------------------------------------


def _record_key(value: object) -> str:
    """An id as the store holds it: a GUID canonical and lowercase, an integer as its digits."""
    from chalicelib.schemas.common import parse_guid

    text = str(value)
    return parse_guid(text) or text.strip()


def _digest(document: object) -> str:
    text = json.dumps(document, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def stored_documents(exporter: Any, ids: Mapping[str, set[str]]) -> dict[str, dict[str, Any]]:
    """Section -> record id -> the stored record as `export` writes it, of the records `ids`
    names (section -> the file's ids, `home page` included), each section read once."""
    found: dict[str, dict[str, Any]] = {}
    for section, records in exporter.sections():
        if section in ids:
            keyed = ((_record_key(r["id"]), r) for r in records)
            found[section] = {key: r for key, r in keyed if key in ids[section]}
    if "home page" in ids:
        page = exporter.home_page()
        found["home page"] = {} if page is None else {"home": page}
    return found


def written_digests(
    written: Mapping[str, list[Any]], before: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, str]]:
    """Section -> record id -> digest of each record as the load wrote it, a field the store
    keeps when the file leaves it out (services/fixture.py KEPT_WHEN_OMITTED) taken from the
    stored record: what a second read of the store would find, without reading it."""
    from chalicelib.services.fixture import KEPT_WHEN_OMITTED

    found: dict[str, dict[str, str]] = {}
    for section, documents in written.items():
        digests = found.setdefault(section, {})
        for document in documents:
            key = _record_key(document["id"]) if "id" in document else "home"
            stored = before.get(section, {}).get(key)
            kept = KEPT_WHEN_OMITTED.get(section, ())
            if stored is not None:
                document = {
                    k: stored.get(k) if k in kept and v is None else v for k, v in document.items()
                }
            digests[key] = _digest(document)
    return found


def file_ids(data: Mapping[str, Any]) -> dict[str, set[str]]:
    """Section -> the ids of its records in the file (read before it is checked: a record
    without an id is left to the load to refuse)."""
    ids = {
        section: {
            _record_key(record["id"])
            for record in records
            if isinstance(record, dict) and "id" in record
        }
        for section, records in data.items()
        if isinstance(records, list) and records
    }
    if data.get("homePage") is not None:
        ids["home page"] = {"home"}
    return ids


def changes(
    before: Mapping[str, Mapping[str, str]],
    after: Mapping[str, Mapping[str, str]],
    ids: Mapping[str, set[str]],
) -> dict[str, dict[str, int]]:
    """Section -> how many of the file's records were created, updated or left unchanged."""
    counted: dict[str, dict[str, int]] = {}
    for section, keys in ids.items():
        was, now = before.get(section, {}), after.get(section, {})
        tally = {"created": 0, "updated": 0, "unchanged": 0}
        for key in keys:
            if key not in was:
                tally["created"] += 1
            else:
                tally["unchanged" if was[key] == now.get(key) else "updated"] += 1
        counted[section] = tally
    return counted


def load_line(counts: Mapping[str, int], changed: Mapping[str, Mapping[str, int]]) -> str:
    """`loaded 8 groups (all created), 8 users (1 updated, 7 unchanged), …`, or `nothing
    changed: …` when every record of the file was stored as it is there."""
    loaded = [f"{n} {name}" for name, n in counts.items() if n]
    if not loaded:
        return "nothing to load: the file holds no record"
    if all(t["created"] == t["updated"] == 0 for t in changed.values()):
        return f"nothing changed: {', '.join(loaded)} already stored as the file has them"
    parts = []
    for name, n in counts.items():
        if not n:
            continue
        tally = changed.get(name, {})
        said = [f"{tally[k]} {k}" for k in ("created", "updated", "unchanged") if tally.get(k)]
        whole = [k for k in ("created", "updated", "unchanged") if tally.get(k) == n]
        parts.append(f"{n} {name} ({'all ' + whole[0] if whole else ', '.join(said)})")
    return "loaded " + ", ".join(parts)


def load(args: Any, refuse: Callable[[str], int]) -> int:
    from chalicelib.services.fixture import FixtureInvalid

    path = Path(args.file)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        return refuse(f"{path}: cannot read: {error.strerror}")
    except ValueError as error:
        return refuse(f"$: not valid JSON: {error}")
    progress = Progress()
    records = [v for v in data.values() if isinstance(v, list)] if isinstance(data, dict) else []
    total = sum(len(v) for v in records)
    written: dict[str, int] = {}

    def told(section: str, n: int) -> None:
        written[section] = n
        progress.show(f"load: {n} {section} written", sum(written.values()), total)

    from chalicelib import deps

    exporter = deps.fixture_exporter()
    ids = file_ids(data) if isinstance(data, dict) else {}
    try:
        with progress.running(lambda: "load: reading what is stored"):
            before = stored_documents(exporter, ids)
        report = deps.fixture_service().load(data, progress=told)
    except FixtureInvalid as invalid:
        for problem in invalid.errors:
            print(str(problem), file=sys.stderr)
        return refuse(f"{len(invalid.errors)} error(s); nothing was written")
    finally:
        progress.done()
    stored = {s: {key: _digest(r) for key, r in found.items()} for s, found in before.items()}
    print(load_line(report.counts, changes(stored, written_digests(report.written, before), ids)))
    return 0


# --- export ----------------------------------------------------------------------------------------


def answered(sections: Iterator[tuple[str, Iterator[Mapping[str, object]]]]) -> Sections:
    """Every section with its first record already read (and put back in front): the reads
    that fail on the setup (region, credentials, endpoint, a missing table) fail here, before
    a byte is written."""
    ready: Sections = []
    for section, records in sections:
        first = list(itertools.islice(records, 1))
        ready.append((section, itertools.chain(first, records)))
    return ready


def export(args: Any, refuse: Callable[[str], int]) -> int:
    """The whole community to FILE in the fixture format, written record by record as the pages
    are read (memory does not grow with the community); `-` writes to stdout."""
    from chalicelib import deps

    path = Path(args.file)
    to_stdout = args.file == "-"
    progress = Progress()
    counts: dict[str, int] = {}
    now = ["export: reading"]
    try:
        with progress.running(lambda: now[0]):
            exporter = deps.fixture_exporter()
            sections = answered(exporter.sections())
            page = exporter.home_page()
    finally:
        progress.done()

    def write(out: Any) -> None:
        with progress.running(lambda: now[0]):
            write_fixture(
                out,
                iter(sections),
                lambda: page,
                counts,
                lambda section, n: now.__setitem__(0, f"export: {n} {section} written"),
            )

    try:
        if to_stdout:
            write(sys.stdout)
            sys.stdout.flush()
        else:
            write_whole(path, write)
    except BrokenPipeError:
        if not to_stdout:
            raise
        return closed_pipe()
    except OSError as error:
        return refuse(f"{path}: cannot write: {error.strerror}")
    finally:
        progress.done()
    # Password hashes are in it: the owner's only, and the line says so.
    private = "" if to_stdout else f" to {path} (mode 600: readable by its owner only)"
    print(
        "exported " + ", ".join(f"{n} {name}" for name, n in counts.items()) + private,
        file=sys.stderr if to_stdout else sys.stdout,
    )
    return 0


def write_whole(path: Path, write: Callable[[Any], None]) -> None:
    """`write` into a new file beside `path` (mode 600 from its creation), which takes `path`'s
    name once it is whole and on disk: a failure leaves what was there before, and no part."""
    descriptor, staging = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".partial", dir=path.parent
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def closed_pipe() -> int:
    """The reader of standard output went away (`| head`): end quietly. Later writes (the
    interpreter's last flush) go nowhere instead of raising again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_CLOSED_PIPE


def write_fixture(
    out: Any,
    sections: Iterator[tuple[str, Iterator[Mapping[str, object]]]],
    home_page: Callable[[], Mapping[str, object] | None],
    counts: dict[str, int],
    progress: Callable[[str, int], None],
) -> None:
    """A fixture file as JSON, one record a line, written as the records come."""
    out.write("{")
    for number, (section, records) in enumerate(sections):
        out.write(("," if number else "") + f"\n{json.dumps(section)}: [")
        count = 0
        for record in records:
            out.write(("," if count else "") + "\n  " + json.dumps(record, ensure_ascii=False))
            count += 1
            if count % 100 == 0:
                progress(section, count)
        out.write("\n]" if count else "]")
        counts[section] = count
    page = home_page()
    if page is not None:
        out.write(f',\n"homePage": {json.dumps(page, ensure_ascii=False)}')
        counts["home page"] = 1
    out.write("\n}\n")
