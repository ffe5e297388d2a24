"""What a fixture file must be, alone and against the community already stored (CONTRACT §3,
§4): its records' shapes, no duplicates, no dangling reference, and one root group in all."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from pydantic import ValidationError

from chalicelib.schemas.common import JSON_TYPES
from chalicelib.schemas.fixture import (
    Fixture,
    FixtureComment,
    FixtureConnector,
    FixtureEvent,
    FixtureGroup,
    FixtureModel,
    FixturePlayer,
    FixturePost,
    FixtureUser,
)
from chalicelib.schemas.messages import people_message
from chalicelib.services.fixture_references import (
    MAX_DEPTH,
    FixtureError,
    StoredCommunity,
    present,
    reference_errors,
)

if TYPE_CHECKING:
    from chalicelib.store.fixture import FixtureStore


class FixtureInvalid(Exception):
    def __init__(self, errors: list[FixtureError]) -> None:
        super().__init__(f"{len(errors)} error(s) in the fixture")
        self.errors = errors


def json_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "$"


def stored_community(store: FixtureStore, data: object) -> StoredCommunity:
    """Read what the store holds of the records `data` (a fixture file, valid or not) gives or
    names: one Query for the root, BatchGetItems by id, and a Query per new slug or address."""
    f = _valid_records(data)
    file_groups = {g.id: g for _, g in present(f.groups)}
    file_users = {u.id: u for _, u in present(f.users)}
    stored = StoredCommunity(root_id=store.root_id())
    named = _named_groups(f, file_groups.values(), file_users.values())
    stored.groups = _stored_groups(store, set(file_groups) | named, set(file_groups))
    stored.users = store.users(_named_users(f) | set(file_users))
    file_posts = {p.id for _, p in present(f.posts)}
    stored.posts = store.post_groups({c.post_id for _, c in present(f.comments)} - file_posts)
    file_comments = {c.id for _, c in present(f.comments)}
    parents = {c.parent_comment_id for _, c in present(f.comments) if c.parent_comment_id}
    stored.comments = store.comment_posts(parents - file_comments)
    if stored.root_id is not None:  # an empty store holds no slug or address yet
        stored.slug_holders = _holders(
            {g.id: g.slug for g in file_groups.values()},
            {group_id: slug for group_id, (_, slug) in stored.groups.items()},
            store.group_with_slug,
        )
        stored.email_holders = _holders(
            {u.id: u.email.lower() for u in file_users.values()},
            {user_id: email for user_id, (email, _) in stored.users.items()},
            store.user_with_email,
        )
    return stored


def _named_groups(
    f: Fixture, groups: Iterable[FixtureGroup], users: Iterable[FixtureUser]
) -> set[str]:
    """The groups the file's records name: parents, memberships, posts' and events' groups
    (`groups`, `users`: the file's, one by id)."""
    named = {g.parent_id for g in groups if g.parent_id}
    named |= {m.group_id for u in users for m in u.memberships}
    named |= {p.group_id for _, p in present(f.posts)}
    named |= {e.group_id for _, e in present(f.events)}
    return named


def _stored_groups(
    store: FixtureStore, wanted: set[str], file_groups: set[str]
) -> dict[str, tuple[str | None, str]]:
    """The stored groups `wanted`, and their stored ancestors (up to `MAX_DEPTH` generations)."""
    groups: dict[str, tuple[str | None, str]] = {}
    for _ in range(MAX_DEPTH):
        found = store.groups(wanted - set(groups))
        groups.update(found)
        wanted = {
            parent
            for parent, _ in found.values()
            if parent and parent not in groups and parent not in file_groups
        }
        if not wanted:
            break
    return groups


def _named_users(f: Fixture) -> set[str]:
    """The users the file's records name: authors, deleters, spam reporters."""
    named = {p.author_id for _, p in present(f.posts)}
    for _, comment in present(f.comments):
        named |= {comment.author_id, *(r.author_id for r in comment.spam_reports)}
        if comment.deleted_by_id:
            named.add(comment.deleted_by_id)
    named |= {e.author_id for _, e in present(f.events)}
    return named


def _holders(
    given: dict[str, str], before: dict[str, str], holder_of: Callable[[str], str | None]
) -> dict[str, str]:
    """The stored record holding each value (a slug, an address) the file gives a record anew:
    `given` and `before` are by record id, what the file gives and what the store holds."""
    holders = {}
    for record_id, value in given.items():
        if before.get(record_id) != value and (holder := holder_of(value)) is not None:
            holders[value] = holder
    return holders


def validate_fixture(data: object, stored: StoredCommunity | None = None) -> Fixture:
    """The fixture, or FixtureInvalid listing every error with its JSON path; checked against
    the `stored` community (none: an empty store)."""
    stored = stored or StoredCommunity()
    try:
        fixture = Fixture.model_validate(data, context=JSON_TYPES)
    except ValidationError as error:
        errors = []
        for item in error.errors(include_url=False):
            loc = tuple(item["loc"])
            ctx = item.get("ctx") or {}
            if "field" in ctx:
                loc = (*loc, ctx["field"])
            message = people_message(item)
            errors.append(FixtureError(json_path(loc), message))
        # The references of the records that are valid are checked in the same round: one fix
        # per run would make a long file a long evening.
        raise FixtureInvalid(
            errors + reference_errors(_valid_records(data), stored, data)
        ) from None
    errors = reference_errors(fixture, stored)
    if errors:
        raise FixtureInvalid(errors)
    return fixture


# Each section's record, by its name in the file.
SECTIONS: dict[str, type[FixtureModel]] = {
    "groups": FixtureGroup,
    "users": FixtureUser,
    "posts": FixturePost,
    "comments": FixtureComment,
    "events": FixtureEvent,
    "connectors": FixtureConnector,
    "players": FixturePlayer,
}


def _valid_records(data: object) -> Fixture:
    """The records of an invalid file that are valid on their own, each at its index (None where
    a record is not), for the reference checks."""
    sections: dict[str, list[FixtureModel | None]] = {}
    for name, model in SECTIONS.items():
        items = data.get(name) if isinstance(data, dict) else None
        checked: list[FixtureModel | None] = []
        for item in items if isinstance(items, list) else []:
            try:
                checked.append(model.model_validate(item, context=JSON_TYPES))
            except ValidationError:
                checked.append(None)
        sections[name] = checked
    return Fixture.model_construct(None, **sections)
