"""A user's screen alert and their red label, as the store reads them once and the rules hold
them: frozen records, not the PynamoDB items (store/alerts.py maps one to the other)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chalicelib.domain.json import JsonObject


@dataclass(frozen=True)
class Alert:
    user_id: str
    alert_id: str
    kind: str  # newPost | newComment
    reason: str  # the subscription that matched
    # What the alert shows, as the API shows it: group, post, author, commentId, url, title.
    refs: JsonObject
    stored_on: datetime
    show_screen_alert: bool
    show_red_label: bool


@dataclass(frozen=True)
class AlertState:
    """The red label: red-label alerts ever stored, and that total when last marked read."""

    red_total: int
    red_read: int
    read_on: datetime | None

    @property
    def unread(self) -> int:
        return max(0, self.red_total - self.red_read)
