"""References of a record or a page, read in one BatchGetItem across tables.

A page of comments names posts, groups and people; a BatchGetItem may ask several tables at once
(up to 100 keys), so they cost one request rather than one per table (chalicelib.store.base).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chalicelib.domain.events import Event
from chalicelib.domain.groups import Group
from chalicelib.domain.posts import Post
from chalicelib.domain.users import User
from chalicelib.store.base import read_many
from chalicelib.store.events import EventRecord
from chalicelib.store.groups import GroupRecord
from chalicelib.store.posts import PostRecord
from chalicelib.store.users import UserRecord

if TYPE_CHECKING:
    from pynamodb.models import Model


@dataclass
class Refs:
    """What a record or page names, by id: people, groups, posts, events."""

    users: dict[str, User] = field(default_factory=dict)
    groups: dict[str, Group] = field(default_factory=dict)
    posts: dict[str, Post] = field(default_factory=dict)
    events: dict[int, Event] = field(default_factory=dict)


class ReferenceReader:
    """One BatchGetItem (or none, from memory) for everything a record or a page names."""

    def read(
        self,
        *,
        users: Iterable[str | None] = (),
        groups: Iterable[str | None] = (),
        posts: Iterable[str | None] = (),
        events: Iterable[int | None] = (),
    ) -> Refs:
        asked: dict[type[Model], set[Hashable]] = {
            UserRecord: {u for u in users if u},
            GroupRecord: {g for g in groups if g},
            PostRecord: {p for p in posts if p},
            EventRecord: {int(e) for e in events if e is not None},
        }
        found = read_many({model: keys for model, keys in asked.items() if keys})
        return Refs(
            users={k: u.as_user() for k, u in found.get(UserRecord, {}).items()},
            groups={k: g.as_group() for k, g in found.get(GroupRecord, {}).items()},
            posts={key: post.as_post() for key, post in found.get(PostRecord, {}).items()},
            events={key: event.as_event() for key, event in found.get(EventRecord, {}).items()},
        )
