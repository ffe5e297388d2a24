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
    Recorded,
    RejectionNoticeDue,
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

    def __call__(self, item: Recorded) -> None:
        self.publish_all([item])

    def publish_all(self, items: Sequence[Recorded]) -> None:
        told = [item for item in items if not isinstance(item.announcement, INTERNAL)]
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
