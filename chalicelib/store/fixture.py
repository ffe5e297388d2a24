"""Bulk writes of a validated fixture (BatchWriteItem, 25 items a request)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence

from chalicelib.clock import utc_now
from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.comments import Comment
from chalicelib.domain.connectors import Connector
from chalicelib.domain.events import Event, details_of
from chalicelib.domain.fixture import (
    ConnectorValues,
    LoadedEvent,
    PlayerValues,
)
from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject
from chalicelib.domain.players import Player
from chalicelib.domain.posts import NewPost, Post
from chalicelib.domain.users import User
from chalicelib.store.audit import AuditRepository
from chalicelib.store.comments import CommentRecord, CommentRepository, record_of
from chalicelib.store.connectors import ConnectorRecord, ConnectorRepository
from chalicelib.store.counters import CounterRepository
from chalicelib.store.documents import DocumentRepository
from chalicelib.store.events import CalendarEntryRecord, EventRecord, EventRepository
from chalicelib.store.groups import GroupRecord, GroupRepository, group_record
from chalicelib.store.player import PlayerRecord, PlayerRepository
from chalicelib.store.posts import PostRecord
from chalicelib.store.user_search import SearchIndex
from chalicelib.store.users import UserRecord, UserRepository


class FixtureStore:
    def credentials(self, user_ids: set[str]) -> dict[str, tuple[str | None, int]]:
        """Each stored user's password hash and token version (a reload keeps or raises it)."""
        if not user_ids:
            return {}
        return {
            u.id: (u.password_hash, int(u.token_version or 0))
            for u in UserRecord.batch_get(
                list(user_ids), attributes_to_get=["id", "password_hash", "token_version"]
            )
        }

    # --- what the stored community holds of what a file names (the load validates against it) ---

    def root_id(self) -> str | None:
        # What the table holds: a root remembered by this process (its 60 s cache, filled by a
        # read of another moment) must not refuse a load into tables emptied since.
        return GroupRepository.stored_root_id()

    def groups(self, group_ids: set[str]) -> dict[str, tuple[str | None, str]]:
        """Each stored group's parent id and slug (BatchGetItem, 100 keys a request)."""
        if not group_ids:
            return {}
        found = GroupRecord.batch_get(
            list(group_ids), attributes_to_get=["id", "parent_id", "slug"]
        )
        return {g.id: (g.parent_id, g.slug) for g in found}

    def users(self, user_ids: set[str]) -> dict[str, tuple[str, str]]:
        """Each stored user's email address (lower-cased) and alias."""
        if not user_ids:
            return {}
        found = UserRecord.batch_get(
            list(user_ids), attributes_to_get=["id", "email_lower", "alias"]
        )
        return {u.id: (u.email_lower, u.alias) for u in found}

    def post_groups(self, post_ids: set[str]) -> dict[str, str]:
        """Each stored post's group id."""
        if not post_ids:
            return {}
        found = PostRecord.batch_get(list(post_ids), attributes_to_get=["id", "group_id"])
        return {p.id: p.group_id for p in found}

    def comment_posts(self, comment_ids: set[int]) -> dict[int, str]:
        """Each stored comment's post id."""
        if not comment_ids:
            return {}
        found = CommentRecord.batch_get(list(comment_ids), attributes_to_get=["id", "post_id"])
        return {int(c.id): c.post_id for c in found}

    def group_with_slug(self, slug: str) -> str | None:
        for group in GroupRecord.by_slug.query(slug, limit=1):
            return str(group.id)
        return None

    def user_with_email(self, email: str) -> str | None:
        found = UserRepository().by_email(email)
        return found.id if found is not None else None

    def write_groups(self, groups: Sequence[Group]) -> None:
        with GroupRecord.batch_write() as batch:
            for group in groups:
                granted = {action: list(roles) for action, roles in group.permissions.items()}
                batch.save(group_record(**{**dataclasses.asdict(group), "permissions": granted}))
        GroupRepository.forget_cache()

    def write_users(self, users: Sequence[User]) -> None:
        """The users, and what the people search finds them by (the items a reload no longer
        gives a user, an old alias or membership, are deleted: store/user_search.py)."""

        ids = [user.id for user in users]
        fields = ["id", "alias", "email", "slug", "memberships"]
        before = (
            {u.id: u for u in UserRecord.batch_get(ids, attributes_to_get=fields)} if ids else {}
        )
        records = [UserRecord.of(user) for user in users]
        with UserRecord.batch_write() as batch:
            for record in records:
                batch.save(record)
        SearchIndex().replace((before.get(r.id), r) for r in records)
        UserRepository.forget(set(ids))

    def stored_post_ids(self, post_ids: list[str]) -> set[str]:
        """Which of these posts are stored already (BatchGetItem, 100 keys a request).

        Only those (their comments from mail stay) and the posts the file gives comments can have
        comments to recount: a new post is written with none, so a load of hundreds of posts
        and a few comments counts a few, not hundreds.
        """
        if not post_ids:
            return set()
        return {p.id for p in PostRecord.batch_get(post_ids, attributes_to_get=["id"])}

    def write_posts(self, posts: Sequence[NewPost]) -> None:
        with PostRecord.batch_write() as batch:
            for values in posts:
                record = PostRecord(**values)
                record.refresh_index_keys()
                batch.save(record)

    def write_comments(self, comments: Sequence[Comment], aliases: Mapping[str, str]) -> None:
        """The comments, found by their text and their author's alias (`aliases`: user id →
        alias; the alias is not stored with a comment)."""
        with CommentRecord.batch_write() as batch:
            for comment in comments:
                record = record_of(comment)
                record.refresh_index_keys(aliases.get(comment.author_id, ""))
                batch.save(record)

    def write_events(self, events: Sequence[LoadedEvent]) -> None:
        """Events by id with their calendar items; a reloaded event's old calendar items go first
        (its dates may have changed). An event without `created_on` gets the time of its first
        load, and a reload keeps that time and its `modified_on` (loading twice changes nothing).
        """

        if not events:
            return
        repository = EventRepository()
        stored = repository.stored_items(e.id for e in events)
        with CalendarEntryRecord.batch_write() as batch:
            for old in stored.values():
                for entry in old.calendar_entries():
                    batch.delete(entry)
        now = utc_now()
        records = []
        for given in events:
            before = stored.get(given.id)
            event = Event(
                **vars(details_of(given)),
                id=given.id,
                group_id=given.group_id,
                author_id=given.author_id,
                editor_id=given.author_id,
                created_on=given.created_on or (before.created_on if before is not None else now),
                modified_on=given.created_on or (before.modified_on if before is not None else now),
                version=None,  # a load writes an event whole
            )
            records.append(EventRecord.of(event))
        repository.put_many(records)

    def write_audit(self, entries: Sequence[AuditEntry]) -> None:
        """The load's audit entries, once its sections are written (a load is many batches,
        not one transaction)."""

        AuditRepository().save(entries)

    def last_load(self) -> str | None:
        """The target id of the newest `fixture.load` entry (one bounded Query)."""

        found, _ = AuditRepository().page(None, limit=1, after=None, action="fixture.load")
        return found[0].target_id if found else None

    def write_document(self, scope: str, kind: str, doc: JsonObject) -> None:
        repository = DocumentRepository()
        # Loading the same file again changes nothing, its time included.
        if repository.get(scope, kind) != doc:
            repository.put(scope, kind, doc, modified_on=utc_now())

    def recount_comments(self, post_ids: list[str]) -> None:
        """Set each post's `comments_count` from its visible list, as stored after the load.

        Writing a post whole resets its count, and a reload may change which loaded comments are
        visible while comments from mail stay: counting what is stored is right in every case.
        A Query and an update per post, in the loader only (request paths read the kept count).
        """
        repository = CommentRepository()
        for post_id in post_ids:
            PostRecord(id=post_id).update(
                actions=[PostRecord.comments_count.set(repository.count_visible(post_id))]
            )

    def raise_counter(self, name: str, at_least: int) -> None:
        CounterRepository().raise_to(name, at_least)

    def write_connectors(
        self, connectors: Sequence[ConnectorValues], enabled: Mapping[str, bool]
    ) -> None:
        """The catalogue, and each connector switched on or off in the root group.

        A reload keeps the first load's `createdOn` (and author, when the file names none) and the
        groups' own settings.
        """

        if not connectors:
            return
        repository = ConnectorRepository()
        stored = repository.get_many(c["id"] for c in connectors)
        now = utc_now()
        records = []
        for values in connectors:
            record = ConnectorRecord(**values)
            old = stored.get(values["id"])
            record.author_id = record.author_id or (old.author_id if old else None)
            record.created_on = record.created_on or (old.created_on if old else now)
            records.append(record)
        repository.put_connectors(records)
        root_id = GroupRepository().root_id()
        if root_id is not None:
            for connector_id, on in enabled.items():
                repository.set_enabled(root_id, connector_id, on)

    def write_players(self, players: Sequence[PlayerValues]) -> None:
        PlayerRepository().put_loaded(players, utc_now())


# --- export: every record, page by page ----------------------------------------------------------

# Items a page of the export reads: memory holds one page, whatever the size of the community.
EXPORT_PAGE = 100


class FixtureExportStore:
    """Every stored record of the fixture's kinds, read one page at a time.

    A paginated Scan per table: the export is an operator's job that reads everything once, not a
    request path (those never Scan, CONTRACT §7); a Query per group or post would read the same
    items with more requests.
    """

    def groups(self) -> Iterator[Group]:
        return (g.as_group() for g in GroupRecord.scan(page_size=EXPORT_PAGE))

    def users(self) -> Iterator[User]:
        return (u.as_user() for u in UserRecord.scan(page_size=EXPORT_PAGE))

    def posts(self) -> Iterator[Post]:
        return (p.as_post() for p in PostRecord.scan(page_size=EXPORT_PAGE))

    def comments(self) -> Iterator[Comment]:
        return (c.as_comment() for c in CommentRecord.scan(page_size=EXPORT_PAGE))

    def events(self) -> Iterator[Event]:
        return (e.as_event() for e in EventRecord.scan(page_size=EXPORT_PAGE))

    def players(self) -> Iterator[Player]:
        return (p.as_player() for p in PlayerRecord.scan(page_size=EXPORT_PAGE))

    def document(self, scope: str, kind: str) -> JsonObject | None:
        return DocumentRepository().get(scope, kind)

    def connectors(self) -> Iterator[tuple[Connector, bool]]:
        """The catalogue (one Query), each with whether it is enabled in the root group."""

        repository = ConnectorRepository()
        root_id = GroupRepository().root_id()
        enabled = repository.enabled_groups()
        for connector in repository.catalogue():
            yield connector, root_id in enabled.get(connector.id, [])
