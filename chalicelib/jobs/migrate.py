"""`migrate`: brings every stored item to the shape the current code writes (store/migrations.py).

The same function runs from the CLI, from `make run`'s start and, after each stack update, from
`make deploy` (the stack's `migrate` function, invoked until it answers done).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from chalicelib.jobs.base import Deadline


@dataclass
class MigrationReport:
    lines: list[str] = field(default_factory=list)
    done: bool = True

    def as_dict(self) -> dict[str, Any]:
        """The function's answer (make deploy reads `done`)."""
        return {"done": self.done, "lines": self.lines}


def run_migrations(deadline: Deadline, created_empty: Collection[str] = ()) -> MigrationReport:
    """`created_empty`: tables just created, written only by this code since (`make run`'s
    start): their migrations have nothing to read (store/migrations.py `run`)."""
    from chalicelib.domain.audit import acting_as_job
    from chalicelib.store import migrations

    everything = migrations.migrations()
    # What the migrations change is recorded as the job's (or the CLI command's that runs it).
    with acting_as_job("migrate"):
        outcomes = migrations.run(everything, deadline.expired, created_empty=created_empty)
    ran = {o.name for o in outcomes}
    lines = [o.line() for o in outcomes]
    # Those after a migration the deadline stopped: not started in this run.
    lines += [
        f"{m.name}: waits for the next run ({m.what})" for m in everything if m.name not in ran
    ]
    return MigrationReport(lines, all(o.done for o in outcomes) and len(ran) == len(everything))


# The stack's function stops starting pages this long before its time limit: well inside it, and
# under its duration alarm (80% of the timeout); make deploy invokes it again until done.
INVOCATION_MARGIN_MS = 300_000


def handle_invocation(context: Any) -> dict[str, Any]:
    """The stack's `migrate` function: as much as fits in this invocation's time."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        deadline = Deadline.unbounded()
    else:
        deadline = Deadline(remaining, margin_ms=min(INVOCATION_MARGIN_MS, remaining() // 3))
    return run_migrations(deadline).as_dict()
