"""Posts (CONTRACT §10)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chalicelib.schemas.common import ApiModel, GroupRef, LongText, Record, UserRef, UtcDateTime

# Where a post or comment came from: a fixture, or mail in (CONTRACT §10 `source`). Optional in
# the file, `fixture` when left out; `export` writes it for mailed ones only, so `load` keeps it.
Source = Literal["fixture", "email"]


class PostFields(ApiModel):
    """What a post says of itself, as a fixture file gives it (mail in makes the same of a mail):
    the one declaration of each field's JSON name, default and check. A fixture's post is these
    and its keys (schemas/fixture.py `FixturePost`), and an answer shows those the record holds
    (services/posts.py): a new field is declared here, in `PostOut` and in the record, and
    tests/services/test_event_fields.py holds the rest to them."""

    title: str = Field(min_length=1)
    # Omitted: made from the title, unique in its group.
    slug: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]*$")
    content: LongText = ""
    created_on: UtcDateTime
    source: Source = "fixture"


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
