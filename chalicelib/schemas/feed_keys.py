"""Feed keys (CONTRACT §10): `GET`, `DELETE /api/v1/en_US/user/{userId}/feed-key`."""

from __future__ import annotations

from typing import Literal

from chalicelib.schemas.common import ApiModel, Record, UtcDateTime


class FeedKeyOut(Record):
    type: Literal["feedKey"] = "feedKey"
    user_id: str
    # Add `?key=<key>` to a group's RSS or iCalendar feed URL.
    key: str
    created_on: UtcDateTime


class FeedKeyRevoked(Record):
    type: Literal["feedKeyRevoked"] = "feedKeyRevoked"
    user_id: str
    # False when the user had no key (DELETE is idempotent).
    revoked: bool


class FeedQuery(ApiModel):
    # The user's feed key (GET /user/{userId}/feed-key): stands for sign-in on closed groups.
    key: str | None = None
