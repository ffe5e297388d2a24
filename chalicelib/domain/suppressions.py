"""A suppressed address as the store reads it once and the rules hold it (store/sending.py
maps its item to this frozen record)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Suppression:
    address: str  # lower-cased
    reason: str  # bounce | complaint
    # The receiving server's words ("smtp; 550 5.1.1 user unknown") or the complaint's type.
    detail: str
    feedback_id: str
    suppressed_on: datetime
