"""Players, and the name items that keep player names unique.

A player's name is unique case-insensitively. A create writes the player and a `player-names` item
keyed by the lower-cased name in one transaction, each conditioned on not existing yet: two creates
of one name cannot both succeed, whatever their timing (no read-then-write race).
Quests, cards and log entries are kept on the player item as JSON, as the spec names their fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from pynamodb.attributes import BooleanAttribute, JSONAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import TransactWriteError
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.aws import error_code
from chalicelib.clock import utc_now
from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.fixture import PlayerValues
from chalicelib.domain.players import CreateRefused, Player
from chalicelib.store import outbox
from chalicelib.store.base import UtcAttribute, frozen, register, table_meta, transact


@register
class PlayerRecord(Model):
    Meta = table_meta("players")

    id = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute()
    experience = NumberAttribute(default=0)
    is_public_profile = BooleanAttribute(default=False)
    # The spec spells this field so.
    last_log_notifation = UtcAttribute(null=True)
    last_log_read = UtcAttribute(null=True)
    last_modified = UtcAttribute()
    quests = JSONAttribute(default=list)
    cards = JSONAttribute(default=list)
    log = JSONAttribute(default=list)

    def as_player(self) -> Player:
        """The record as the rules hold it (domain/players.py)."""
        lists = {name: tuple(getattr(self, name) or ()) for name in ("quests", "cards", "log")}
        return frozen(self, Player, **lists)


@register
class PlayerNameRecord(Model):
    Meta = table_meta("player-names")

    name_lower = UnicodeAttribute(hash_key=True)
    player_id = UnicodeAttribute()


def name_key(name: str) -> str:
    return name.strip().lower()


class PlayerRepository:
    def get(self, player_id: str) -> Player | None:
        try:
            return PlayerRecord.get(player_id).as_player()
        except PlayerRecord.DoesNotExist:
            return None

    def get_many(self, player_ids: set[str]) -> dict[str, PlayerRecord]:
        if not player_ids:
            return {}
        return {p.id: p for p in PlayerRecord.batch_get(list(player_ids))}

    def create(self, new: Player, audit: Sequence[AuditEntry] = ()) -> Player:
        """Store a new player, with `audit` (its entries) in the same transaction; raise
        CreateRefused when its id or its name is taken."""

        items = outbox.records(audit, utc_now())
        values = dataclasses.asdict(new)
        player = PlayerRecord(
            **{**values, **{k: list(values[k]) for k in ("quests", "cards", "log")}}
        )
        name = PlayerNameRecord(name_key(player.name), player_id=player.id)
        connection = PlayerRecord._get_connection().connection

        def fill(transaction: TransactWrite) -> None:
            transaction.save(player, condition=PlayerRecord.id.does_not_exist())
            transaction.save(name, condition=PlayerNameRecord.name_lower.does_not_exist())
            outbox.add_to(transaction, items)  # after the two whose reasons are read below

        try:
            transact(connection, fill)
        except TransactWriteError as error:
            reasons = error.cancellation_reasons if error_code(error) else []
            failed = [bool(r and r.code == "ConditionalCheckFailed") for r in reasons[:2]]
            if len(failed) == 2 and any(failed):
                raise CreateRefused(id_taken=failed[0], name_taken=failed[1]) from None
            raise
        return player.as_player()

    def put_loaded(self, players: Sequence[PlayerValues], now: datetime) -> None:
        """Upsert fixture players with their name items (the fixture is authoritative).

        An unchanged player keeps its `last_modified` (loading twice changes nothing); a renamed
        player's old name item is removed, so the old name is free again.
        """
        existing = self.get_many({p["id"] for p in players})
        names = {name_key(p["name"]): p["id"] for p in players}
        stale: set[str] = set()
        with PlayerRecord.batch_write() as batch:
            for given in players:
                # A file that says when a player last changed (an export) is taken at its word.
                values = {k: v for k, v in given.items() if k != "last_modified"}
                old = existing.get(given["id"])
                unchanged = old is not None and all(
                    getattr(old, key) == value for key, value in values.items()
                )
                modified = old.last_modified if old is not None and unchanged else now
                modified = given.get("last_modified") or modified
                record = PlayerRecord(**given)
                record.last_modified = modified
                batch.save(record)
                if old is not None and name_key(old.name) not in names:
                    stale.add(name_key(old.name))
        with PlayerNameRecord.batch_write() as batch:
            for name in stale:
                batch.delete(PlayerNameRecord(name))
            for name, player_id in names.items():
                batch.save(PlayerNameRecord(name, player_id=player_id))
