"""Domain events out: every event of services/domain_events.py onto the EventBridge bus named by
AGORA_EVENT_BUS (empty: none are sent), so an organisation routes them to its own systems with
rules (API destinations, queues, functions) and no code in Agora.

Each entry: `Source` "agora", `DetailType` the event's name in words ("Post Created"), `Detail`
the event's fields in camelCase plus `schemaVersion` (README, "Domain events").

Delivery runs after the write that caused the event and never fails or holds up that call: each
PutEvents gets one quick try (chalicelib/aws.py), entries that fail are retried up to `ATTEMPTS`
times in all, with a short pause, and what still fails is logged (level ERROR, with the events'
names and ids) rather than raised.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from chalicelib.logs import get_logger

log = get_logger("event_bus")

SOURCE = "agora"
SCHEMA_VERSION = 1
ATTEMPTS = 3
BATCH = 10  # PutEvents takes at most 10 entries


def detail_type(event: Any) -> str:
    """`PostCreated` → `Post Created`."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", type(event).__name__)


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def detail(event: Any) -> dict[str, Any]:
    return {"schemaVersion": SCHEMA_VERSION, **{_camel(k): v for k, v in asdict(event).items()}}


def entry(event: Any, bus_name: str) -> dict[str, str]:
    return {
        "Source": SOURCE,
        "DetailType": detail_type(event),
        "Detail": json.dumps(detail(event), ensure_ascii=False),
        "EventBusName": bus_name,
    }


def put_events(entries: list[dict[str, str]]) -> dict[str, Any]:
    from chalicelib.aws import client

    return dict(client("events").put_events(Entries=entries))


class EventBusPublisher:
    """A domain event handler (`publish_all` for batches)."""

    def __init__(
        self,
        bus_name: str,
        send: Callable[[list[dict[str, str]]], dict[str, Any]] = put_events,
        sleep: Callable[[float], None] = time.sleep,
        attempts: int = ATTEMPTS,
    ) -> None:
        self.bus_name = bus_name
        self.send = send
        self.sleep = sleep
        self.attempts = attempts

    def __call__(self, event: Any) -> None:
        self.publish_all([event])

    def publish_all(self, events: list[Any]) -> None:
        if not self.bus_name or not events:
            return
        entries = [entry(event, self.bus_name) for event in events]
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
        log.error(
            "domain events not delivered",
            extra={
                "bus": self.bus_name,
                "events": [{"type": e["DetailType"], "detail": e["Detail"]} for e in pending],
            },
        )
