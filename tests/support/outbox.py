"""The outbox drain in tests: what a write announced is told only when the test drains it, as the
`drain-outbox` function would (jobs/outbox.py), so a test says when consequences happen."""

from __future__ import annotations


def drain() -> int:
    """Tell everything the outbox holds that was not told yet; answers how many records."""
    from chalicelib.jobs.outbox import drain_in_process

    return drain_in_process()
