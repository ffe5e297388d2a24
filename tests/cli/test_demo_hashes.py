"""The demo's shipped password hashes (demo/password-hashes.json): each is a production-cost hash
of its demo password, and a password without one is hashed afresh."""

from __future__ import annotations

import json

from argon2 import extract_parameters, profiles

from agora_local.demo import (
    DEMO_FIXTURE,
    HASHES_NAME,
    DemoPasswordHashes,
    password_key,
    shipped_hashes,
    usable_hash,
    write_shipped_hashes,
)
from chalicelib.auth import verify_password


def demo_fixture() -> dict:
    return json.loads(DEMO_FIXTURE.read_text(encoding="utf-8"))


def test_each_demo_password_has_a_shipped_production_hash_that_verifies_it():
    shipped = shipped_hashes(DEMO_FIXTURE.with_name(HASHES_NAME))
    passwords = {u["password"] for u in demo_fixture()["users"] if u.get("password")}
    assert len(passwords) == 8 and set(shipped) == {password_key(p) for p in passwords}
    hashes = DemoPasswordHashes.start(DEMO_FIXTURE, wanted=True).into(demo_fixture())
    for user in hashes["users"]:
        stored = user["passwordHash"]
        assert "password" not in user and stored == shipped[password_key(_password_of(user))]
        assert stored.startswith("$argon2id$")
        assert extract_parameters(stored) == profiles.RFC_9106_LOW_MEMORY
        assert verify_password(stored, _password_of(user))
    # And a hash verifies its own password only.
    assert not verify_password(hashes["users"][0]["passwordHash"], "agora-demo-gus")


def _password_of(user: dict) -> str:
    return next(u["password"] for u in demo_fixture()["users"] if u["id"] == user["id"])


def test_a_changed_demo_password_is_hashed_afresh_and_the_others_are_the_shipped(tmp_path):
    fixture = demo_fixture()
    changed = fixture["users"][1]
    changed["password"] = "a-password-the-demo-never-had"
    (tmp_path / "community.json").write_text(json.dumps(fixture), encoding="utf-8")
    shipped = shipped_hashes(DEMO_FIXTURE.with_name(HASHES_NAME))
    # The shipped file, and no file at all beside the fixture: the first hashes one password, the
    # second (nothing shipped) would hash all of them; one is enough to show it.
    hashes = DemoPasswordHashes.start(
        tmp_path / "community.json", wanted=True, hashes_path=DEMO_FIXTURE.with_name(HASHES_NAME)
    ).into(fixture)
    by_id = {u["id"]: u["passwordHash"] for u in hashes["users"]}
    fresh = by_id[changed["id"]]
    assert fresh not in shipped.values()
    assert extract_parameters(fresh) == profiles.RFC_9106_LOW_MEMORY
    assert verify_password(fresh, "a-password-the-demo-never-had")
    for user in fixture["users"]:
        if user["id"] != changed["id"]:
            assert by_id[user["id"]] == shipped[password_key(user["password"])]


def test_a_hash_made_at_other_parameters_is_not_used_and_rewriting_keeps_the_good_ones(tmp_path):
    from tests.support.passwords import cheap_hash

    fixture = {"users": [{"id": "u1", "password": "one"}, {"id": "u2", "password": "two"}]}
    (tmp_path / "community.json").write_text(json.dumps(fixture), encoding="utf-8")
    cheap = cheap_hash("one")
    shipped = DEMO_FIXTURE.with_name(HASHES_NAME)
    admin_hash = shipped_hashes(shipped)[password_key("agora-demo-admin")]
    hashes_path = tmp_path / HASHES_NAME
    # "one" has a hash at other parameters; "two" none; "three" is no longer the fixture's.
    hashes_path.write_text(
        json.dumps({"hashes": {password_key("one"): cheap, password_key("three"): admin_hash}}),
        encoding="utf-8",
    )
    assert write_shipped_hashes(tmp_path / "community.json", hashes_path) == ["one", "two"]
    written = shipped_hashes(hashes_path)
    assert set(written) == {password_key("one"), password_key("two")}
    assert all(extract_parameters(h) == profiles.RFC_9106_LOW_MEMORY for h in written.values())
    assert verify_password(written[password_key("two")], "two")
    # Written again, nothing changes: the hashes are kept, none is made.
    assert write_shipped_hashes(tmp_path / "community.json", hashes_path) == []
    assert shipped_hashes(hashes_path) == written


def test_a_damaged_hashes_file_means_hashing_afresh_never_a_failed_start(tmp_path):
    fixture = {"users": [{"id": "u1", "password": "one"}]}
    (tmp_path / "community.json").write_text(json.dumps(fixture), encoding="utf-8")
    hashes_path = tmp_path / HASHES_NAME
    good = {password_key("one"): "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA"}
    damaged = [
        b"",
        b"{not json",
        b"\xff\xfe\x00binary",
        json.dumps([good]).encode(),
        json.dumps({"hashes": [good]}).encode(),
        json.dumps({"hashes": {password_key("one"): 42}}).encode(),
        json.dumps({"hashes": {password_key("one"): "not an argon2 hash"}}).encode(),
        json.dumps({"hashes": {password_key("one"): "$argon2id$" + "x" * 10_000}}).encode(),
    ]
    for content in damaged:
        hashes_path.write_bytes(content)
        assert usable_hash(shipped_hashes(hashes_path), "one") is None, content
    # What a start makes of the last one: the password hashed afresh, at production cost.
    made = DemoPasswordHashes.start(
        tmp_path / "community.json", wanted=True, hashes_path=hashes_path
    ).into(fixture)["users"][0]["passwordHash"]
    assert extract_parameters(made) == profiles.RFC_9106_LOW_MEMORY
    assert verify_password(made, "one")
