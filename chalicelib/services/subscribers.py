"""The subscribers of the domain events (domain/announcements.py), told in order.

The app composes them (`chalicelib.deps.domain_events`) and the outbox drain (jobs/outbox.py)
tells them what the outbox recorded: notifications, the failing-mailbox notice, the bus.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chalicelib.domain.announcements import Handler, recorded
from chalicelib.logs import get_logger

log = get_logger("events")


class DomainEvents:
    """The subscribers of every event, told in order; the drain runs it (jobs/outbox.py)."""

    def __init__(self, handlers: Sequence[Handler] = ()) -> None:
        self.handlers = list(handlers)

    def publish(self, announcement: Any) -> None:
        self.publish_all([announcement])

    def publish_all(self, announcements: Sequence[Any]) -> None:
        """Tell every handler (a handler that can takes them as one batch). Every handler is
        told even when one fails; then the first failure is raised, so the drain runs the
        announcements again (each handler is idempotent: what was told is not told twice)."""
        if not announcements:
            return
        items = [recorded(announcement) for announcement in announcements]
        failure: Exception | None = None
        for handler in self.handlers:
            try:
                batch = getattr(handler, "publish_all", None)
                if batch is not None:
                    batch(list(items))
                else:
                    for item in items:
                        handler(item)
            except Exception as error:
                kinds = sorted({type(item.announcement).__name__ for item in items})
                log.exception("event handler failed", extra={"events": kinds})
                failure = failure or error
        if failure is not None:
            raise failure
