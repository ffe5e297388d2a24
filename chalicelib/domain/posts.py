"""A post as the store reads it and the rules hold it: a frozen record, not the PynamoDB item
(store/posts.py maps one to the other).

A post is written once (by mail in or a fixture) and never changed by the rules: only comment
writes move its `comments_count`, in their own transaction (store/comments.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NotRequired, TypedDict


@dataclass(frozen=True)
class Post:
    id: str
    group_id: str
    author_id: str
    title: str
    slug: str
    content: str
    created_on: datetime
    source: str  # fixture | email
    # Approved, not deleted comments (the `commentsCount` of CONTRACT §10).
    comments_count: int


class NewPost(TypedDict):
    """What a new post is stored with (mail in, fixtures): its count starts at zero."""

    id: str
    group_id: str
    author_id: str
    title: str
    slug: str
    content: NotRequired[str]
    created_on: datetime
    source: NotRequired[str]
    comments_count: NotRequired[int]
