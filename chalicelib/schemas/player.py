"""The game player (spec "Player", with Card, Quest and Log).

`*Fields` hold a record's fields as the spec names them; the API's records add `type` and
`accessWarnings`, and the fixture's (schemas/fixture.py) refuse unknown keys. Level and its bounds
are derived from experience (CONTRACT §2), never stored or loaded.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chalicelib.schemas.common import ApiModel, Guid, Record, SingleLine, UtcDateTime

LogType = Literal[
    "General",
    "GameCardGained",
    "GameCardLost",
    "QuestSucceeded",
    "QuestFailed",
    "QuestStarted",
    "QuestRejected",
    "QuestAvailable",
    "QuestUnavailable",
]


class PlayerCreate(ApiModel):
    id: Guid
    name: SingleLine = Field(min_length=1, max_length=100)


class CardNamed(ApiModel):
    """A card as a deck and a log entry name it."""

    id: Guid
    card_id: Guid
    name: str = Field(min_length=1)
    image_url: str = ""


class CardFields(CardNamed):
    usage_count: int | None = Field(default=None, ge=0)
    expires_on: UtcDateTime | None = None
    is_enabled: bool = True
    # May be negative (removing the card then adds points); null: the card cannot be removed.
    cost_to_remove: int | None = None
    features: dict[str, str] = Field(default_factory=dict)


class QuestFields(ApiModel):
    id: Guid
    quest_id: Guid
    name: str = Field(min_length=1)
    description: str = ""
    thumb_image_url: str = ""
    image_url: str = ""
    available_to: UtcDateTime | None = None
    expires_on: UtcDateTime | None = None
    started_on: UtcDateTime | None = None
    completed_on: UtcDateTime | None = None
    failed_on: UtcDateTime | None = None
    rejected_on: UtcDateTime | None = None
    reward_cards_count: int = Field(default=0, ge=0)
    experience: int = 0
    coins: int = 0
    state_message: str | None = None
    features: dict[str, Any] = Field(default_factory=dict)


class LogCardFields(CardNamed):
    # True when the card was added to the deck, false when it was removed.
    is_gained: bool


class LogFields(ApiModel):
    id: Guid
    title: str = Field(min_length=1)
    description: str = ""
    notification: str | None = None
    log_type: LogType = "General"
    experience: int | None = None
    coins: int | None = None
    is_new: bool = True
    is_notified: bool = False
    created_on: UtcDateTime
    # `cards` is declared by each kind of log (its cards' model differs), last.


class CardOut(CardFields, Record):
    type: Literal["card"] = "card"


class QuestOut(QuestFields, Record):
    type: Literal["quest"] = "quest"


class LogOut(LogFields, Record):
    cards: list[LogCardFields] = Field(default_factory=list)
    type: Literal["log"] = "log"


class PlayerOut(Record):
    id: str
    type: Literal["player"] = "player"
    name: str
    experience: int
    level: int
    level_start_experience: int
    level_end_experience: int
    is_public_profile: bool = False
    # The spec spells this field so.
    last_log_notifation: UtcDateTime | None = None
    last_log_read: UtcDateTime | None = None
    last_modified: UtcDateTime
    quests: list[QuestOut] = Field(default_factory=list)
    cards: list[CardOut] = Field(default_factory=list)
    log: list[LogOut] = Field(default_factory=list)
