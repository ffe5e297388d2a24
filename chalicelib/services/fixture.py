"""Loading a fixture (CONTRACT §4): validate the whole file, then upsert everything.

Nothing is written unless the whole file is valid. Loading the same file twice changes nothing:
records are upserted by id, and a password whose stored hash already verifies keeps its hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime
from types import NoneType
from typing import TYPE_CHECKING, Annotated, cast, get_args, get_origin

from chalicelib.auth import hash_password, verify_password
from chalicelib.clock import utc_now
from chalicelib.domain import audit
from chalicelib.domain.comments import Comment, SpamReport
from chalicelib.domain.connectors import Connector
from chalicelib.domain.events import Event
from chalicelib.domain.fixture import (
    CommentDocument,
    ConnectorDocument,
    ConnectorValues,
    EventDocument,
    FixtureDocument,
    GroupDocument,
    HomePageDocument,
    LoadedEvent,
    MailedSource,
    PlayerDocument,
    PlayerValues,
    PostDocument,
    UserDocument,
)
from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject, JsonValue
from chalicelib.domain.players import Player
from chalicelib.domain.posts import NewPost, Post
from chalicelib.domain.users import User
from chalicelib.sanitize import clean_html, slugify
from chalicelib.schemas.fixture import (
    Fixture,
    FixtureComment,
    FixtureConnector,
    FixtureEvent,
    FixtureGroup,
    FixtureHomePage,
    FixtureModel,
    FixturePlayer,
    FixturePost,
    FixtureUser,
)
from chalicelib.services.events import stored_details
from chalicelib.services.fixture_dates import days_moved, move_dates
from chalicelib.services.fixture_references import (  # the loader's errors, for its callers
    FixtureError,
    StoredCommunity,
)
from chalicelib.services.fixture_rules import (  # the loader's errors, for its callers too
    FixtureInvalid,
    stored_community,
    validate_fixture,
)
from chalicelib.services.system_pages import HOME, SYSTEM_SCOPE

__all__ = ["FixtureError", "FixtureExporter", "FixtureInvalid", "FixtureService"]

if TYPE_CHECKING:
    from pydantic import BaseModel

    from chalicelib.store.fixture import FixtureExportStore, FixtureStore


# The fields a reload keeps from the stored record when the file leaves them out (None in what
# the load writes, `FixtureReport.written`): an event's and a connector's first-load time, a
# connector's author (store/fixture.py), an unchanged player's last change (store/player.py).
KEPT_WHEN_OMITTED: dict[str, tuple[str, ...]] = {
    "events": ("createdOn",),
    "connectors": ("authorId", "createdOn"),
    "players": ("lastModified",),
}


@dataclass
class FixtureReport:
    counts: dict[str, int] = field(default_factory=dict)
    # Section -> each record the load wrote, as `export` writes it (KEPT_WHEN_OMITTED's fields
    # None where the file leaves them out): `cli load` tells what changed from these and one read
    # of what was stored before, not a second read of every section after.
    written: dict[str, list[FixtureDocument | HomePageDocument]] = field(default_factory=dict)


# How a value the store answers is written to the file.
Convert = Callable[..., JsonValue]
# Told each section as the load writes it: its name, its records as `export` writes them.
Written = Callable[[str, Sequence["FixtureDocument | HomePageDocument"]], None]


def _same(value: JsonValue) -> JsonValue:
    return value


def _whole(value: float | None) -> int:
    return int(value or 0)  # the store answers numbers as floats, an unset one as None


def _date(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _optional(convert: Convert) -> Convert:
    return lambda value: None if value is None else convert(value)


def _converter(annotation: object) -> Convert:
    """How a stored value is written under a fixture field of this type: a date as ISO 8601 UTC
    text, a number as a whole one, a flag as a boolean; an optional one stays null when unset."""
    kinds = [a for a in get_args(annotation) if a is not NoneType] or [annotation]
    optional = NoneType in get_args(annotation)
    kind = get_args(kinds[0])[0] if get_origin(kinds[0]) is Annotated else kinds[0]
    if kind is datetime:
        return _date
    if kind is bool:
        return _optional(bool) if optional else bool
    if kind is int:
        return _optional(int) if optional else _whole
    return _same


def _shared(model: type[FixtureModel], record: type, *, own: str = "") -> dict[str, Convert]:
    """The fields `model` (a section's record in the file) and `record` (the domain's, whose names
    the store's attributes have too) hold alike, in the file's order, each with how `export`
    writes it; `own` names those the section writes itself (nested lists, a default left out)."""
    names = {f.name for f in dataclass_fields(record)} - set(own.split())
    return {
        name: _converter(info.annotation)
        for name, info in model.model_fields.items()
        if name in names
    }


# What a fixture record and its stored record hold alike, by the fixture model's field name (the
# stored attribute's too), in the order `export` writes them: `load` copies each in as it is,
# `export` writes it under its JSON name, converted from what the store answers. Derived from the
# fixture's models and the domain's records: a field both declare travels both ways with nothing
# more said (tests/services/test_event_fields.py). The documents and values they make are
# declared in domain/fixture.py (tests/services/test_fixture_documents.py holds each to its
# declaration, key by key).
SHARED: dict[str, tuple[type[FixtureModel], dict[str, Convert]]] = {
    "groups": (FixtureGroup, _shared(FixtureGroup, Group, own="permissions")),
    "users": (FixtureUser, _shared(FixtureUser, User, own="memberships")),
    "posts": (FixturePost, _shared(FixturePost, Post, own="source")),
    "comments": (FixtureComment, _shared(FixtureComment, Comment, own="spam_reports source")),
    "events": (FixtureEvent, _shared(FixtureEvent, Event)),
    "players": (FixturePlayer, _shared(FixturePlayer, Player, own="quests cards log")),
}


def _loaded(section: str, item: FixtureModel) -> dict[str, object]:
    return {name: getattr(item, name) for name in SHARED[section][1]}


def _reader(record: object) -> Callable[[str], object]:
    """A field of `record`: a stored record's attribute, or a key of the values a load writes."""
    if isinstance(record, dict):
        return record.get
    return lambda name: getattr(record, name)


def _exported(section: str, record: object) -> JsonObject:
    """`record` (a stored record, or the values a load writes) as `export` writes it."""
    model, fields = SHARED[section]
    read = _reader(record)
    return {
        model.model_fields[name].alias or name: convert(read(name))
        for name, convert in fields.items()
    }


def _post_document(post: object) -> PostDocument:
    document: PostDocument = _exported("posts", post)
    if _reader(post)("source") == MAILED:
        document["source"] = MAILED
    return document


def _connector_document(connector: object, enabled: bool) -> ConnectorDocument:
    """A stored connector, or the values a load writes, as `export` writes it."""
    read = _reader(connector)
    document = {
        "id": read("id"),
        "kind": read("kind"),
        "name": read("name"),
        "description": read("description"),
        "isEnabled": enabled,
        "authorId": read("author_id"),
        "createdOn": _date(cast(datetime | None, read("created_on"))),
    }
    return cast(ConnectorDocument, document)  # its keys: ConnectorDocument's, as written here


def _player_document(player: object) -> PlayerDocument:
    """A stored player, or the values a load writes, as `export` writes it."""
    read = _reader(player)
    lists = {key: list(cast(Sequence[JsonObject], read(key))) for key in ("quests", "cards", "log")}
    document = {**_exported("players", player), **lists}
    return cast(PlayerDocument, document)  # SHARED's note: the test holds it to its keys


# `source` of a mailed post or comment, so that `load` keeps it (a fixture's is the default, left
# out: an export of a fixture-made community stays as it was).
MAILED: MailedSource = "email"


def _entries(items: Sequence[BaseModel]) -> list[JsonObject]:
    # Stored as the spec names the fields, so a read validates them straight back.
    return [item.model_dump(mode="json", by_alias=True) for item in items]


class FixtureService:
    def __init__(self, store: FixtureStore, clock: Callable[[], datetime] = utc_now) -> None:
        self.store = store
        self.clock = clock  # the day of the load, which a file's `datesRelativeTo` moves to

    def load(
        self, data: object, progress: Callable[[str, int], None] | None = None
    ) -> FixtureReport:
        """Validate the whole fixture (`data`: the file's JSON, untrusted), then upsert it
        section by section; `progress(section, count)` is told as each section is written (the
        CLI shows it on a terminal)."""
        stored = stored_community(self.store, data)
        fixture = validate_fixture(data, stored)
        moved = days_moved(fixture, self.clock().astimezone(UTC).date())
        move_dates(fixture, moved)
        report = FixtureReport()

        def written(section: str, documents: Sequence[FixtureDocument | HomePageDocument]) -> None:
            report.counts[section] = len(documents)
            report.written[section] = list(documents)
            if progress is not None:
                progress(section, len(documents))

        self._write_people_and_posts(fixture, stored, written)
        self._write_the_rest(fixture, written)
        self._record(data, moved, report)
        return report

    def _write_people_and_posts(
        self, fixture: Fixture, stored: StoredCommunity, written: Written
    ) -> None:
        """The groups, users, posts and comments, each section told to `written` as written."""
        groups = [self._group(g) for g in fixture.groups]
        self.store.write_groups(groups)
        written("groups", [FixtureExporter._group(g) for g in groups])

        kept = self.store.credentials({u.id for u in fixture.users})
        users = [self._user(u, *kept.get(u.id, (None, 0))) for u in fixture.users]
        self.store.write_users(users)
        written("users", [FixtureExporter._user(u) for u in users])

        posts = self._posts(fixture)
        reloaded = self.store.stored_post_ids([p["id"] for p in posts])
        self.store.write_posts(posts)
        written("posts", [_post_document(p) for p in posts])

        comments = self._load_comments(fixture, stored, posts, reloaded)
        written("comments", [FixtureExporter._comment(c) for c in comments])

    def _write_the_rest(self, fixture: Fixture, written: Written) -> None:
        """The events, connectors, players and home page, each told to `written` as written."""
        events = [self._event(e) for e in fixture.events]
        self.store.write_events(events)
        if events:
            self.store.raise_counter("events", max(e.id for e in events))
        written("events", [_exported("events", e) for e in events])

        connectors = [self._connector(c) for c in fixture.connectors]
        enabled = {c.id: c.is_enabled for c in fixture.connectors}
        self.store.write_connectors(connectors, enabled)
        written("connectors", [_connector_document(c, enabled[c["id"]]) for c in connectors])
        players = [self._player(p) for p in fixture.players]
        self.store.write_players(players)
        written("players", [_player_document(p) for p in players])
        if fixture.home_page is not None:
            written("home page", [self._load_home_page(fixture.home_page)])

    def _record(self, data: object, moved: int, report: FixtureReport) -> None:
        """One audit entry for the load, naming how many of each it upserted; the file is named
        by its digest, and loading the file the last load loaded again records nothing (it
        changes nothing). A file with `datesRelativeTo` is named with the days its dates moved:
        loaded another day, it changes them."""
        text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
        text += f" {moved:+d} days" if moved else ""
        digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
        if self.store.last_load() == digest:
            return
        self.store.write_audit(
            audit.entry(
                "fixture.load",
                target=("fixture", digest),
                group_id=None,
                before=None,
                after={section: count for section, count in report.counts.items() if count},
            )
        )

    def _load_comments(
        self,
        fixture: Fixture,
        stored: StoredCommunity,
        posts: list[NewPost],
        reloaded: set[str],
    ) -> list[Comment]:
        """Write the file's comments, recount the posts they are on (and the reloaded ones) and
        raise the comment counter past them."""
        # A comment may be on a stored post, by a stored user.
        groups_of_posts = {**stored.posts, **{p["id"]: p["group_id"] for p in posts}}
        aliases = {
            **{user_id: alias for user_id, (_, alias) in stored.users.items()},
            **{u.id: u.alias for u in fixture.users},
        }
        comments = [self._comment(c, groups_of_posts) for c in fixture.comments]
        self.store.write_comments(comments, aliases)
        self.store.recount_comments(sorted(reloaded | {c.post_id for c in comments}))
        if comments:
            self.store.raise_counter("comments", max(c.id for c in comments))
        return comments

    def _load_home_page(self, home_page: FixtureHomePage) -> HomePageDocument:
        content = clean_html(home_page.content)
        self.store.write_document(SYSTEM_SCOPE, HOME, {"content": content})
        return {"content": content}

    @staticmethod
    def _group(g: FixtureGroup) -> Group:
        granted = g.permissions.model_dump(by_alias=True)
        return Group(
            **g.model_dump(include=set(SHARED["groups"][1])),
            permissions={action: tuple(roles) for action, roles in granted.items()},
        )

    @staticmethod
    def _user(u: FixtureUser, stored_hash: str | None, stored_version: int) -> User:
        password_hash = u.password_hash
        if u.password is not None:
            keep = stored_hash is not None and verify_password(stored_hash, u.password)
            password_hash = stored_hash if keep else hash_password(u.password)
        # A password the reload changes (or removes) ends the user's earlier sessions; an
        # unchanged one keeps them (loading twice changes nothing).
        changed = stored_hash is not None and password_hash != stored_hash
        return User(
            **u.model_dump(include=set(SHARED["users"][1]) - {"password_hash"}),
            email_lower=u.email.lower(),
            password_hash=password_hash,
            token_version=stored_version + 1 if changed else stored_version,
            memberships={m.group_id: m.role for m in u.memberships},
        )

    @staticmethod
    def _event(e: FixtureEvent) -> LoadedEvent:
        return LoadedEvent(
            **vars(stored_details(e)),
            id=e.id,
            group_id=e.group_id,
            author_id=e.author_id,
            created_on=e.created_on,
        )

    @staticmethod
    def _posts(f: Fixture) -> list[NewPost]:
        taken: set[tuple[str, str]] = {(p.group_id, p.slug) for p in f.posts if p.slug}
        out: list[NewPost] = []
        for p in f.posts:
            slug = p.slug
            if slug is None:
                # A derived slug is made unique in its group, deterministically (same file, same slugs).
                base = slugify(p.title, "post")
                slug, n = base, 2
                while (p.group_id, slug) in taken:
                    slug, n = f"{base}-{n}", n + 1
                taken.add((p.group_id, slug))
            post = {
                **_loaded("posts", p),
                "slug": slug,
                "content": clean_html(p.content),
                "source": p.source,
            }
            out.append(cast(NewPost, post))  # SHARED's note: the test holds it to its keys
        return out

    @staticmethod
    def _comment(c: FixtureComment, groups: dict[str, str]) -> Comment:
        as_given = c.model_dump(include=set(SHARED["comments"][1]) - {"content"})
        return Comment(
            **as_given,
            group_id=groups[c.post_id],
            content=clean_html(c.content),
            # The store derives these from the state, as for every comment it writes.
            last_deleted_on=None,
            last_reported_on=None,
            spam_reports=tuple(SpamReport(r.author_id, r.created_on) for r in c.spam_reports),
            source=c.source,
            version=None,  # a load writes a comment whole, unversioned
        )

    @staticmethod
    def _connector(c: FixtureConnector) -> ConnectorValues:
        return {
            "id": c.id,
            "kind": c.kind,
            "name": c.name,
            "description": c.description,
            "author_id": c.author_id,
            "created_on": c.created_on,
        }

    @staticmethod
    def _player(p: FixturePlayer) -> PlayerValues:
        values = {
            **_loaded("players", p),
            "quests": _entries(p.quests),
            "cards": _entries(p.cards),
            "log": _entries(p.log),
        }
        return cast(PlayerValues, values)  # SHARED's note: the test holds it to its keys


class FixtureExporter:
    """The whole community in the fixture format (CONTRACT §4), record by record, so that `load`
    into an empty deployment gives the same answers.

    Passwords travel as their stored slow hash (`passwordHash`); stored secrets (mailbox
    passwords, chat application secrets) are not in the fixture format and are left out, as are
    the settings that have no fixture section (mailboxes, feeds, newsletters, profile fields,
    notifications, system pages).
    """

    def __init__(self, store: FixtureExportStore) -> None:
        self.store = store

    def sections(self) -> Iterator[tuple[str, Iterator[FixtureDocument]]]:
        yield "groups", map(self._group, self.store.groups())
        yield "users", map(self._user, self.store.users())
        yield "posts", map(self._post, self.store.posts())
        yield "comments", map(self._comment, self.store.comments())
        yield "events", map(self._event, self.store.events())
        yield "connectors", (self._connector(c, on) for c, on in self.store.connectors())
        yield "players", map(self._player, self.store.players())

    def home_page(self) -> HomePageDocument | None:
        doc = self.store.document(SYSTEM_SCOPE, HOME)
        return None if doc is None else {"content": str(doc.get("content", ""))}

    @staticmethod
    def _group(g: Group) -> GroupDocument:
        granted = {action: list(roles) for action, roles in g.permissions.items()}
        document = {**_exported("groups", g), "permissions": granted}
        return cast(GroupDocument, document)  # SHARED's note: the test holds it to its keys

    @staticmethod
    def _user(u: User) -> UserDocument:
        memberships = sorted(u.memberships.items())
        document = {
            **_exported("users", u),
            "memberships": [{"groupId": group_id, "role": role} for group_id, role in memberships],
        }
        return cast(UserDocument, document)  # SHARED's note: the test holds it to its keys

    @staticmethod
    def _post(p: Post) -> PostDocument:
        return _post_document(p)

    @staticmethod
    def _comment(c: Comment) -> CommentDocument:
        reports = [
            {"authorId": r.author_id, "createdOn": _date(r.created_on)} for r in c.spam_reports
        ]
        document = {**_exported("comments", c), "spamReports": reports}
        comment = cast(CommentDocument, document)  # SHARED's note: the test holds it to its keys
        if c.source == MAILED:
            comment["source"] = MAILED
        return comment

    @staticmethod
    def _event(e: Event) -> EventDocument:
        return _exported("events", e)

    @staticmethod
    def _connector(c: Connector, enabled: bool) -> ConnectorDocument:
        return _connector_document(c, enabled)

    @staticmethod
    def _player(p: Player) -> PlayerDocument:
        return _player_document(p)
