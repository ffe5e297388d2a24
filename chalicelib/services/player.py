"""The game player: create (unique id and name) and read, with the level derived from experience."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from chalicelib.domain import audit
from chalicelib.domain.players import CreateRefused, Player
from chalicelib.domain.ports.people import PlayerStore
from chalicelib.errors import FieldError, NotFound, ValidationFailed, as_text
from chalicelib.schemas.player import CardOut, LogOut, PlayerCreate, PlayerOut, QuestOut


@dataclass(frozen=True)
class Level:
    level: int
    start_experience: int
    end_experience: int


def level_for(experience: int, base: float, exponent: float) -> Level:
    """Level L starts at round(base * (L - 1) ** exponent) experience (CONTRACT §2)."""

    def start(level: int) -> int:
        return round(float(base * (level - 1) ** exponent))

    experience = max(experience, 0)
    level = 1
    if base > 0 and exponent > 0:
        # A first guess from the inverse of the formula; rounding is settled by the steps below.
        level = 1 + int((experience / base) ** (1 / exponent))
    while level > 1 and start(level) > experience:
        level -= 1
    # A formula that stops growing (exponent 0) would never end: stay at the last level that grows.
    while start(level + 1) <= experience and start(level + 1) > start(level):
        level += 1
    return Level(level, start(level), start(level + 1))


class PlayerService:
    def __init__(
        self,
        players: PlayerStore,
        clock: Callable[[], datetime],
        level_base: float,
        level_exponent: float,
    ) -> None:
        self.players = players
        self.clock = clock
        self.level_base = level_base
        self.level_exponent = level_exponent

    def create(self, body: PlayerCreate) -> PlayerOut:
        try:
            new = Player(
                id=body.id,
                name=body.name,
                experience=0,
                is_public_profile=False,
                last_log_notifation=None,
                last_log_read=None,
                last_modified=self.clock(),
                quests=(),
                cards=(),
                log=(),
            )
            record = self.players.create(
                new,
                audit=audit.entry(
                    "player.create",
                    target=("player", body.id),
                    group_id=None,
                    before=None,
                    after={"id": body.id, "name": body.name},
                ),
            )
        except CreateRefused as refused:
            errors = []
            if refused.id_taken:
                errors.append(FieldError("id", as_text(body.id), "id is already taken"))
            if refused.name_taken:
                errors.append(FieldError("name", as_text(body.name), "name is already taken"))
            raise ValidationFailed(errors, body.model_dump(mode="json", by_alias=True)) from None
        return self.out(record)

    def get(self, player_id: str) -> PlayerOut:
        record = self.players.get(player_id)
        if record is None:
            raise NotFound("playerId", player_id, "player")
        return self.out(record)

    def out(self, record: Player) -> PlayerOut:
        experience = int(record.experience)
        level = level_for(experience, self.level_base, self.level_exponent)
        return PlayerOut(
            id=record.id,
            name=record.name,
            experience=experience,
            level=level.level,
            level_start_experience=level.start_experience,
            level_end_experience=level.end_experience,
            is_public_profile=bool(record.is_public_profile),
            last_log_notifation=record.last_log_notifation,
            last_log_read=record.last_log_read,
            last_modified=record.last_modified,
            quests=[QuestOut.model_validate(q) for q in record.quests or []],
            cards=[CardOut.model_validate(c) for c in record.cards or []],
            log=[LogOut.model_validate(entry) for entry in record.log or []],
        )
