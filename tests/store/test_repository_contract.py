"""One contract, two implementations: the in-memory fakes of the fast tier answer as the PynamoDB
repositories do (against moto). A rule test that passes on a fake holds on the store."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from chalicelib.domain.profile import ProfileField, ProfileSection, StaleStructure
from tests.support import fakes

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
WINDOW = timedelta(minutes=15)


@pytest.fixture
def profile(kind):
    from chalicelib.store.profile import ProfileRepository

    return fakes.FakeProfileRepository() if kind == "fake" else ProfileRepository()


@pytest.fixture
def users(kind):
    from chalicelib.store.users import UserRepository

    return fakes.FakeUserRepository() if kind == "fake" else UserRepository()


@pytest.fixture
def attempts(kind):
    from chalicelib.store.login_attempts import LoginAttemptRepository

    return fakes.FakeLoginAttemptRepository() if kind == "fake" else LoginAttemptRepository()


def _section(profile, name: str, position: int) -> ProfileSection:
    return ProfileSection(
        section_id=profile.next_section_id(), name=name, position=position, default_visibility_id=1
    )


def _by_key(records) -> dict[str, object]:
    return {r.item_key: r for r in records}


# --- profile structure ----------------------------------------------------------------------------


def test_profile_is_empty_then_holds_what_a_commit_saved(profile):
    assert profile.load() == []
    first, second = _section(profile, "A", 1), _section(profile, "B", 2)
    assert int(second.section_id) > int(first.section_id)
    field = ProfileField(
        field_id="f1",
        name="Colour",
        position=1,
        section_id=first.section_id,
        type_id=4,
        parent_id=None,
        parent_selected_value_id=None,
        data={"x": 1},
    )
    profile.commit(saves=[first, second, field])
    stored = _by_key(profile.load())
    assert set(stored) == {first.item_key, second.item_key, field.item_key}
    assert [r.kind for r in profile.load()].count("section") == 2
    got = stored[field.item_key]
    assert (got.name, int(got.type_id), got.data, got.field_id) == ("Colour", 4, {"x": 1}, "f1")
    assert got.parent_id is None and got.parent_selected_value_id is None


def test_a_move_writes_the_position_only(profile):
    section = _section(profile, "A", 1)
    profile.commit(saves=[section])
    (loaded,) = profile.load()
    profile.commit(moves=[replace(loaded, position=5, name="renamed but only moved")])
    (stored,) = profile.load()
    assert (int(stored.position), stored.name) == (5, "A")


def test_a_delete_removes_the_record(profile):
    a, b = _section(profile, "A", 1), _section(profile, "B", 2)
    profile.commit(saves=[a, b])
    loaded = _by_key(profile.load())
    profile.commit(deletes=[loaded[a.item_key]])
    assert list(_by_key(profile.load())) == [b.item_key]


def test_a_commit_of_a_record_changed_since_it_was_read_fails_whole(profile):
    a, b = _section(profile, "A", 1), _section(profile, "B", 2)
    profile.commit(saves=[a, b])
    mine, theirs = _by_key(profile.load()), _by_key(profile.load())
    profile.commit(saves=[replace(theirs[a.item_key], name="Theirs")])
    with pytest.raises(StaleStructure):
        profile.commit(
            saves=[
                replace(mine[b.item_key], name="Mine too"),
                replace(mine[a.item_key], name="Mine"),
            ]
        )
    stored = _by_key(profile.load())
    assert (stored[a.item_key].name, stored[b.item_key].name) == ("Theirs", "B")


def test_a_new_record_whose_key_exists_fails(profile):
    section = ProfileSection(section_id=7, name="A", position=1, default_visibility_id=1)
    profile.commit(saves=[section])
    again = ProfileSection(section_id=7, name="Again", position=1, default_visibility_id=1)
    with pytest.raises(StaleStructure):
        profile.commit(saves=[again])
    assert [r.name for r in profile.load()] == ["A"]


def test_a_record_as_loaded_after_a_write_can_be_written_again(profile):
    section = _section(profile, "A", 1)
    profile.commit(saves=[section])
    (loaded,) = profile.load()
    assert loaded.version is not None and loaded.version != section.version
    profile.commit(saves=[replace(loaded, name="B")])
    assert [r.name for r in profile.load()] == ["B"]
    with pytest.raises(StaleStructure):  # the record as first written is stale now
        profile.commit(saves=[replace(section, name="C")])


# --- users and sign-in attempts -------------------------------------------------------------------


def test_users_are_found_by_id_and_by_address_whatever_its_case(users):
    user = fakes.user(
        id="u1",
        alias="Ann",
        email="Ann@Example.org",
        email_lower="ann@example.org",
        slug="ann",
        memberships={"g": "member"},
    )
    users.save(user)
    assert users.get("u1").alias == "Ann"
    assert users.by_email("  ANN@example.ORG ").id == "u1"
    assert users.by_email("bob@example.org") is None
    assert users.get("nobody") is None
    assert set(users.get_many({"u1", "nobody"})) == {"u1"}
    assert users.get_many(set()) == {}
    assert users.get("u1").memberships == {"g": "member"}
    assert users.get("u1").password_hash is None


def test_a_changed_copy_of_a_user_is_stored_whole(users):
    users.save(fakes.user(id="u1", email="ann@example.org", memberships={"g": "member"}))
    read = users.get("u1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.alias = "changed in place"  # a read changes nothing stored
    changed = replace(
        read, email="anna@example.org", email_lower="anna@example.org", memberships={}
    )
    users.save(replace(changed, token_version=read.token_version + 1))
    stored = users.get("u1")
    assert (stored.email, stored.memberships, stored.token_version) == ("anna@example.org", {}, 1)
    assert users.by_email("anna@example.org").id == "u1"
    assert users.by_email("ann@example.org") is None


def take(attempts, email: str = "a@x", source: str = "1.2.3.4", at=None) -> bool:
    return attempts.take_attempt(email, source, at or NOW, WINDOW, 3, 5) is not None


def test_attempts_run_out_per_source_and_per_account_within_a_window(attempts):
    assert [take(attempts) for _ in range(4)] == [True, True, True, False]
    assert take(attempts, "b@x") is True  # per account
    assert take(attempts, source="5.6.7.8") is True  # per source address
    assert take(attempts, source="5.6.7.9") is True
    assert take(attempts, source="5.6.7.10") is False  # the account's 5 are taken
    later = NOW + WINDOW + timedelta(seconds=1)
    assert take(attempts, at=later) is True


def test_a_source_without_the_account_ceiling_has_only_its_own_limit(attempts):
    for n in range(5):
        take(attempts, source=f"5.6.7.{n}")
    assert take(attempts) is False  # the account's 5 are taken
    assert [
        attempts.take_attempt("a@x", "1.2.3.4", NOW, WINDOW, 3, None) is not None for _ in range(4)
    ] == [True, True, True, False]


def test_a_remembered_source_is_known_until_it_expires(attempts):
    assert attempts.is_known_source("a@x", "1.2.3.4", NOW) is False
    attempts.remember_source("a@x", "1.2.3.4", NOW + timedelta(days=30))
    assert attempts.is_known_source("a@x", "1.2.3.4", NOW + timedelta(days=29)) is True
    assert attempts.is_known_source("a@x", "1.2.3.4", NOW + timedelta(days=31)) is False
    assert attempts.is_known_source("b@x", "1.2.3.4", NOW) is False
    assert attempts.is_known_source("a@x", "1.2.3.5", NOW) is False


def test_ending_the_windows_gives_every_source_its_attempts_back(attempts):
    for n in range(5):
        take(attempts, source=f"5.6.7.{n}")
    assert take(attempts) is False
    assert attempts.end_windows("a@x", NOW, WINDOW) == 5
    assert attempts.end_windows("a@x", NOW, WINDOW) == 0  # nothing left: nothing written
    assert [take(attempts, source="5.6.7.0") for _ in range(4)] == [True, True, True, False]


def test_forgetting_a_source_gives_it_and_the_account_its_attempts_back(attempts):
    for _ in range(2):
        take(attempts)
    attempt = attempts.take_attempt("a@x", "1.2.3.4", NOW, WINDOW, 3, 5)
    assert attempt.from_source == 3
    attempts.forget_source(attempt)
    assert [take(attempts, source="5.6.7.8") for _ in range(3)] == [True, True, True]
    assert [take(attempts) for _ in range(3)] == [True, True, False]  # the account's 5
