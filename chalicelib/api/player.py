"""The game player (spec "Player"), under /rest/v1/en_US/ where `x-api-auth-key` is accepted too."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, Routes
from chalicelib.auth import Need
from chalicelib.schemas.paths import PlayerPath
from chalicelib.schemas.player import PlayerCreate, PlayerOut

player_api = Blueprint(__name__)
PREFIX = "/rest/v1/en_US/player"
root_admin = Routes(player_api, Need.ROOT_ADMIN)


@root_admin("POST", PREFIX, PlayerOut)
def create_player(call: Call[None, None, PlayerCreate]) -> PlayerOut:
    """Create the player of a user: experience 0, level 1, no quests, cards or log."""
    return deps.player_service().create(call.body)


@root_admin("GET", f"{PREFIX}/{{playerId}}", PlayerOut)
def get_player(call: Call[PlayerPath, None, None]) -> PlayerOut:
    """A player with quests, cards and log."""
    return deps.player_service().get(call.path.playerId)
