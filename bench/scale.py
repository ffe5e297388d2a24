"""`make scale` (SCALE=large|medium|small): every read the bench counts, in a large community and
in its small twin.

The twin is the bench's club alone (bench/world.py `build_club`, 100 events, 100 deleted comments
and the moderation lists of issue 17's calls). The large community is the same club surrounded by
`grow_world` (large: 100,000 members, 10,000 groups, 1,000,000 posts and as many comments, 100,000
events; the club's group takes its share), written 25 items to a BatchWriteItem on several
threads. Each read's DynamoDB requests and items read on a warm call are compared: DynamoDB reads
are keyed by group, post or id, so the ratio should be 1.0 everywhere.

In-process moto keeps every item in memory and serialises each one it returns: the large size
takes a long time and several GB; run it with `nice` on a shared machine. The table goes to
docs/benchmarks.md's scale block (`--no-page` only prints).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections import Counter
from datetime import UTC, datetime

import tests.conftest  # noqa: F401  (the tests' environment: moto credentials, table prefix)

# A warm container keeps users and groups for AGORA_CACHE_SECONDS (30). In-process moto answers a
# Query over an index by walking the whole table, so in a large world one call can outlast that
# and the next "warm" call re-reads what a warm container would still hold. The cache outlives
# moto's slowness here; what is counted is DynamoDB's work, not moto's time.
os.environ["AGORA_CACHE_SECONDS"] = "3600"
from bench.report import PAGE, machine_description, write_section
from bench.world import WORLD_SIZES, WorldSize

TWIN_CLUB = 100
BLOCK_START = "<!-- scale:start -->"
BLOCK_END = "<!-- scale:end -->"
# Within this ratio a read's cost "does not grow" (the 1.1).
TOLERANCE = 1.1


def measure(size: WorldSize) -> tuple[dict, dict, dict[str, int], float]:
    from bench.requests_in_process import count_work
    from bench.world import features, grow_world

    available = features()
    twin = count_work(TWIN_CLUB, available)
    written: dict[str, int] = {}
    started = time.monotonic()

    def surround(club: object) -> None:
        written.update(grow_world(club, size))  # type: ignore[arg-type]

    large = count_work(TWIN_CLUB, available, surround)
    return twin, large, written, time.monotonic() - started


def table(twin: dict, large: dict) -> tuple[str, bool]:
    """The markdown table, and whether every read is within TOLERANCE of its twin."""
    lines = [
        "| read | requests | twin | items read | twin | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    within = True
    for name in twin:
        big, small = large.get(name), twin[name]
        # The bench's own pages are a moderator's; issue 17's calls the root administrator's.
        who = "root administrator" if name.startswith("call:") else "moderator"
        label = f"`{name.removeprefix('call:')}` ({who})"
        if big is None:
            lines.append(f"| {label} | n/a | {small[0]} | n/a | {small[1]} | n/a |")
            within = False
            continue
        ratios = [b / s for b, s in zip(big[:2], small[:2], strict=True) if s]
        ratio = max(ratios) if ratios else 1.0
        scan = " (Scan)" if "Scan" in big[2] else ""
        within = within and ratio <= TOLERANCE and not scan
        # Which requests the large world added, so that a difference says where it comes from.
        extra = sorted((Counter(big[2]) - Counter(small[2])).elements()) if ratio > 1 else []
        more = f" (also {', '.join(extra)})" if extra else ""
        lines.append(
            f"| {label}{scan}{more} | {big[0]} | {small[0]} | {big[1]} | {small[1]} | {ratio:.2f} |"
        )
    return "\n".join(lines), within


def update_page(body: str) -> bool:
    return write_section(PAGE, BLOCK_START, BLOCK_END, body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--size", choices=sorted(WORLD_SIZES), default="large")
    parser.add_argument("--no-page", action="store_true", help="print only")
    arguments = parser.parse_args(argv)
    size = WORLD_SIZES[arguments.size]

    from bench.report import agora_logs_to_file

    agora_logs_to_file("agora.log")
    twin, large, written, seconds = measure(size)
    rows, within = table(twin, large)
    counts = ", ".join(f"{count:,} {kind}" for kind, count in written.items())
    # moto keeps every item in this process: the peak says what a bigger size would need.
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
    body = (
        f"Taken on {datetime.now(UTC).date().isoformat()} on {machine_description()}: "
        f"size `{size.name}` ({counts}, built and measured in {seconds / 60:.0f} min, "
        f"peak memory {peak_gb:.1f} GB); "
        f"every read within {TOLERANCE} of its twin: {'yes' if within else 'NO'}.\n\n{rows}"
    )
    print(body)
    if not arguments.no_page and update_page(body):
        print("wrote docs/benchmarks.md's scale table")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
