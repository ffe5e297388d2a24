"""`make run` creates the tables a start finds missing: a migration of a table it has just created
has nothing to bring (only the current code has written to it), so it is recorded done, as
having read nothing, without a Scan; a migration of any other table reads it as before."""

from __future__ import annotations

from chalicelib.jobs.base import Deadline
from chalicelib.jobs.migrate import run_migrations


def test_migrations_of_just_created_tables_are_done_without_reading_them(aws, dynamo_counter):
    from chalicelib.store import migrations
    from chalicelib.store.groups import GroupRecord

    everything = migrations.migrations()
    new_tables = [m.model.Meta.table_name for m in everything if m.model is not GroupRecord]

    report = run_migrations(Deadline.unbounded(), new_tables)

    assert report.done is True
    assert report.lines == [
        f"{m.name}: done: 0 item(s) read, 0 changed ({m.what})" for m in everything
    ]
    # Only the group table, not among the new ones, was read.
    assert dynamo_counter.requests.get("Scan") == 1
    for migration in everything:
        state = migrations.state_of(migration.name)
        assert state.done is True and state.finished_on is not None
        assert state.position is None and state.examined == 0 and state.changed == 0
    # Recorded done: a later run (a restart, `cli migrate`) reads nothing either.
    dynamo_counter.reset()
    again = run_migrations(Deadline.unbounded())
    assert again.lines == [f"{m.name}: already done" for m in everything]
    assert "Scan" not in dynamo_counter.requests
