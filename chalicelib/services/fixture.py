"""Loading a fixture (CONTRACT §4): validate the whole file, then upsert everything.

Nothing is written unless the whole file is valid. Loading the same file twice changes nothing:
records are upserted by id, and a password whose stored hash already verifies keeps its hash.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from chalicelib.auth import hash_password, verify_password
from chalicelib.sanitize import clean_html
from chalicelib.schemas.fixture import (
    Fixture,
    FixtureComment,
    FixtureEvent,
    FixtureGroup,
    FixtureModel,
    FixturePost,
    FixtureUser,
)
from chalicelib.services.links import slugify

if TYPE_CHECKING:
    from chalicelib.store.fixture import FixtureStore


@dataclass(frozen=True)
class FixtureError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class FixtureReport:
    counts: dict[str, int] = field(default_factory=dict)


def _same(value: Any) -> Any:
    return value


def _whole(value: Any) -> int:
    return int(value or 0)  # the store answers numbers as floats, an unset one as None


def _date(value: Any) -> str | None:
    from datetime import UTC

    return None if value is None else value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _fields(names: str, convert: Callable[[Any], Any] = _same) -> dict[str, Callable[[Any], Any]]:
    return dict.fromkeys(names.split(), convert)


# What a fixture record and its stored record hold alike, by the fixture model's field name (the
# stored attribute's too), in the order `export` writes them: `load` copies each in as it is,
# `export` writes it under its JSON name, converted from what the store answers.
SHARED: dict[str, tuple[type[FixtureModel], dict[str, Callable[[Any], Any]]]] = {
    "groups": (FixtureGroup, _fields("id name slug parent_id access thumb_url")),
    "users": (FixtureUser, _fields("id alias email password_hash slug avatar_url")),
    "posts": (
        FixturePost,
        {**_fields("id group_id author_id title slug content"), "created_on": _date},
    ),
    "comments": (
        FixtureComment,
        {
            "id": int,
            **_fields("post_id author_id content"),
            "created_on": _date,
            "parent_comment_id": _whole,
            "is_approved": bool,
            "approved_on": _date,
            **_fields("rating votes", _whole),
            "is_anonymous": bool,
            "deleted_on": _date,
            "deleted_by_id": _same,
        },
    ),
    "events": (
        FixtureEvent,
        {
            "id": int,
            **_fields("group_id author_id title"),
            "all_day": bool,
            **_fields("start_date end_date", _date),
            **_fields("content organizer location"),
            "created_on": _date,
        },
    ),
}


def _loaded(section: str, item: FixtureModel) -> dict[str, Any]:
    return {name: getattr(item, name) for name in SHARED[section][1]}


def _exported(section: str, record: Any) -> dict[str, Any]:
    model, fields = SHARED[section]
    return {
        model.model_fields[name].alias or name: convert(getattr(record, name))
        for name, convert in fields.items()
    }


class FixtureInvalid(Exception):
    def __init__(self, errors: list[FixtureError]) -> None:
        super().__init__(f"{len(errors)} error(s) in the fixture")
        self.errors = errors


def json_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "$"


def validate_fixture(data: Any) -> Fixture:
    """The fixture, or FixtureInvalid listing every error with its JSON path."""
    try:
        fixture = Fixture.model_validate(data)
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
        raise FixtureInvalid(errors + _reference_errors(_valid_records(data), data)) from None
    errors = _reference_errors(fixture)
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
                checked.append(model.model_validate(item))
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


def _reference_errors(f: Fixture, raw: Any = None) -> list[FixtureError]:
    """Duplicates and dangling references; `raw`: the file, when some records are invalid
    (None in `f`)."""
    errors: list[FixtureError] = []

    def err(path: str, message: str) -> None:
        errors.append(FixtureError(path, message))

    group_ids = {g.id for _, g in _present(f.groups)}
    user_ids = {u.id for _, u in _present(f.users)}
    post_ids = {p.id: p for _, p in _present(f.posts)}
    comments = {c.id: c for _, c in _present(f.comments)}
    if raw is not None:
        group_ids |= _raw_ids(raw, "groups")
        user_ids |= _raw_ids(raw, "users")
        post_ids = {**dict.fromkeys(_raw_ids(raw, "posts")), **post_ids}

    roots = [i for i, g in _present(f.groups) if g.parent_id is None]
    if len(roots) != 1 and (raw is None or all(g is not None for g in f.groups)):
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
    for i, user in _present(f.users):
        if user.email.lower() in emails:
            err(f"users[{i}].email", f"email {user.email!r} appears more than once")
    names = _duplicates([p.name.lower() for _, p in _present(f.players)])
    for i, player in _present(f.players):
        if player.name.lower() in names:
            err(f"players[{i}].name", f"name {player.name!r} appears more than once")

    parents = {g.id: g.parent_id for _, g in _present(f.groups)}
    for i, group in _present(f.groups):
        if group.parent_id is not None and group.parent_id not in group_ids:
            err(f"groups[{i}].parentId", f"no group has id {group.parent_id}")
            continue
        seen, current = {group.id}, group.parent_id
        while current is not None:
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
            if raw is not None and comment.parent_comment_id in _raw_ids(raw, "comments"):
                pass  # the parent has its own error
            elif parent is None or parent.post_id != comment.post_id:
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


class FixtureService:
    def __init__(self, store: FixtureStore) -> None:
        self.store = store

    def load(self, data: Any, progress: Callable[[str, int], None] | None = None) -> FixtureReport:
        """Validate the whole fixture, then upsert it section by section; `progress(section,
        count)` is told as each section is written (the CLI shows it on a terminal)."""
        fixture = validate_fixture(data)
        report = FixtureReport()

        def written(section: str, count: int) -> None:
            report.counts[section] = count
            if progress is not None:
                progress(section, count)

        self.store.write_groups([self._group(g) for g in fixture.groups])
        written("groups", len(fixture.groups))

        stored = self.store.credentials({u.id for u in fixture.users})
        self.store.write_users([self._user(u, *stored.get(u.id, (None, 0))) for u in fixture.users])
        written("users", len(fixture.users))

        posts = self._posts(fixture)
        reloaded = self.store.stored_post_ids([p["id"] for p in posts])
        self.store.write_posts(posts)
        written("posts", len(posts))

        groups_of_posts = {p["id"]: p["group_id"] for p in posts}
        aliases = {u.id: u.alias for u in fixture.users}
        comments = [self._comment(c, groups_of_posts, aliases) for c in fixture.comments]
        self.store.write_comments(comments)
        self.store.recount_comments(sorted(reloaded | {c["post_id"] for c in comments}))
        if comments:
            self.store.raise_counter("comments", max(c["id"] for c in comments))
        written("comments", len(comments))

        events = [self._event(e) for e in fixture.events]
        self.store.write_events(events)
        if events:
            self.store.raise_counter("events", max(e["id"] for e in events))
        written("events", len(events))

        self.store.write_connectors(fixture.connectors)
        written("connectors", len(fixture.connectors))
        self.store.write_players(fixture.players)
        written("players", len(fixture.players))
        if fixture.home_page is not None:
            from chalicelib.services.system_pages import HOME, SYSTEM_SCOPE

            content = clean_html(fixture.home_page.content)
            self.store.write_document(SYSTEM_SCOPE, HOME, {"content": content})
            written("home page", 1)
        return report

    @staticmethod
    def _group(g: Any) -> dict[str, Any]:
        return {**_loaded("groups", g), "permissions": g.permissions.model_dump(by_alias=True)}

    @staticmethod
    def _user(u: Any, stored_hash: str | None, stored_version: int) -> dict[str, Any]:
        password_hash = u.password_hash
        if u.password is not None:
            keep = stored_hash is not None and verify_password(stored_hash, u.password)
            password_hash = stored_hash if keep else hash_password(u.password)
        # A password the reload changes (or removes) ends the user's earlier sessions; an
        # unchanged one keeps them (loading twice changes nothing).
        changed = stored_hash is not None and password_hash != stored_hash
        return {
            **_loaded("users", u),
            "token_version": stored_version + 1 if changed else stored_version,
            "email_lower": u.email.lower(),
            "password_hash": password_hash,
            "memberships": {m.group_id: m.role for m in u.memberships},
        }

    @staticmethod
    def _event(e: Any) -> dict[str, Any]:
        from chalicelib.services.events import stored_fields

        return {
            **_loaded("events", e),
            "editor_id": e.author_id,
            "created_on": e.created_on or e.start_date,
            "modified_on": e.created_on or e.start_date,
            **stored_fields(e),
        }

    @staticmethod
    def _posts(f: Fixture) -> list[dict[str, Any]]:
        taken: set[tuple[str, str]] = {(p.group_id, p.slug) for p in f.posts if p.slug}
        out = []
        for p in f.posts:
            slug = p.slug
            if slug is None:
                # A derived slug is made unique in its group, deterministically (same file, same slugs).
                base = slugify(p.title, "post")
                slug, n = base, 2
                while (p.group_id, slug) in taken:
                    slug, n = f"{base}-{n}", n + 1
                taken.add((p.group_id, slug))
            content = clean_html(p.content)
            out.append(
                {**_loaded("posts", p), "slug": slug, "content": content, "source": "fixture"}
            )
        return out

    @staticmethod
    def _comment(c: Any, groups: dict[str, str], aliases: dict[str, str]) -> dict[str, Any]:
        content = clean_html(c.content)
        return {
            **_loaded("comments", c),
            "group_id": groups[c.post_id],
            "content": content,
            "spam_reports": [
                {"author_id": r.author_id, "created_on": r.created_on} for r in c.spam_reports
            ],
            "source": "fixture",
            "author_alias": aliases.get(c.author_id, ""),
        }


class FixtureExporter:
    """The whole community in the fixture format (CONTRACT §4), record by record, so that `load`
    into an empty deployment gives the same answers.

    Passwords travel as their stored slow hash (`passwordHash`); stored secrets (mailbox
    passwords, chat application secrets) are not in the fixture format and are left out, as are
    the settings that have no fixture section (mailboxes, feeds, newsletters, profile fields,
    notifications, system pages).
    """

    def __init__(self, store: Any) -> None:
        self.store = store

    def sections(self) -> Iterator[tuple[str, Iterator[dict[str, Any]]]]:
        yield "groups", (self._group(g) for g in self.store.groups())
        yield "users", (self._user(u) for u in self.store.users())
        yield "posts", (self._post(p) for p in self.store.posts())
        yield "comments", (self._comment(c) for c in self.store.comments())
        yield "events", (self._event(e) for e in self.store.events())
        yield "connectors", (self._connector(c, on) for c, on in self.store.connectors())
        yield "players", (self._player(p) for p in self.store.players())

    def home_page(self) -> dict[str, Any] | None:
        from chalicelib.services.system_pages import HOME, SYSTEM_SCOPE

        doc = self.store.document(SYSTEM_SCOPE, HOME)
        return None if doc is None else {"content": str(doc.get("content", ""))}

    @staticmethod
    def _group(g: Any) -> dict[str, Any]:
        return {**_exported("groups", g), "permissions": g.permissions or {}}

    @staticmethod
    def _user(u: Any) -> dict[str, Any]:
        return {
            **_exported("users", u),
            "memberships": [
                {"groupId": group_id, "role": role}
                for group_id, role in sorted((u.memberships or {}).items())
            ],
        }

    @staticmethod
    def _post(p: Any) -> dict[str, Any]:
        return _exported("posts", p)

    @staticmethod
    def _comment(c: Any) -> dict[str, Any]:
        return {
            **_exported("comments", c),
            "spamReports": [
                {"authorId": r.author_id, "createdOn": _date(r.created_on)}
                for r in c.spam_reports or []
            ],
        }

    @staticmethod
    def _event(e: Any) -> dict[str, Any]:
        return _exported("events", e)

    @staticmethod
    def _connector(c: Any, enabled: bool) -> dict[str, Any]:
        return {
            "id": c.id,
            "kind": c.kind,
            "name": c.name,
            "description": c.description,
            "isEnabled": enabled,
            "authorId": c.author_id,
            "createdOn": _date(c.created_on),
        }

    @staticmethod
    def _player(p: Any) -> dict[str, Any]:
        return {
            "id": p.id,
            "name": p.name,
            "experience": int(p.experience or 0),
            "isPublicProfile": bool(p.is_public_profile),
            "lastLogNotifation": _date(p.last_log_notifation),
            "lastLogRead": _date(p.last_log_read),
            "lastModified": _date(p.last_modified),
            "quests": p.quests or [],
            "cards": p.cards or [],
            "log": p.log or [],
        }
