"""The game player: creation defaults, unique ids and names (also under concurrency), levels."""

from __future__ import annotations

import threading
import uuid

import pytest

from chalicelib import deps

PLAYERS = "/rest/v1/en_US/player"
MISSING = "00000000-0000-4000-8000-000000000000"

QUEST = {
    "id": "6f1c0c7e-1c1f-4a59-9d59-2f8f3f0c0a01",
    "questId": "6f1c0c7e-1c1f-4a59-9d59-2f8f3f0c0a02",
    "name": "First harvest",
    "description": "<p>Pick <b>ten</b> tomatoes</p><script>alert(1)</script>",
    "thumbImageUrl": "https://img.example/q-thumb.png",
    "imageUrl": "https://img.example/q.png",
    "availableTo": "2026-03-01T00:00:00Z",
    "expiresOn": "2026-04-01T00:00:00+02:00",
    "startedOn": "2026-02-01T10:00:00Z",
    "rewardCardsCount": 2,
    "experience": 50,
    "coins": 5,
    "stateMessage": "Half way there",
    "features": {"season": "summer"},
}
CARD = {
    "id": "6f1c0c7e-1c1f-4a59-9d59-2f8f3f0c0b01",
    "cardId": "6f1c0c7e-1c1f-4a59-9d59-2f8f3f0c0b02",
    "name": "Green thumb",
    "imageUrl": "https://img.example/c.png",
    "usageCount": 3,
    "costToRemove": -10,
    "features": {"rarity": "rare"},
}
LOG = {
    "id": "6f1c0c7e-1c1f-4a59-9d59-2f8f3f0c0c01",
    "title": "Card gained",
    "description": "You gained Green thumb",
    "notification": "<b>New card!</b>",
    "logType": "GameCardGained",
    "experience": 10,
    "createdOn": "2026-02-02T09:30:00Z",
    "cards": [
        {
            "id": CARD["id"],
            "cardId": CARD["cardId"],
            "name": "Green thumb",
            "imageUrl": "https://img.example/c.png",
            "isGained": True,
        }
    ],
}


@pytest.fixture
def people(community):
    c = community
    c.root_admin = c.users[0]["id"]
    c.garden = c.group("garden")
    c.garden_admin = c.user("garden-admin", {c.garden: "administrator"})
    c.member = c.user("member", {c.root: "member"})
    return c


def new_id() -> str:
    return str(uuid.uuid4())


def test_created_player_has_the_defaults_of_the_spec_sample(api, people):
    people.load()
    player_id = new_id()
    status, body = api.post(PLAYERS, people.root_admin, {"id": player_id, "name": "  Ann  "})
    assert status == 200 and body["success"] is True
    player = body["object"]
    last_modified = player.pop("lastModified")
    assert last_modified.endswith("Z")
    assert player == {
        "id": player_id,
        "type": "player",
        "name": "Ann",
        "experience": 0,
        "level": 1,
        "levelStartExperience": 0,
        "levelEndExperience": 100,
        "isPublicProfile": False,
        "lastLogNotifation": None,
        "lastLogRead": None,
        "quests": [],
        "cards": [],
        "log": [],
        "accessWarnings": [],
    }
    status, body = api.get(f"{PLAYERS}/{player_id}", people.root_admin)
    assert status == 200
    assert body["object"] == {**player, "lastModified": last_modified}


def test_name_taken_in_another_case_is_400_name(api, people):
    people.load()
    api.post(PLAYERS, people.root_admin, {"id": new_id(), "name": "Ann the Brave"})
    second = new_id()
    status, body = api.post(PLAYERS, people.root_admin, {"id": second, "name": "ANN THE brave"})
    assert status == 400 and body["success"] is False
    assert body["errors"] == [
        {"key": "name", "value": "ANN THE brave", "message": "name is already taken"}
    ]
    assert body["object"] == {"id": second, "name": "ANN THE brave"}
    status, _ = api.get(f"{PLAYERS}/{second}", people.root_admin)
    assert status == 404


def test_name_of_a_loaded_player_is_taken(api, people):
    people.players.append({"id": new_id(), "name": "Loaded Larry"})
    people.load()
    status, body = api.post(PLAYERS, people.root_admin, {"id": new_id(), "name": "loaded larry"})
    assert status == 400 and [e["key"] for e in body["errors"]] == ["name"]


def test_id_taken_is_400_id_and_the_player_is_unchanged(api, people):
    people.load()
    player_id = new_id()
    api.post(PLAYERS, people.root_admin, {"id": player_id, "name": "Ann"})
    status, body = api.post(PLAYERS, people.root_admin, {"id": player_id, "name": "Bob"})
    assert status == 400
    assert [e["key"] for e in body["errors"]] == ["id"]
    _, body = api.get(f"{PLAYERS}/{player_id}", people.root_admin)
    assert body["object"]["name"] == "Ann"
    # Bob's name was not reserved by the refused create.
    status, _ = api.post(PLAYERS, people.root_admin, {"id": new_id(), "name": "Bob"})
    assert status == 200


def test_id_and_name_both_taken_report_both_keys(api, people):
    people.load()
    player_id = new_id()
    api.post(PLAYERS, people.root_admin, {"id": player_id, "name": "Ann"})
    status, body = api.post(PLAYERS, people.root_admin, {"id": player_id, "name": "ann"})
    assert status == 400 and [e["key"] for e in body["errors"]] == ["id", "name"]


@pytest.mark.parametrize(
    ("payload", "key"),
    [
        ({"name": "Ann"}, "id"),
        ({"id": "not-a-guid", "name": "Ann"}, "id"),
        ({"id": MISSING}, "name"),
        ({"id": MISSING, "name": "   "}, "name"),
    ],
)
def test_invalid_create_is_400_with_the_field_key(api, people, payload, key):
    people.load()
    status, body = api.post(PLAYERS, people.root_admin, payload)
    assert status == 400 and [e["key"] for e in body["errors"]] == [key]


def test_unknown_or_malformed_player_id(api, people):
    people.load()
    status, body = api.get(f"{PLAYERS}/{MISSING}", people.root_admin)
    assert status == 404 and body["errors"][0]["key"] == "playerId"
    status, body = api.get(f"{PLAYERS}/nope", people.root_admin)
    assert status == 400 and body["errors"][0]["key"] == "playerId"


@pytest.mark.parametrize(
    ("who", "expected"),
    [("root_admin", 200), ("garden_admin", 403), ("member", 403), (None, 401)],
)
def test_player_methods_need_the_root_group_administrator(api, people, who, expected):
    player_id = new_id()
    people.players.append({"id": player_id, "name": "Existing"})
    people.load()
    caller = getattr(people, who) if who else None
    status, body = api.get(f"{PLAYERS}/{player_id}", caller)
    assert status == expected and body["success"] is (expected == 200)
    status, _ = api.post(PLAYERS, caller, {"id": new_id(), "name": f"New {who}"})
    assert status == expected


def test_x_api_auth_key_is_accepted_on_the_player_paths(api, people):
    from tests.fixtures import token

    people.load()
    status, body = api.call(
        "POST",
        PLAYERS,
        body={"id": new_id(), "name": "Keyed"},
        headers={"x-api-auth-key": token(people.root_admin)},
    )
    assert status == 200 and body["object"]["name"] == "Keyed"


@pytest.mark.parametrize(
    ("experience", "level", "start", "end"),
    [(0, 1, 0, 100), (99, 1, 0, 100), (100, 2, 100, 400), (399, 2, 100, 400), (400, 3, 400, 900)],
)
def test_level_and_its_bounds_follow_the_formula(api, people, experience, level, start, end):
    player_id = new_id()
    people.players.append({"id": player_id, "name": "Leveller", "experience": experience})
    people.load()
    status, body = api.get(f"{PLAYERS}/{player_id}", people.root_admin)
    assert status == 200
    player = body["object"]
    assert player["experience"] == experience
    assert (player["level"], player["levelStartExperience"], player["levelEndExperience"]) == (
        level,
        start,
        end,
    )


def test_level_formula_with_other_settings():
    from chalicelib.services.player import level_for

    # base 50, exponent 1.5: levels start at 0, 50, 141, 260, 400, ...
    assert level_for(140, 50, 1.5) == level_for(50, 50, 1.5)
    assert (level_for(141, 50, 1.5).level, level_for(141, 50, 1.5).start_experience) == (3, 141)
    assert level_for(10**9, 100, 2.0).level == 3163  # 100 * 3162 ** 2 <= 10**9 < 100 * 3163 ** 2
    assert level_for(5, 100, 0.0).level == 1  # a flat formula does not loop


def test_loaded_player_shows_quests_cards_and_log_with_every_field(api, people):
    player_id = new_id()
    people.players.append(
        {
            "id": player_id,
            "name": "Questing Quinn",
            "experience": 150,
            "isPublicProfile": True,
            "lastLogRead": "2026-02-03T08:00:00Z",
            "quests": [QUEST],
            "cards": [CARD],
            "log": [LOG],
        }
    )
    people.load()
    status, body = api.get(f"{PLAYERS}/{player_id}", people.root_admin)
    assert status == 200
    player = body["object"]
    assert player["isPublicProfile"] is True
    assert player["lastLogRead"] == "2026-02-03T08:00:00Z"
    assert player["lastLogNotifation"] is None
    assert (player["level"], player["levelStartExperience"], player["levelEndExperience"]) == (
        2,
        100,
        400,
    )
    [quest] = player["quests"]
    assert quest == {
        **QUEST,
        "type": "quest",
        "description": "<p>Pick <b>ten</b> tomatoes</p>",
        "expiresOn": "2026-03-31T22:00:00Z",
        "completedOn": None,
        "failedOn": None,
        "rejectedOn": None,
        "accessWarnings": [],
    }
    [card] = player["cards"]
    assert card == {
        **CARD,
        "type": "card",
        "expiresOn": None,
        "isEnabled": True,
        "accessWarnings": [],
    }
    [entry] = player["log"]
    assert entry == {
        **LOG,
        "type": "log",
        "coins": None,
        "isNew": True,
        "isNotified": False,
        "accessWarnings": [],
    }


def test_fixture_with_unknown_quest_field_or_log_type_is_refused(people):
    from chalicelib.services.fixture import FixtureInvalid

    people.players.append(
        {
            "id": new_id(),
            "name": "Bad",
            "quests": [{**QUEST, "colour": "red"}],
            "log": [{**LOG, "logType": "Nonsense"}],
        }
    )
    with pytest.raises(FixtureInvalid) as raised:
        deps.fixture_service().load(people.as_fixture())
    paths = {error.path for error in raised.value.errors}
    assert paths == {"players[0].quests[0].colour", "players[0].log[0].logType"}


def test_loading_twice_changes_nothing_and_a_rename_frees_the_old_name(api, people):
    player_id = new_id()
    people.players.append({"id": player_id, "name": "Old Name", "experience": 5})
    people.load()
    _, first = api.get(f"{PLAYERS}/{player_id}", people.root_admin)
    people.load()
    _, second = api.get(f"{PLAYERS}/{player_id}", people.root_admin)
    assert second["object"] == first["object"]

    people.players[0]["name"] = "New Name"
    people.load()
    status, _ = api.post(PLAYERS, people.root_admin, {"id": new_id(), "name": "old name"})
    assert status == 200
    status, body = api.post(PLAYERS, people.root_admin, {"id": new_id(), "name": "new name"})
    assert status == 400 and body["errors"][0]["key"] == "name"


# --- concurrency, against a real (threaded) DynamoDB endpoint ----------------------------------


def test_two_concurrent_creates_of_one_name_let_exactly_one_succeed(moto_server):
    from chalicelib.errors import ValidationFailed
    from chalicelib.schemas.player import PlayerCreate
    from chalicelib.store.player import PlayerNameRecord, PlayerRecord

    service = deps.player_service()
    start = threading.Barrier(2)
    outcomes: dict[str, str] = {}
    ids = [new_id(), new_id()]

    def create(player_id: str, name: str) -> None:
        body = PlayerCreate(id=player_id, name=name)
        start.wait()
        try:
            service.create(body)
            outcomes[player_id] = "created"
        except ValidationFailed as refused:
            outcomes[player_id] = ",".join(e.key for e in refused.errors)

    threads = [
        threading.Thread(target=create, args=(ids[0], "Racer")),
        threading.Thread(target=create, args=(ids[1], "RACER")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes.values()) == ["created", "name"]
    [winner] = [player_id for player_id, outcome in outcomes.items() if outcome == "created"]
    [loser] = [player_id for player_id in ids if player_id != winner]
    assert PlayerNameRecord.get("racer").player_id == winner
    assert PlayerRecord.count(loser) == 0
