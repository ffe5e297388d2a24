"""Group feed settings: one document per group; answers list every day and hour (CONTRACT §8)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from chalicelib.schemas.feed import (
    DEFAULT_TTL_MINUTES,
    HOURS,
    WEEKDAYS,
    FeedSettingsOut,
    FeedSettingsUpdate,
    NamedFlag,
)
from chalicelib.services.links import group_ref
from chalicelib.services.ports.content import DocumentStore

KIND = "feedSettings"


class FeedService:
    def __init__(self, documents: DocumentStore, clock: Callable[[], datetime]) -> None:
        self.documents = documents
        self.clock = clock

    def get(self, group: Any) -> FeedSettingsOut:
        # A group that never saved its settings answers the defaults.
        return self._out(group, self.documents.get(group.id, KIND) or {})

    def update(self, group: Any, update: FeedSettingsUpdate, editor_id: str) -> FeedSettingsOut:
        doc = {
            "imageUrl": update.image_url,
            "imageLinkUrl": update.image_link_url,
            "imageAlt": update.image_alt,
            "ttl": update.ttl,
            "editorEmail": update.editor_email,
            "webmasterEmail": update.webmaster_email,
            # Only the selected names are stored; the answer lists all of them.
            "skipDays": [f.name for f in update.skip_days if f.selected],
            "skipHours": [f.name for f in update.skip_hours if f.selected],
        }
        self.documents.put(group.id, KIND, doc, modified_on=self.clock(), editor_id=editor_id)
        return self._out(group, doc)

    @staticmethod
    def _out(group: Any, doc: dict[str, Any]) -> FeedSettingsOut:
        days, hours = set(doc.get("skipDays", [])), set(doc.get("skipHours", []))
        return FeedSettingsOut(
            group=group_ref(group),
            image_url=doc.get("imageUrl", ""),
            image_link_url=doc.get("imageLinkUrl", ""),
            image_alt=doc.get("imageAlt", ""),
            ttl=doc.get("ttl", DEFAULT_TTL_MINUTES),
            editor_email=doc.get("editorEmail", ""),
            webmaster_email=doc.get("webmasterEmail", ""),
            skip_days=[NamedFlag(name=day, selected=day in days) for day in WEEKDAYS],
            skip_hours=[NamedFlag(name=hour, selected=hour in hours) for hour in HOURS],
        )
