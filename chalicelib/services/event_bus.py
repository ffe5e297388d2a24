"""Domain events out: every event of domain/announcements.py onto the EventBridge bus named by
AGORA_EVENT_BUS (empty: none are sent), so an organisation routes them to its own systems with
rules (API destinations, queues, functions) and no code in Agora.

Each entry: `Source` "agora", `DetailType` the event's name in words ("Post Created"), `Detail`
the event's fields in camelCase plus `schemaVersion` and `domainEventId` (the outbox item's id:
the same on every delivery of the event) (README, "Domain events").

It runs in the outbox drain (jobs/outbox.py), never in an API call: each PutEvents gets one quick
try (chalicelib/aws.py), entries that fail are retried up to `ATTEMPTS` times in all, with a
short pause, and what still fails is counted (metric EventPublishFailed), logged and raised, so
the drain delivers the event again.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict

from chalicelib import metrics
from chalicelib.domain.announcements import (
    Announcement,
    Handler,
    Recorded,
    RejectionNoticeDue,
    recorded,
)
from chalicelib.domain.json import JsonObject
from chalicelib.domain.ports.bus import PutEventsAnswer
from chalicelib.logs import get_logger

log = get_logger("event_bus")

SOURCE = "agora"
SCHEMA_VERSION = 1
ATTEMPTS = 3
BATCH = 10  # PutEvents takes at most 10 entries
# Agora's own errands, not news for the organisation's systems: a notice due to a rejected mail's
# sender names a stranger's address (the bus hears `Mail Rejected` for that mail).
INTERNAL = (RejectionNoticeDue,)


def detail_type(event: Announcement) -> str:
    """`PostCreated` → `Post Created`."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", type(event).__name__)


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


class EventsNotPublished(RuntimeError):
    """PutEvents kept refusing some entries: the drain delivers them again."""


def detail(event: Announcement, event_id: str) -> JsonObject:
    fields: JsonObject = {_camel(k): v for k, v in asdict(event).items()}
    return {"schemaVersion": SCHEMA_VERSION, "domainEventId": event_id, **fields}


def entry(item: Recorded, bus_name: str) -> dict[str, str]:
    return {
        "Source": SOURCE,
        "DetailType": detail_type(item.announcement),
        "Detail": json.dumps(detail(item.announcement, item.id), ensure_ascii=False),
        "EventBusName": bus_name,
    }


class EventBusPublisher:
    """A domain event handler (`publish_all` for batches)."""

    def __init__(
        self,
        bus_name: str,
        send: Callable[[list[dict[str, str]]], PutEventsAnswer],
        sleep: Callable[[float], None] = time.sleep,
        attempts: int = ATTEMPTS,
    ) -> None:
        self.bus_name = bus_name
        self.send = send
        self.sleep = sleep
        self.attempts = attempts

    def __call__(self, announcement: Announcement | Recorded) -> None:
        self.publish_all([announcement])

    def publish_all(self, announcements: Sequence[Announcement | Recorded]) -> None:
        told = [recorded(a) for a in announcements]
        told = [item for item in told if not isinstance(item.announcement, INTERNAL)]
        if not self.bus_name or not told:
            return
        entries = [entry(item, self.bus_name) for item in told]
        for start in range(0, len(entries), BATCH):
            self._deliver(entries[start : start + BATCH])

    def _deliver(self, entries: list[dict[str, str]]) -> None:
        pending = entries
        for attempt in range(1, self.attempts + 1):
            try:
                response = self.send(pending)
            except Exception as error:  # noqa: BLE001 - the caller's call must not fail
                log.warning(
                    "event bus refused the events",
                    extra={"attempt": attempt, "error": f"{type(error).__name__}: {error}"},
                )
                failed = pending
            else:
                results = response.get("Entries") or []
                failed = [e for e, r in zip(pending, results, strict=False) if r.get("ErrorCode")]
                if response.get("FailedEntryCount") and not failed:
                    failed = pending  # a count without per-entry results: try them all again
            if not failed:
                return
            pending = failed
            if attempt < self.attempts:
                self.sleep(0.05 * attempt)
        metrics.emit("EventPublishFailed", len(pending))
        log.error(
            "domain events not delivered",
            extra={
                "bus": self.bus_name,
                "events": [{"type": e["DetailType"], "detail": e["Detail"]} for e in pending],
            },
        )
        raise EventsNotPublished(f"{len(pending)} domain event(s) refused by the event bus")


# -----------------------------------------------------------------------------------------------
# The subscribers of the domain events (domain/announcements.py), told in order.
#
# The outbox drain composes them (jobs/outbox.py `AppSubscribers`, each built by chalicelib/deps.py)
# and tells them what the outbox recorded: notifications, the failing-mailbox notice, the
# rejection notices, the bus.


log = get_logger("events")


class DomainEvents:
    """The subscribers of every event, told in order; the drain runs it (jobs/outbox.py)."""

    def __init__(self, handlers: Sequence[Handler] = ()) -> None:
        self.handlers = list(handlers)

    def publish(self, announcement: Announcement | Recorded) -> None:
        self.publish_all([announcement])

    def publish_all(self, announcements: Sequence[Announcement | Recorded]) -> None:
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
