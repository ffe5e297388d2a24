"""The store's repositories, each made once on first use and kept: a repository holds no state.
Each factory imports its store module inside, so a handler that never needs a table never loads
its model (cold start: the store at the top would add about 340 ms to `import app`, measured by
`python -m bench.hidden_imports --cost chalicelib.store.base`). `chalicelib.deps` builds the services with them."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chalicelib.store.alerts import AlertRepository
    from chalicelib.store.audit import AuditRepository
    from chalicelib.store.comments import CommentRepository
    from chalicelib.store.connectors import ConnectorRepository
    from chalicelib.store.counters import CounterRepository, SlotClock
    from chalicelib.store.documents import DocumentRepository
    from chalicelib.store.events import EventRepository
    from chalicelib.store.feed_keys import FeedKeyRepository
    from chalicelib.store.fixture import FixtureExportStore, FixtureStore
    from chalicelib.store.groups import GroupRepository
    from chalicelib.store.login_attempts import LoginAttemptRepository
    from chalicelib.store.mail import MailRepository
    from chalicelib.store.mailboxes import MailboxRepository
    from chalicelib.store.notifications import DigestRepository, NotificationRepository
    from chalicelib.store.outbox import Outbox
    from chalicelib.store.player import PlayerRepository
    from chalicelib.store.posts import PostRepository
    from chalicelib.store.profile import ProfileRepository
    from chalicelib.store.refs import ReferenceReader
    from chalicelib.store.suppressions import SuppressionRepository
    from chalicelib.store.user_search import SearchIndex
    from chalicelib.store.users import UserRepository


@functools.cache
def events() -> EventRepository:
    from chalicelib.store.events import EventRepository

    return EventRepository()


@functools.cache
def groups() -> GroupRepository:
    from chalicelib.store.groups import GroupRepository

    return GroupRepository()


@functools.cache
def users() -> UserRepository:
    from chalicelib.store.users import UserRepository

    return UserRepository()


@functools.cache
def login_attempts() -> LoginAttemptRepository:
    from chalicelib.store.login_attempts import LoginAttemptRepository

    return LoginAttemptRepository()


@functools.cache
def profile_items() -> ProfileRepository:
    from chalicelib.store.profile import ProfileRepository

    return ProfileRepository()


@functools.cache
def alerts() -> AlertRepository:
    from chalicelib.store.alerts import AlertRepository

    return AlertRepository()


@functools.cache
def documents() -> DocumentRepository:
    from chalicelib.store.documents import DocumentRepository

    return DocumentRepository()


@functools.cache
def feed_keys() -> FeedKeyRepository:
    from chalicelib.store.feed_keys import FeedKeyRepository

    return FeedKeyRepository()


@functools.cache
def mail() -> MailRepository:
    from chalicelib.store.mail import MailRepository

    return MailRepository()


@functools.cache
def players() -> PlayerRepository:
    from chalicelib.store.player import PlayerRepository

    return PlayerRepository()


@functools.cache
def posts() -> PostRepository:
    from chalicelib.store.posts import PostRepository

    return PostRepository()


@functools.cache
def refs() -> ReferenceReader:
    from chalicelib.store.refs import ReferenceReader

    return ReferenceReader()


@functools.cache
def comments() -> CommentRepository:
    from chalicelib.store.comments import CommentRepository

    return CommentRepository()


@functools.cache
def counters() -> CounterRepository:
    from chalicelib.store.counters import CounterRepository

    return CounterRepository()


@functools.cache
def slot_clock() -> SlotClock:
    from chalicelib.store.counters import SlotClock

    return SlotClock()


@functools.cache
def notifications() -> NotificationRepository:
    from chalicelib.store.notifications import NotificationRepository

    return NotificationRepository()


@functools.cache
def digests() -> DigestRepository:
    from chalicelib.store.notifications import DigestRepository

    return DigestRepository()


@functools.cache
def suppressions() -> SuppressionRepository:
    from chalicelib.store.suppressions import SuppressionRepository

    return SuppressionRepository()


@functools.cache
def search_index() -> SearchIndex:
    from chalicelib.store.user_search import SearchIndex

    return SearchIndex()


@functools.cache
def connectors() -> ConnectorRepository:
    from chalicelib.store.connectors import ConnectorRepository

    return ConnectorRepository()


@functools.cache
def mailboxes() -> MailboxRepository:
    from chalicelib.store.mailboxes import MailboxRepository

    return MailboxRepository()


@functools.cache
def fixture_store() -> FixtureStore:
    from chalicelib.store.fixture import FixtureStore

    return FixtureStore()


@functools.cache
def fixture_export_store() -> FixtureExportStore:
    from chalicelib.store.fixture import FixtureExportStore

    return FixtureExportStore()


@functools.cache
def outbox() -> Outbox:
    from chalicelib.store.outbox import Outbox

    return Outbox()


@functools.cache
def audit() -> AuditRepository:
    from chalicelib.store.audit import AuditRepository

    return AuditRepository()
