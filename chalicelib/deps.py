"""Composition: the repositories and collaborators each service is built with.

Services take everything through their constructors (a test passes a fake, tests/support/fakes.py);
this is the one module that names the PynamoDB repositories. It imports the store inside each
factory, so a handler that never needs a table never loads its model (cold start). A repository
holds no state: one of each is kept. Services are built on each use, as before: some take settings
when built, and tests change settings between calls.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from chalicelib.clock import utc_now
from chalicelib.services.events import EventService
from chalicelib.services.groups import GroupService
from chalicelib.services.profile import ProfileService
from chalicelib.services.security import SecurityService

if TYPE_CHECKING:
    from chalicelib.store.events import EventRepository
    from chalicelib.store.groups import GroupRepository
    from chalicelib.store.login_attempts import LoginAttemptRepository
    from chalicelib.store.profile import ProfileRepository
    from chalicelib.store.users import UserRepository


# --- repositories ---------------------------------------------------------------------------------


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


# --- services -------------------------------------------------------------------------------------


def group_service() -> GroupService:
    return GroupService(groups())


def security_service() -> SecurityService:
    return SecurityService(users(), login_attempts(), groups(), utc_now)


def profile_service() -> ProfileService:
    return ProfileService(profile_items())


def event_service() -> EventService:
    return EventService(events(), users(), group_service())
