"""The game player (spec "Player"), under /rest/v1/en_US/ where `x-api-auth-key` is accepted too."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.schemas.paths import PlayerPath
from chalicelib.schemas.player import PlayerCreate, PlayerOut

player_api = Blueprint(__name__)
PREFIX = "/rest/v1/en_US/player"


@route(player_api, "POST", PREFIX, need=Need.ROOT_ADMIN, response=PlayerOut)
def create_player(call: Call[None, None, PlayerCreate]) -> PlayerOut:
    """Create the player of a user: experience 0, level 1, no quests, cards or log."""
    return deps.player_service().create(call.body)


@route(player_api, "GET", f"{PREFIX}/{{playerId}}", need=Need.ROOT_ADMIN, response=PlayerOut)
def get_player(call: Call[PlayerPath, None, None]) -> PlayerOut:
    """A player with quests, cards and log."""
    return deps.player_service().get(call.path.playerId)
