"""What a fixture file must be, alone and against the community already stored (CONTRACT §3,
§4): its records' shapes, no duplicates, no dangling reference, and one root group in all."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from chalicelib.schemas.common import JSON_TYPES
from chalicelib.schemas.fixture import Fixture


@dataclass(frozen=True)
class FixtureError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class FixtureInvalid(Exception):
    def __init__(self, errors: list[FixtureError]) -> None:
        super().__init__(f"{len(errors)} error(s) in the fixture")
        self.errors = errors


def json_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "$"


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


def stored_community(store: Any, data: Any) -> StoredCommunity:
    """Read what the store holds of the records `data` (a fixture file, valid or not) gives or
    names: one Query for the root, BatchGetItems by id, and a Query per new slug or address."""
    f = _valid_records(data)
    file_groups = {g.id: g for _, g in _present(f.groups)}
    file_users = {u.id: u for _, u in _present(f.users)}
    file_posts = {p.id for _, p in _present(f.posts)}
    file_comments = {c.id for _, c in _present(f.comments)}
    stored = StoredCommunity(root_id=store.root_id())

    named_groups = {g.parent_id for g in file_groups.values() if g.parent_id}
    named_groups |= {m.group_id for u in file_users.values() for m in u.memberships}
    named_groups |= {p.group_id for _, p in _present(f.posts)}
    named_groups |= {e.group_id for _, e in _present(f.events)}
    wanted = set(file_groups) | named_groups
    for _ in range(MAX_DEPTH):
        found = store.groups(wanted - set(stored.groups))
        stored.groups.update(found)
        wanted = {
            parent
            for parent, _ in found.values()
            if parent and parent not in stored.groups and parent not in file_groups
        }
        if not wanted:
            break

    named_users = {p.author_id for _, p in _present(f.posts)}
    for _, comment in _present(f.comments):
        named_users |= {comment.author_id, *(r.author_id for r in comment.spam_reports)}
        if comment.deleted_by_id:
            named_users.add(comment.deleted_by_id)
    named_users |= {e.author_id for _, e in _present(f.events)}
    stored.users = store.users(named_users | set(file_users))

    stored.posts = store.post_groups({c.post_id for _, c in _present(f.comments)} - file_posts)
    parents = {c.parent_comment_id for _, c in _present(f.comments) if c.parent_comment_id}
    stored.comments = store.comment_posts(parents - file_comments)

    if stored.root_id is not None:  # an empty store holds no slug or address yet
        for group in file_groups.values():
            before = stored.groups.get(group.id)
            if before is None or before[1] != group.slug:
                holder = store.group_with_slug(group.slug)
                if holder is not None:
                    stored.slug_holders[group.slug] = holder
        for user in file_users.values():
            email = user.email.lower()
            if stored.users.get(user.id, ("", ""))[0] != email:
                holder = store.user_with_email(email)
                if holder is not None:
                    stored.email_holders[email] = holder
    return stored


def validate_fixture(data: Any, stored: StoredCommunity | None = None) -> Fixture:
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
            message = str(item["msg"]).removeprefix("Value error, ")
            errors.append(FixtureError(json_path(loc), message))
        # The references of the records that are valid are checked in the same round: one fix
        # per run would make a long file a long evening.
        raise FixtureInvalid(
            errors + _reference_errors(_valid_records(data), stored, data)
        ) from None
    errors = _reference_errors(fixture, stored)
    if errors:
        raise FixtureInvalid(errors)
    return fixture


SECTIONS = ("groups", "users", "posts", "comments", "events", "connectors", "players")


def _valid_records(data: Any) -> Fixture:
    """The records of an invalid file that are valid on their own, each at its index (None where
    a record is not), for the reference checks."""
    sections: dict[str, list[Any]] = {}
    for name in SECTIONS:
        items = data.get(name) if isinstance(data, dict) else None
        model = Fixture.model_fields[name].annotation.__args__[0]  # type: ignore[union-attr]
        checked: list[Any] = []
        for item in items if isinstance(items, list) else []:
            try:
                checked.append(model.model_validate(item, context=JSON_TYPES))
            except ValidationError:
                checked.append(None)
        sections[name] = checked
    return Fixture.model_construct(None, **sections)


def _raw_ids(data: Any, section: str) -> set[Any]:
    """Ids an invalid file gives in a section, valid records or not: a reference to a record with
    its own error is not reported as dangling too."""
    items = data.get(section) if isinstance(data, dict) else None
    return {
        item.get("id")
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict)
    }


def _present(items: list[Any]) -> list[tuple[int, Any]]:
    return [(i, item) for i, item in enumerate(items) if item is not None]


def _duplicates(values: list[Any]) -> set[Any]:
    return {value for value, n in Counter(values).items() if n > 1}


def _reference_errors(f: Fixture, stored: StoredCommunity, raw: Any = None) -> list[FixtureError]:
    """Duplicates, dangling references and a second root, in the file and against the `stored`
    community; `raw`: the file, when some records are invalid (None in `f`)."""
    errors: list[FixtureError] = []

    def err(path: str, message: str) -> None:
        errors.append(FixtureError(path, message))

    group_ids = {g.id for _, g in _present(f.groups)} | set(stored.groups)
    user_ids = {u.id for _, u in _present(f.users)} | set(stored.users)
    post_ids: dict[str, Any] = {
        **dict.fromkeys(stored.posts),
        **{p.id: p for _, p in _present(f.posts)},
    }
    comments = {c.id: c for _, c in _present(f.comments)}
    if raw is not None:
        group_ids |= _raw_ids(raw, "groups")
        user_ids |= _raw_ids(raw, "users")
        post_ids = {**dict.fromkeys(_raw_ids(raw, "posts")), **post_ids}

    roots = [i for i, g in _present(f.groups) if g.parent_id is None]
    given = {g.id for g in f.groups if g is not None}
    # The stored root stays the root unless the file gives it again (with a parent, it is not).
    kept_root = stored.root_id if stored.root_id and stored.root_id not in given else None
    if raw is None or all(g is not None for g in f.groups):
        if kept_root is not None:
            for i in roots:
                err(
                    f"groups[{i}].parentId",
                    f"the community already has its root group ({kept_root}); a second one is "
                    "not allowed: give this group a parentId",
                )
        elif len(roots) != 1:
            err("groups", f"exactly one group must have parentId null (found {len(roots)})")
    for name, items, key in (
        ("groups", f.groups, "id"),
        ("groups", f.groups, "slug"),
        ("users", f.users, "id"),
        ("users", f.users, "slug"),
        ("posts", f.posts, "id"),
        ("comments", f.comments, "id"),
        ("events", f.events, "id"),
        ("connectors", f.connectors, "id"),
        ("players", f.players, "id"),
    ):
        seen = _duplicates([getattr(item, key) for _, item in _present(items)])
        for i, item in _present(items):
            if getattr(item, key) in seen:
                err(f"{name}[{i}].{key}", f"{key} {getattr(item, key)!r} appears more than once")
    emails = _duplicates([u.email.lower() for _, u in _present(f.users)])
    new_emails = {u.id: u.email.lower() for _, u in _present(f.users)}
    for i, user in _present(f.users):
        if user.email.lower() in emails:
            err(f"users[{i}].email", f"email {user.email!r} appears more than once")
        holder = stored.email_holders.get(user.email.lower())
        if holder and holder != user.id and new_emails.get(holder) in (None, user.email.lower()):
            err(f"users[{i}].email", f"email {user.email!r} is already another stored user's")
    new_slugs = {g.id: g.slug for _, g in _present(f.groups)}
    for i, group in _present(f.groups):
        holder = stored.slug_holders.get(group.slug)
        if holder and holder != group.id and new_slugs.get(holder) in (None, group.slug):
            err(f"groups[{i}].slug", f"slug {group.slug!r} is already another stored group's")
    names = _duplicates([p.name.lower() for _, p in _present(f.players)])
    for i, player in _present(f.players):
        if player.name.lower() in names:
            err(f"players[{i}].name", f"name {player.name!r} appears more than once")

    parents = {gid: parent for gid, (parent, _) in stored.groups.items()}
    parents.update({g.id: g.parent_id for _, g in _present(f.groups)})
    for i, group in _present(f.groups):
        if group.parent_id is not None and group.parent_id not in group_ids:
            err(f"groups[{i}].parentId", f"no group has id {group.parent_id}")
            continue
        seen, current = {group.id}, group.parent_id
        while current is not None and len(seen) <= MAX_DEPTH:
            if current in seen:
                err(f"groups[{i}].parentId", "the parents of this group form a cycle")
                break
            seen.add(current)
            current = parents.get(current)
    for i, user in _present(f.users):
        for j, membership in enumerate(user.memberships):
            if membership.group_id not in group_ids:
                err(
                    f"users[{i}].memberships[{j}].groupId", f"no group has id {membership.group_id}"
                )
        member_of = _duplicates([m.group_id for m in user.memberships])
        if member_of:
            err(f"users[{i}].memberships", "a user has one role per group")
    for i, post in _present(f.posts):
        if post.group_id not in group_ids:
            err(f"posts[{i}].groupId", f"no group has id {post.group_id}")
        if post.author_id not in user_ids:
            err(f"posts[{i}].authorId", f"no user has id {post.author_id}")
    for i, comment in _present(f.comments):
        if comment.post_id not in post_ids:
            err(f"comments[{i}].postId", f"no post has id {comment.post_id}")
        if comment.author_id not in user_ids:
            err(f"comments[{i}].authorId", f"no user has id {comment.author_id}")
        if comment.deleted_by_id is not None and comment.deleted_by_id not in user_ids:
            err(f"comments[{i}].deletedById", f"no user has id {comment.deleted_by_id}")
        if comment.parent_comment_id:
            parent = comments.get(comment.parent_comment_id)
            parent_post = (
                parent.post_id
                if parent is not None
                else stored.comments.get(comment.parent_comment_id)
            )
            if raw is not None and comment.parent_comment_id in _raw_ids(raw, "comments"):
                pass  # the parent has its own error
            elif parent_post != comment.post_id:
                err(f"comments[{i}].parentCommentId", "no comment of the same post has this id")
        for j, report in enumerate(comment.spam_reports):
            if report.author_id not in user_ids:
                err(
                    f"comments[{i}].spamReports[{j}].authorId", f"no user has id {report.author_id}"
                )
    for i, event in _present(f.events):
        if event.group_id not in group_ids:
            err(f"events[{i}].groupId", f"no group has id {event.group_id}")
        if event.author_id not in user_ids:
            err(f"events[{i}].authorId", f"no user has id {event.author_id}")
    return errors
