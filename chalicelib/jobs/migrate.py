"""`migrate`: brings every stored item to the shape the current code writes (store/migrations.py).

The same function runs from the CLI, from `make run`'s start and, after each stack update, from
`make deploy` (the stack's `migrate` function, invoked until it answers done).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from chalicelib.domain import audit
from chalicelib.jobs.base import Deadline
from chalicelib.services.canary import SECRET_VARIABLE


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
    from chalicelib.store import migrations

    everything = migrations.migrations()
    # What the migrations change is recorded as the job's (or the CLI command's that runs it).
    with audit.acting_as_job("migrate"):
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


def ensure_canary_account(secret_id: str, secrets: Any) -> str:
    """The deploy canary's account (services/canary.py), its password the secret's value: made
    once, its password set again only when the secret changed. Answers the report's line."""
    from chalicelib import deps

    password = secrets.get_secret_value(SecretId=secret_id)["SecretString"]
    with audit.acting_as_job("migrate"):
        return deps.canary_account_service().ensure(password).line()


def handle_invocation(context: Any, secrets: Any = None) -> dict[str, Any]:
    """The stack's `migrate` function: as much as fits in this invocation's time, then the
    canary's account, which the PreTraffic hook signs in with once make deploy has migrated
    (the stack names its secret in AGORA_CANARY_SECRET; make run and the CLI have none)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        deadline = Deadline.unbounded()
    else:
        deadline = Deadline(remaining, margin_ms=min(INVOCATION_MARGIN_MS, remaining() // 3))
    report = run_migrations(deadline)
    secret_id = os.environ.get(SECRET_VARIABLE, "")
    if report.done and secret_id:
        from chalicelib import aws

        report.lines.append(
            ensure_canary_account(secret_id, secrets or aws.client("secretsmanager"))
        )
    return report.as_dict()
