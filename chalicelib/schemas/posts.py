"""Posts (CONTRACT §10)."""

from __future__ import annotations

from typing import Literal

from chalicelib.schemas.common import GroupRef, Record, UserRef, UtcDateTime


class PostOut(Record):
    type: Literal["post"] = "post"
    id: str
    title: str
    slug: str
    content: str
    url: str
    group: GroupRef
    author: UserRef
    created_on: UtcDateTime
    source: Literal["fixture", "email"]
    comments_count: int


class PostPage(Record):
    offset: str | None
    posts: list[PostOut]
