"""In-memory repositories for the rule tests of the fast tier (tests/fast/).

Each behaves as its PynamoDB counterpart does, as far as the rules can see: the same methods, the
same answers, the same failures (tests/store/test_repository_contract.py runs one set of tests
against both). Records are plain objects with the attributes the rules read.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Unpack

from chalicelib.domain.events import Event
from chalicelib.domain.groups import Group
from chalicelib.domain.ports.content import (
    CommentStore,
    EventListing,
    EventStore,
    UnapprovedListing,
)
from chalicelib.domain.ports.notify import NotificationStore, SubscriptionChange
from chalicelib.domain.ports.people import LoginAttemptStore
from chalicelib.domain.posts import NewPost, Post
from chalicelib.domain.profile import ProfileItem, StaleStructure
from chalicelib.domain.subscriptions import Subscription
from chalicelib.domain.users import SignInAttempt, TakenAttempt, User
from chalicelib.errors import Conflict
from chalicelib.schemas.events import EventFields
from chalicelib.store.base import sort_moment
from chalicelib.store.events import AFTER_ALL_IDS, EventRecord, EventRepository, start_key_of_event
from chalicelib.store.notifications import DIGEST_EMAIL, sort_key, target_key
from chalicelib.store.posts import PostRecord


class FakeRecord:
    """Attributes as keyword arguments; `version` as PynamoDB's VersionAttribute keeps it."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"FakeRecord({self.__dict__!r})"


# --- profile structure ----------------------------------------------------------------------------


class FakeProfileRepository:
    """Sections and fields of the structure, written in all-or-nothing commits conditioned on the
    version each record was read at (a stale record fails the whole commit)."""

    def __init__(self) -> None:
        self._items: dict[str, ProfileItem] = {}
        self._section_ids = itertools.count(1)

    def load(self) -> list[ProfileItem]:
        return [self._items[key] for key in sorted(self._items)]

    def next_section_id(self) -> int:
        return next(self._section_ids)

    def commit(
        self,
        saves: Sequence[ProfileItem] = (),
        moves: Sequence[ProfileItem] = (),
        deletes: Sequence[ProfileItem] = (),
        audit: Any = (),
    ) -> None:
        for record in [*saves, *moves, *deletes]:
            stored = self._items.get(record.item_key)
            if (stored.version if stored else None) != record.version:
                raise StaleStructure()
        for record in saves:
            self._items[record.item_key] = _next_version(record)
        for record in moves:
            stored = self._items[record.item_key]
            self._items[record.item_key] = _next_version(
                dataclasses.replace(stored, position=record.position)
            )
        for record in deletes:
            del self._items[record.item_key]


def _next_version(record: ProfileItem) -> ProfileItem:
    return dataclasses.replace(record, version=(record.version or 0) + 1)


# --- sign-in --------------------------------------------------------------------------------------


class FakeUserRepository:
    def __init__(self) -> None:
        self._users: dict[str, User] = {}
        # email_lower -> id, as the store's email index finds a user (a simulated day looks up
        # thousands of senders among 10,000 members).
        self._by_email: dict[str, str] = {}

    def get(self, user_id: str) -> User | None:
        return self._users.get(user_id)

    def get_many(self, user_ids: set[str]) -> dict[str, User]:
        return {i: self._users[i] for i in user_ids if i in self._users}

    def by_email(self, email: str) -> User | None:
        return self._users.get(self._by_email.get(email.strip().lower(), ""))

    def save(self, user: User, audit: Any = ()) -> User:
        was = self._users.get(user.id)
        if was is not None and self._by_email.get(was.email_lower) == user.id:
            del self._by_email[was.email_lower]
        self._users[user.id] = user
        if user.email_lower:
            self._by_email[user.email_lower] = user.id
        return user


class FakeLoginAttemptRepository(LoginAttemptStore):
    """Attempts per account in fixed windows: at most `per_source` from one source address and
    `per_account` from all, as the DynamoDB repository counts them."""

    def __init__(self) -> None:
        self._windows: dict[str, dict[str, int]] = {}
        self._known: dict[tuple[str, str], datetime] = {}

    def take(self, attempt: SignInAttempt) -> TakenAttempt | None:
        from chalicelib.store.login_attempts import window_of

        counter = f"{attempt.email_lower}#{window_of(attempt.now, attempt.window)[0]}"
        counts = self._windows.setdefault(counter, {"total": 0})
        source_name = f"s:{attempt.source}"
        total, from_source = counts["total"], counts.get(source_name, 0)
        full = attempt.per_account is not None and total >= attempt.per_account
        if full or from_source >= attempt.per_source:
            return None
        counts["total"] += 1
        counts[source_name] = counts.get(source_name, 0) + 1
        return TakenAttempt(counter, source_name, counts[source_name])

    def forget_source(self, attempt: TakenAttempt) -> None:
        counts = self._windows.get(attempt.counter, {"total": 0})
        counts["total"] -= counts.pop(attempt.source_name, 0)

    def is_known_source(self, email_lower: str, source: str, now: datetime) -> bool:
        until = self._known.get((email_lower, source))
        return until is not None and until > now

    def remember_source(self, email_lower: str, source: str, until: datetime) -> None:
        self._known[(email_lower, source)] = until

    def end_windows(
        self, email_lower: str, now: datetime, window: timedelta, audit: Any = ()
    ) -> int:
        from chalicelib.store.login_attempts import window_of

        counter = f"{email_lower}#{window_of(now, window)[0]}"
        counted = self._windows.get(counter, {"total": 0})["total"]
        if counted > 0:
            del self._windows[counter]
        return counted


class FakeGroupRepository:
    """The groups the rules look up, and the root group's id."""

    def __init__(self, *groups: Group) -> None:
        self._groups = {g.id: g for g in groups}

    def get(self, group_id: str) -> Group | None:
        return self._groups.get(group_id)

    def get_many(self, group_ids: set[str]) -> dict[str, Group]:
        return {i: self._groups[i] for i in group_ids if i in self._groups}

    def root_id(self) -> str | None:
        roots = [g.id for g in self._groups.values() if not g.parent_id]
        return roots[0] if roots else None


# --- posts, comments, events and notification settings --------------------------------------------
#
# These hold the store's own record classes (PynamoDB models, never saved): the state they derive
# (a comment's list memberships, an event's start key) is derived by the same code as in DynamoDB.
# Every answer is a copy, as a read from DynamoDB is: changing it changes nothing stored.


def _stored(record: Any) -> Any:
    return copy.deepcopy(record)


class FakeOutbox:
    """The domain announcements each write announced, in order (the store puts them in the outbox in
    the write's transaction)."""

    def __init__(self) -> None:
        self.announcements: list[Any] = []
        # The audit entries that rode in the same writes (the store puts them in the audit log).
        self.audit: list[Any] = []

    def add(self, announcements: Any) -> None:
        from chalicelib.domain.audit import AuditEntry

        for item in announcements:
            (self.audit if isinstance(item, AuditEntry) else self.announcements).append(item)


class FakePostRepository:
    """Posts as the store keeps them (its own records, never saved); every answer is the frozen
    record the store answers (domain/posts.py)."""

    def __init__(self, outbox: FakeOutbox | None = None) -> None:
        self._posts: dict[str, PostRecord] = {}
        self.outbox = outbox or FakeOutbox()

    def get(self, post_id: str) -> Post | None:
        post = self._posts.get(post_id)
        return post.as_post() if post else None

    position = get

    def get_many(self, post_ids: set[str]) -> dict[str, Post]:
        return {i: self._posts[i].as_post() for i in post_ids if i in self._posts}

    def by_slug(self, group_id: str, slug: str) -> Post | None:
        for post in self._posts.values():
            if (post.group_id, post.slug) == (group_id, slug):
                return post.as_post()
        return None

    def slugs(self, group_id: str) -> list[str]:
        return sorted(p.slug for p in self._posts.values() if p.group_id == group_id)

    def page_newest_first(
        self, group_id: str, *, limit: int, after: Post | None, text: str | None
    ) -> list[Post]:
        ordered = sorted(
            (p for p in self._posts.values() if p.group_id == group_id),
            key=lambda p: (p.created_on, p.id),
            reverse=True,
        )
        if after is not None:
            ordered = [p for p in ordered if (p.created_on, p.id) < (after.created_on, after.id)]
        if text:
            ordered = [p for p in ordered if text in p.search_text]
        return [p.as_post() for p in ordered[:limit]]

    def insert(self, *, announcements: Sequence[object] = (), **values: Unpack[NewPost]) -> bool:
        if values["id"] in self._posts:
            return False
        self.put(**values)
        self.outbox.add(announcements)
        return True

    def put(self, **values: Unpack[NewPost]) -> Post:
        record = PostRecord(**values)
        record.refresh_index_keys()
        self._posts[record.id] = record
        return record.as_post()

    def move_count(self, post_id: str, delta: int) -> None:
        """What a comment write does to its post in the same transaction."""
        post = self._posts.get(post_id)
        if post is not None:
            post.comments_count = int(post.comments_count or 0) + delta


class FakeCommentRepository(CommentStore):
    """Comments and their moderation lists; writes conditioned on the version read, moving the
    post's `comments_count` as the visible list changes (as DynamoDB's transaction does)."""

    def __init__(self, posts: FakePostRepository | None = None) -> None:
        self.posts = posts or FakePostRepository()
        self.outbox = self.posts.outbox
        self._comments: dict[int, Any] = {}

    # --- reads ------------------------------------------------------------------------------

    def get(self, comment_id: int) -> Any:
        comment = self._comments.get(int(comment_id))
        return comment.as_comment() if comment else None

    position = get

    def count_visible(self, post_id: str) -> int:
        return sum(1 for c in self._comments.values() if c.visible_post_id == post_id)

    def visible_page(self, post_id: str, *, limit: int, after: Any) -> list[Any]:
        visible = self._members("visible_post_id", post_id)
        return _after(visible, _created, after, limit, newest_first=False)

    def deleted_page(self, group_id: str, *, limit: int, after: Any, text: str | None) -> list[Any]:
        deleted = self._members("deleted_group_id", group_id, text)
        return _after(deleted, _deleted_place, after, limit, newest_first=True)

    def unapproved(self, group_id: str, listing: UnapprovedListing) -> list[Any]:
        unapproved = self._members("unapproved_group_id", group_id, listing.text)
        place, limit, newest_first = listing.after, listing.limit, listing.newest_first
        return _after(unapproved, _created, place, limit, newest_first=newest_first)

    def reported_page(
        self, group_id: str, *, limit: int, after: Any, text: str | None
    ) -> list[Any]:
        reported = self._members("reported_group_id", group_id, text)
        return _after(reported, _reported, after, limit, newest_first=True)

    def deleted_before_in_group(
        self, group_id: str, cutoff: datetime, *, limit: int, after: Any
    ) -> list[Any]:
        old = [c for c in self._members("deleted_group_id", group_id) if c.deleted_on <= cutoff]
        return _candidates(_after(old, _deleted_on, after, limit, newest_first=False))

    def deleted_before(self, cutoff: datetime, *, limit: int, after: Any) -> list[Any]:
        old = [c for c in self._comments.values() if c.purge_bucket and c.deleted_on <= cutoff]
        # The every-group index holds only the keys.
        keys = _after(old, _deleted_on, after, limit, newest_first=False)
        return [dataclasses.replace(c, post_id=None, group_id=None) for c in _candidates(keys)]

    def _members(self, key_name: str, key: str, text: str | None = None) -> list[Any]:
        """A sparse index's members (and those whose search text holds `text`)."""
        return [
            c
            for c in self._comments.values()
            if getattr(c, key_name) == key and (not text or text in (c.search_text or ""))
        ]

    # --- writes -----------------------------------------------------------------------------

    def insert(
        self, *, author_alias: str | None = None, announcements: Any = (), **values: Any
    ) -> bool:
        from chalicelib.store.comments import CommentRecord

        if int(values["id"]) in self._comments:
            return False
        record = CommentRecord(**values)
        record.version = 1
        self._save(
            record, was_visible=False, author_alias=author_alias, announcements=announcements
        )
        return True

    def replace_if_unchanged(self, read: Any, changed: Any, *, announcements: Any = ()) -> Any:
        from chalicelib.store.comments import changed_values

        stored = self._comments.get(int(read.id))
        if stored is None or stored.version != read.version:
            return None
        if stored.as_comment().is_deleted != read.is_deleted:
            return None
        record = _stored(stored)
        for name, value in changed_values(read, changed).items():
            setattr(record, name, value)
        record.version = int(record.version or 0) + 1
        self._save(
            record, was_visible=stored.visible_post_id is not None, announcements=announcements
        )
        return record.as_comment()

    def purge_if_unchanged(self, record: Any, announcements: Any = ()) -> bool:
        stored = self._comments.get(int(record.id))
        if stored is None or stored.version != record.version or stored.deleted_on is None:
            return False
        del self._comments[int(record.id)]
        self.outbox.add(announcements)
        return True

    def purge_if_deleted_before(
        self, comment_id: int, cutoff: datetime, announcements: Any = ()
    ) -> bool:
        stored = self._comments.get(int(comment_id))
        if stored is None or stored.deleted_on is None or stored.deleted_on > cutoff:
            return False
        del self._comments[int(comment_id)]
        self.outbox.add(announcements)
        return True

    def _save(
        self,
        record: Any,
        *,
        was_visible: bool,
        author_alias: str | None = None,
        announcements: Any = (),
    ) -> None:
        record.refresh_index_keys(author_alias)
        delta = int(record.visible_post_id is not None) - int(was_visible)
        if delta:
            self.posts.move_count(record.post_id, delta)
        self._comments[int(record.id)] = _stored(record)
        self.outbox.add(announcements)


def _created(comment: Any) -> Any:
    return comment.created_on


def _candidates(comments: list[Any]) -> list[Any]:
    from chalicelib.domain.comments import PurgeCandidate

    return [PurgeCandidate(c.id, c.deleted_on, c.post_id, c.group_id) for c in comments]


def _deleted_on(comment: Any) -> Any:
    return comment.deleted_on


def _deleted_place(comment: Any) -> Any:
    """Its place in the deleted list, kept after an undelete (CONTRACT §7 offsets)."""
    return comment.deleted_on or comment.last_deleted_on  # a record's or a Comment's


def _reported(comment: Any) -> Any:
    return comment.last_reported_on


def _after(
    members: list[Any], moment: Any, after: Any, limit: int, *, newest_first: bool
) -> list[Any]:
    """An index Query's page: `members` by (moment, id), after `after`'s place in that order."""
    members = sorted(members, key=lambda c: (moment(c), int(c.id)), reverse=newest_first)
    if after is not None:
        place = (moment(after), int(after.id))
        members = [c for c in members if ((moment(c), int(c.id)) < place) == newest_first]
        members = [c for c in members if (moment(c), int(c.id)) != place]
    return [c.as_comment() for c in members[:limit]]


class FakeEventRepository(EventStore):
    """Events by group and start, and the calendar's overlap rule; an update or delete of an
    event changed since it was read is a 409 (`state`), as the store's transaction answers. It
    keeps the store's own items (never saved), whose keys the store's code derives."""

    def __init__(self, outbox: FakeOutbox | None = None) -> None:
        self._events: dict[int, EventRecord] = {}
        self._ids = itertools.count(1)
        self.outbox = outbox or FakeOutbox()

    def next_id(self) -> int:
        return next(self._ids)

    def get(self, event_id: int) -> Event | None:
        event = self._events.get(int(event_id))
        return event.as_event() if event else None

    position = get

    def get_many(self, event_ids: Iterable[int]) -> dict[int, Event]:
        return {
            int(i): self._events[int(i)].as_event() for i in event_ids if int(i) in self._events
        }

    def create(self, event: Event, *, announcements: Sequence[object] = ()) -> Event:
        if event.id in self._events:
            raise Conflict("state", event.id, "exists")
        return self._write(dataclasses.replace(event, version=1), announcements)

    def update(self, read: Event, changed: Event, *, announcements: Sequence[object] = ()) -> Event:
        self._require_unchanged(read)
        return self._write(
            dataclasses.replace(changed, version=(read.version or 0) + 1), announcements
        )

    def delete(self, event: Event, *, announcements: Sequence[object] = ()) -> None:
        self._require_unchanged(event)
        del self._events[event.id]
        self.outbox.add(announcements)

    def listed(self, group_id: str, listing: EventListing) -> list[Event]:
        upcoming, after, text = listing.upcoming, listing.after, listing.text
        moment = sort_moment(listing.moment)
        upcoming_from, expired_before = f"{moment}#{AFTER_ALL_IDS}", f"{moment}#"

        def inside(start_key: str) -> bool:
            return start_key > upcoming_from if upcoming else start_key < expired_before

        events = sorted(
            (e for e in self._events.values() if e.group_id == group_id and inside(e.start_key)),
            key=lambda e: e.start_key,
            reverse=not upcoming,
        )
        after_key = start_key_of_event(after) if after is not None else None
        if after_key is not None and inside(after_key):
            events = [
                e
                for e in events
                if (e.start_key > after_key) == upcoming and e.start_key != after_key
            ]
        if text:
            events = [e for e in events if text in (e.search_text or "")]
        return [e.as_event() for e in events[: listing.limit]]

    @staticmethod
    def overlaps(event: Event, start: datetime, end: datetime) -> bool:
        return EventRepository.overlaps(event, start, end)

    def overlapping(
        self, group_id: str, start: datetime, end: datetime, *, cap: int
    ) -> list[Event]:
        events = sorted(
            (
                e.as_event()
                for e in self._events.values()
                if e.group_id == group_id and self.overlaps(e.as_event(), start, end)
            ),
            key=start_key_of_event,
        )
        return events[:cap]

    def _require_unchanged(self, event: Event) -> None:
        stored = self._events.get(event.id)
        if stored is None or stored.version != event.version:
            raise Conflict(
                "state",
                event.id,
                "The event was changed or deleted at the same time; read it again and retry.",
            )

    def _write(self, event: Event, announcements: Sequence[object]) -> Event:
        self._events[event.id] = EventRecord.of(event)
        self.outbox.add(announcements)
        return event


def event(event_id: int, start: datetime, **values: Any) -> Event:
    """A new event as the rules make one (the store versions it as it writes it)."""
    at = values.pop("created_on", start)
    # What it says of itself and was not given: the API's defaults.
    said = {
        name: info.default
        for name, info in EventFields.model_fields.items()
        if not info.is_required()
    }
    keys = {"group_id": "g", "author_id": "ann", "editor_id": "ann", "modified_on": at}
    return Event(
        **{**said, "title": "Meet", **keys, **values},
        id=event_id,
        created_on=at,
        start_date=start,
        version=None,
    )


class FakeNotificationRepository(NotificationStore):
    """Subscriptions by user and sort key, as store/notifications.py keys them, as the frozen
    records it answers; the digest choice per user beside them."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str], Subscription] = {}
        self._digest_types: dict[str, int] = {}

    def of_user(self, user_id: str, prefix: str) -> list[Subscription]:
        return [
            self._items[(user, key)]
            for user, key in sorted(self._items)
            if user == user_id and key.startswith(prefix)
        ]

    def get(self, user_id: str, key: str) -> Subscription | None:
        return self._items.get((user_id, key))

    def subscription(self, user_id: str, change: SubscriptionChange) -> Subscription | None:
        key = sort_key(change.kind, change.target_id, change.notification_id, change.group_id)
        return self.get(user_id, key)

    def save_subscription(
        self, user_id: str, change: SubscriptionChange, audit: Any = ()
    ) -> Subscription:
        key = sort_key(change.kind, change.target_id, change.notification_id, change.group_id)
        stored = self._items.get((user_id, key))
        # A setting left None keeps its stored value or takes its default; so does the group.
        kept = {
            name: getattr(stored, name) if stored else default
            for name, default in SubscriptionChange.DEFAULTS.items()
        }
        settings = {
            name: kept[name] if getattr(change, name) is None else getattr(change, name)
            for name in kept
        }
        item = Subscription(
            user_id=user_id,
            sort_key=key,
            kind=change.kind,
            target_id=change.target_id,
            group_id=stored.group_id if change.group_id is None and stored else change.group_id,
            notification_id=change.notification_id,
            modified_on=change.modified_on,
            **settings,
        )
        self._items[(user_id, key)] = item
        return item

    def stop_email(self, user_id: str, key: str, modified_on: datetime) -> bool:
        item = self._items.get((user_id, key))
        if item is None or not item.email_alert_id:
            return False
        self._items[(user_id, key)] = dataclasses.replace(
            item, email_alert_id=0, modified_on=modified_on
        )
        return True

    def stop_digest_emails(self, user_id: str, modified_on: datetime) -> bool:
        keys = [
            k
            for (u, k), i in self._items.items()
            if u == user_id and i.email_alert_id == DIGEST_EMAIL
        ]
        return any([self.stop_email(user_id, key, modified_on) for key in keys])

    def digest_type(self, user_id: str) -> int | None:
        return self._digest_types.get(user_id) or None

    def set_digest_type(
        self, user_id: str, type_id: int, modified_on: datetime, audit: Any = ()
    ) -> None:
        self._digest_types[user_id] = type_id

    def subscribers(self, kind: str, target_id: str, notification_id: int) -> list[Subscription]:
        wanted = target_key(kind, target_id, notification_id)
        return [
            i
            for i in self._items.values()
            if target_key(i.kind, i.target_id, i.notification_id) == wanted
        ]


class FakeReferenceReader:
    """Posts, groups and users at once, from the fakes that hold them (store/refs.py)."""

    def __init__(self, posts: Any, groups: Any, users: Any) -> None:
        self.posts, self.groups, self.users = posts, groups, users

    def read(self, *, users: Any = (), groups: Any = (), posts: Any = (), events: Any = ()) -> Any:
        from chalicelib.store.refs import Refs

        return Refs(
            users=self.users.get_many({u for u in users if u}),
            groups=self.groups.get_many({g for g in groups if g}),
            posts=self.posts.get_many({p for p in posts if p}),
        )


def user(**values: Any) -> User:
    """A user record as the store answers it (domain/users.py), from its `id`: the address
    lower-cased unless given so."""
    values.setdefault("email", f"{values['id']}@example.org")
    values.setdefault("email_lower", values["email"].lower())
    values.setdefault("alias", values["id"].title())
    values.setdefault("slug", values["id"])
    return User(**values)


def group(
    group_id: str, *, parent_id: str | None = None, access: str = "public", **values: Any
) -> Group:
    """A group record as the store answers it (domain/groups.py)."""
    return Group(
        id=group_id,
        name=values.pop("name", group_id.title()),
        slug=values.pop("slug", group_id),
        parent_id=parent_id,
        access=access,
        **values,
    )
