"""A fixture document restored from a worker's copy (tests/support/fixture_copies.py) stores exactly
what loading it stores: every table's items, no stream record, no message, the caches forgotten."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.fixtures import Community, empty_tables, moto_dynamodb, two_groups, z
from tests.support.fixture_copies import FixtureCopies, fresh

PASSWORD = "correct horse battery"


def cast(c: Community) -> Community:
    """Groups at two levels, people with and without a password, posts and comments (a reply,
    a hidden one): every kind of record a `Community` writes."""
    two_groups(c)
    c.user("speaker", {c.garden: "member"}, password=PASSWORD)
    c.user("quiet", email="Quiet.One@Example.org")
    c.sub = c.group("sub", parent=c.garden, access="private")
    first = c.post(c.garden, c.member, "First post")
    c.post(c.sub, c.garden_admin, "Second post")
    c.comment(first, c.moderator)
    c.comment(first, c.member, parentCommentId=1)
    c.comment(first, c.member, isApproved=False)
    c.comment(first, c.member, deletedOn=z(c.clock), deletedById=c.moderator)
    return c


def stored() -> dict[str, list[str]]:
    """Every table's items as JSON (with the type moto keeps their attributes in), in order."""
    _, backend = moto_dynamodb()
    return {
        name: sorted(
            json.dumps({**item.to_json(), "kept as": type(item.attrs).__name__}, sort_keys=True)
            for item in table.all_items()
        )
        for name, table in backend.tables.items()
    }


def without_password_hashes(tables: dict[str, list[str]]) -> dict[str, list[str]]:
    """What loading stores of the community, but for the passwords' salts: the audit log is
    history, not community (each load records one more entry, with its own id and moment)."""

    def strip(item: str) -> str:
        values: dict[str, Any] = json.loads(item)
        values["Attributes"].pop("password_hash", None)
        return json.dumps(values, sort_keys=True)

    return {
        name: sorted(strip(item) for item in items)
        for name, items in tables.items()
        if not name.endswith("-audit")
    }


def new_backend() -> None:
    """Empty tables again, as the `aws` fixture gives each test (a new outbox stream too)."""
    _, backend = moto_dynamodb()
    backend.tables.clear()
    empty_tables()


def stream_records() -> int:
    _, backend = moto_dynamodb()
    return sum(
        len(table.stream_shard.items)
        for table in backend.tables.values()
        if table.stream_shard is not None
    )


def queued_messages() -> int:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    return sum(
        len(queue._messages)
        for backend in sqs_backends[DEFAULT_ACCOUNT_ID].values()
        for queue in backend.queues.values()
    )


def test_a_restored_copy_stores_what_loading_stores(community: Community) -> None:
    from chalicelib import deps
    from chalicelib.auth import verify_password
    from chalicelib.store.groups import GroupRepository
    from chalicelib.store.users import UserRepository

    document = cast(community).as_fixture()
    messages = queued_messages()

    # Loaded for real (its copy kept), then restored into a fresh backend.
    copies = FixtureCopies()
    copies.load(document)
    assert (copies.loaded, copies.restored) == (1, 0)
    loaded = stored()
    assert all(loaded[name] for name in ("agora-test-groups", "agora-test-users")), loaded.keys()
    new_backend()
    assert fresh(moto_dynamodb()[1])
    assert GroupRepository().root_id() is None
    copies.load(document)
    assert (copies.loaded, copies.restored) == (1, 1)
    assert stored() == loaded
    assert stream_records() == 0 and queued_messages() == messages
    # The caches hold what was stored (nothing remembered from the empty backend).
    assert GroupRepository().root_id() == community.root
    speaker = UserRepository().by_email("speaker@example.org")
    assert speaker is not None and verify_password(speaker.password_hash, PASSWORD)

    # Loading into another fresh backend stores the same, but for the passwords' random salts.
    new_backend()
    deps.fixture_service().load(document)
    again = stored()
    assert without_password_hashes(again) == without_password_hashes(loaded)
    assert again != loaded  # the hashes are the only difference
    assert stream_records() == 0 and queued_messages() == messages


def test_a_second_load_or_a_load_after_a_write_goes_through_the_loader(
    community: Community,
) -> None:
    from chalicelib.store.documents import DocumentRepository

    document = cast(community).as_fixture()
    copies = FixtureCopies()
    copies.load(document)
    loaded = stored()
    copies.load(document)  # loading twice changes nothing
    assert (copies.loaded, copies.restored) == (2, 0)
    assert stored() == loaded

    # A backend that holds a record is no fresh one: the loader runs, and the record stays.
    new_backend()
    DocumentRepository().put("system", "note", {"content": "written first"})
    copies.load(document)
    assert (copies.loaded, copies.restored) == (3, 0)
    after_a_write = stored()
    assert len(after_a_write.pop("agora-test-documents")) == len(loaded["agora-test-documents"]) + 1
    assert without_password_hashes(after_a_write) == without_password_hashes(
        {name: items for name, items in loaded.items() if name != "agora-test-documents"}
    )


def test_documents_whose_load_stores_its_time_are_always_loaded(community: Community) -> None:
    document = cast(community).as_fixture()
    document["players"] = [{"id": community.new_id(), "name": "Larry"}]
    copies = FixtureCopies()
    copies.load(document)
    new_backend()
    copies.load(document)
    assert (copies.loaded, copies.restored) == (2, 0)


def test_a_load_on_top_of_the_last_load_is_copied_too(community: Community) -> None:
    from chalicelib.auth import verify_password
    from chalicelib.store.documents import DocumentRepository
    from chalicelib.store.users import UserRepository

    first = copy.deepcopy(two_groups(community).as_fixture())
    community.user("late-speaker", {community.garden: "member"}, password=PASSWORD)
    community.post(community.garden, community.member, "Later post")
    second = community.as_fixture()

    # Loaded for real, the second on top of the first; then both restored in a fresh backend.
    copies = FixtureCopies()
    copies.load(first)
    copies.load(second)
    assert (copies.loaded, copies.restored) == (2, 0)
    both = stored()
    new_backend()
    copies.load(first)
    copies.load(second)
    assert (copies.loaded, copies.restored) == (2, 2)
    assert stored() == both
    speaker = UserRepository().by_email("late-speaker@example.org")
    assert speaker is not None and verify_password(speaker.password_hash, PASSWORD)

    # The second alone in a fresh backend is a document of its own: loaded, and it stores the
    # same as the two loads (but for the passwords' salts).
    new_backend()
    copies.load(second)
    assert (copies.loaded, copies.restored) == (3, 2)
    assert without_password_hashes(stored()) == without_password_hashes(both)

    # Anything written between the two loads: the second goes through the loader, the record
    # stays.
    new_backend()
    copies.load(first)
    DocumentRepository().put("system", "note", {"content": "written in between"})
    copies.load(second)
    assert (copies.loaded, copies.restored) == (4, 3)
    after_a_write = stored()
    notes = after_a_write.pop("agora-test-documents")
    assert len(notes) == len(both["agora-test-documents"]) + 1
    assert without_password_hashes(after_a_write) == without_password_hashes(
        {name: items for name, items in both.items() if name != "agora-test-documents"}
    )
