"""A player as the store reads it once and the rules hold it: a frozen record, not the PynamoDB
item (store/player.py maps one to the other)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Player:
    id: str
    name: str
    experience: float
    is_public_profile: bool
    # The spec spells this field so.
    last_log_notifation: datetime | None
    last_log_read: datetime | None
    last_modified: datetime
    # JSON objects as stored, checked when answered.
    quests: Sequence[Any]
    cards: Sequence[Any]
    log: Sequence[Any]


class CreateRefused(Exception):
    """A player's create was cancelled: which of its conditions failed (its id or its name is
    taken)."""

    def __init__(self, *, id_taken: bool, name_taken: bool) -> None:
        super().__init__("player id or name taken")
        self.id_taken = id_taken
        self.name_taken = name_taken
