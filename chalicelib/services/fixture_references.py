"""A fixture's references (CONTRACT §3, §4), in the file and against the community already
stored: ids, slugs, addresses and names given twice, references to records that are nowhere, one
root group in all, parents that form a cycle.

Each check is a small pure function answering its errors; `reference_errors` runs them in the
order the report lists them. When some records are invalid (None in the fixture), the ids the file
gives for them still count as present: a reference to a record with an error of its own is not
reported as dangling too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TypeVar

from chalicelib.schemas.fixture import (
    Fixture,
    FixtureComment,
    FixtureEvent,
    FixtureModel,
    FixturePost,
)

Item = TypeVar("Item")
Value = TypeVar("Value", bound=Hashable)
Authored = TypeVar("Authored", FixturePost, FixtureEvent)

# What can name a record: the file's ids (GUID strings, comment and event numbers), and in an
# invalid file whatever scalar a record gives as its `id`.
RecordId = str | int | float


@dataclass(frozen=True)
class FixtureError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class StoredCommunity:
    """What the store holds of the records a file gives or names: a file is checked against it
    (a parent, a membership, a post's group may be a stored group; one root in all)."""

    root_id: str | None = None
    # Stored groups the file gives or names, and their ancestors: id → (parent id, slug).
    groups: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    # Stored users the file gives or names: id → (email address lower-cased, alias).
    users: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Stored posts and comments the file names: post id → group id, comment id → post id.
    posts: dict[str, str] = field(default_factory=dict)
    comments: dict[int, str] = field(default_factory=dict)
    # The stored group holding each slug, the stored user holding each address, that the file
    # gives to another record.
    slug_holders: dict[str, str] = field(default_factory=dict)
    email_holders: dict[str, str] = field(default_factory=dict)


# Parent chains longer than this are not followed (a stored tree is never this deep).
MAX_DEPTH = 100

# (section, key): what must be unique in a file, in the order the errors are listed.
UNIQUE = (
    ("groups", "id"),
    ("groups", "slug"),
    ("users", "id"),
    ("users", "slug"),
    ("posts", "id"),
    ("comments", "id"),
    ("events", "id"),
    ("connectors", "id"),
    ("players", "id"),
)


@dataclass(frozen=True)
class Known:
    """What a reference may name: the file's valid records, the stored ones, and, in an invalid
    file, the ids its invalid records give."""

    groups: Container[RecordId]
    users: Container[RecordId]
    posts: Container[RecordId]
    comments: Mapping[int, FixtureComment]  # id → the file's valid comment
    stored_comments: Mapping[int, str]  # id → post id
    # In an invalid file, the ids of all its comments: a reply's parent is checked once the file
    # is valid (the parent may have errors of its own).
    file_comments: Container[RecordId]
    parents: Mapping[str, str | None]  # group id → parent id, stored and given


def present(items: Sequence[Item | None]) -> list[tuple[int, Item]]:
    """(index, record) of every valid record of a section."""
    return [(i, item) for i, item in enumerate(items) if item is not None]


def duplicates(values: Iterable[Value]) -> set[Value]:
    return {value for value, n in Counter(values).items() if n > 1}


def raw_ids(data: object, section: str) -> set[RecordId]:
    """Ids an invalid file gives in a section, valid records or not (`data`: the file's JSON,
    whatever it holds). An id that is a list or an object names nothing, and cannot be held in a
    set: it is left out (its record has its own error)."""
    items = data.get(section) if isinstance(data, dict) else None
    records = (
        item for item in (items if isinstance(items, list) else []) if isinstance(item, dict)
    )
    return {
        record_id for record_id in (r.get("id") for r in records) if isinstance(record_id, RecordId)
    }


def known_ids(f: Fixture, stored: StoredCommunity, raw: object = None) -> Known:
    def given(section: str) -> set[RecordId]:
        return raw_ids(raw, section) if raw is not None else set()

    parents: dict[str, str | None] = {gid: parent for gid, (parent, _) in stored.groups.items()}
    parents.update({g.id: g.parent_id for _, g in present(f.groups)})
    return Known(
        groups={g.id for _, g in present(f.groups)} | set(stored.groups) | given("groups"),
        users={u.id for _, u in present(f.users)} | set(stored.users) | given("users"),
        posts={p.id for _, p in present(f.posts)} | set(stored.posts) | given("posts"),
        comments={c.id: c for _, c in present(f.comments)},
        stored_comments=stored.comments,
        file_comments=given("comments"),
        parents=parents,
    )


def root_errors(f: Fixture, stored: StoredCommunity, raw: object = None) -> list[FixtureError]:
    """One root group in all: the stored root stays the root unless the file gives it again (with
    a parent, it is not). Not asked while some group is invalid: it may be the root."""
    if raw is not None and any(g is None for g in f.groups):
        return []
    roots = [i for i, g in present(f.groups) if g.parent_id is None]
    given = {g.id for g in f.groups if g is not None}
    if stored.root_id and stored.root_id not in given:
        message = (
            f"the community already has its root group ({stored.root_id}); a second one is "
            "not allowed: give this group a parentId"
        )
        return [FixtureError(f"groups[{i}].parentId", message) for i in roots]
    if len(roots) != 1:
        return [
            FixtureError(
                "groups", f"exactly one group must have parentId null (found {len(roots)})"
            )
        ]
    return []


def repeated(
    section: str, items: Sequence[Item | None], key: str, value: Callable[[Item], Hashable]
) -> list[FixtureError]:
    """An error at each record whose `value` another record of the section has too."""
    seen = duplicates(value(item) for _, item in present(items))
    return [
        FixtureError(
            f"{section}[{i}].{key}", f"{key} {getattr(item, key)!r} appears more than once"
        )
        for i, item in present(items)
        if value(item) in seen
    ]


def held_by_another(holder: str | None, own_id: str, given: dict[str, str], value: str) -> bool:
    """Whether a stored record other than this one holds `value` and keeps it (the file gives
    that record no other value)."""
    if not holder:
        return False
    return holder != own_id and given.get(holder) in (None, value)


def email_errors(f: Fixture, stored: StoredCommunity) -> list[FixtureError]:
    """An address given twice (in any case), or held by another stored user."""
    twice = duplicates(u.email.lower() for _, u in present(f.users))
    given = {u.id: u.email.lower() for _, u in present(f.users)}
    errors = []
    for i, user in present(f.users):
        email = user.email.lower()
        if email in twice:
            errors.append(
                FixtureError(f"users[{i}].email", f"email {user.email!r} appears more than once")
            )
        if held_by_another(stored.email_holders.get(email), user.id, given, email):
            message = f"email {user.email!r} is already another stored user's"
            errors.append(FixtureError(f"users[{i}].email", message))
    return errors


def slug_errors(f: Fixture, stored: StoredCommunity) -> list[FixtureError]:
    """A group slug another stored group holds."""
    given = {g.id: g.slug for _, g in present(f.groups)}
    return [
        FixtureError(f"groups[{i}].slug", f"slug {group.slug!r} is already another stored group's")
        for i, group in present(f.groups)
        if held_by_another(stored.slug_holders.get(group.slug), group.id, given, group.slug)
    ]


def duplicate_errors(f: Fixture, stored: StoredCommunity) -> list[FixtureError]:
    """Ids and slugs given twice; addresses and slugs taken; player names given twice."""
    errors = []
    for section, key in UNIQUE:
        items: Sequence[FixtureModel | None] = getattr(f, section)
        errors += repeated(section, items, key, attrgetter(key))
    errors += email_errors(f, stored)
    errors += slug_errors(f, stored)
    errors += repeated("players", f.players, "name", lambda player: player.name.lower())
    return errors


def cycle_in(group_id: str, parent_id: str | None, parents: Mapping[str, str | None]) -> bool:
    """Whether following parents up from a group comes back to a group already passed (a chain
    is followed `MAX_DEPTH` groups up at most)."""
    seen, current = {group_id}, parent_id
    while current is not None and len(seen) <= MAX_DEPTH:
        if current in seen:
            return True
        seen.add(current)
        current = parents.get(current)
    return False


def group_errors(f: Fixture, known: Known) -> list[FixtureError]:
    errors = []
    for i, group in present(f.groups):
        path = f"groups[{i}].parentId"
        if group.parent_id is not None and group.parent_id not in known.groups:
            errors.append(FixtureError(path, f"no group has id {group.parent_id}"))
        elif cycle_in(group.id, group.parent_id, known.parents):
            errors.append(FixtureError(path, "the parents of this group form a cycle"))
    return errors


def missing(path: str, kind: str, value: RecordId, ids: Container[RecordId]) -> list[FixtureError]:
    """The error of a reference to a `kind` that is nowhere (none when it is somewhere)."""
    return [] if value in ids else [FixtureError(path, f"no {kind} has id {value}")]


def membership_errors(f: Fixture, known: Known) -> list[FixtureError]:
    errors = []
    for i, user in present(f.users):
        for j, membership in enumerate(user.memberships):
            path = f"users[{i}].memberships[{j}].groupId"
            errors += missing(path, "group", membership.group_id, known.groups)
        if duplicates(m.group_id for m in user.memberships):
            errors.append(FixtureError(f"users[{i}].memberships", "a user has one role per group"))
    return errors


def authored_errors(
    section: str, items: Sequence[Authored | None], known: Known
) -> list[FixtureError]:
    """A post's or an event's group and author must be somewhere."""
    errors = []
    for i, item in present(items):
        errors += missing(f"{section}[{i}].groupId", "group", item.group_id, known.groups)
        errors += missing(f"{section}[{i}].authorId", "user", item.author_id, known.users)
    return errors


def parent_comment_error(i: int, comment: FixtureComment, known: Known) -> list[FixtureError]:
    """A reply's parent must be a comment of the same post, given or stored."""
    parent_id = comment.parent_comment_id
    if not parent_id or parent_id in known.file_comments:
        return []
    parent = known.comments.get(parent_id)
    parent_post = parent.post_id if parent is not None else known.stored_comments.get(parent_id)
    if parent_post == comment.post_id:
        return []
    return [
        FixtureError(f"comments[{i}].parentCommentId", "no comment of the same post has this id")
    ]


def comment_errors(f: Fixture, known: Known) -> list[FixtureError]:
    errors = []
    for i, comment in present(f.comments):
        at = f"comments[{i}]"
        errors += missing(f"{at}.postId", "post", comment.post_id, known.posts)
        errors += missing(f"{at}.authorId", "user", comment.author_id, known.users)
        if comment.deleted_by_id is not None:
            errors += missing(f"{at}.deletedById", "user", comment.deleted_by_id, known.users)
        errors += parent_comment_error(i, comment, known)
        for j, report in enumerate(comment.spam_reports):
            path = f"{at}.spamReports[{j}].authorId"
            errors += missing(path, "user", report.author_id, known.users)
    return errors


def reference_errors(f: Fixture, stored: StoredCommunity, raw: object = None) -> list[FixtureError]:
    """Duplicates, dangling references and a second root, in the file and against the `stored`
    community; `raw`: the file, when some records are invalid (None in `f`)."""
    known = known_ids(f, stored, raw)
    return [
        *root_errors(f, stored, raw),
        *duplicate_errors(f, stored),
        *group_errors(f, known),
        *membership_errors(f, known),
        *authored_errors("posts", f.posts, known),
        *comment_errors(f, known),
        *authored_errors("events", f.events, known),
    ]
