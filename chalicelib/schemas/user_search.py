"""People search (CONTRACT §10): `GET /api/v1/en_US/user/search`."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field, field_validator

from chalicelib.errors import has_surrogate
from chalicelib.sanitize import MIN_SEARCH_CHARACTERS, search_key
from chalicelib.schemas.common import ApiModel, Guid, Record, UserRef

# Longer than any alias or address worth typing; a longer `q` is a 400, not a slow search.
MAX_QUERY_CHARACTERS = 100


def _no_empty(value: object) -> object:
    return None if value in ("", "0", None) else value


class UserSearchQuery(ApiModel):
    q: str = Field(
        description="The start of an alias, of a word of it, or of an email address; "
        "case and accents are ignored; at least 2 characters",
        min_length=2,
        max_length=MAX_QUERY_CHARACTERS,
    )
    group_id: Annotated[Guid | None, BeforeValidator(_no_empty)] = Field(
        default=None, description="Only members of this group"
    )
    offset: Annotated[Guid | None, BeforeValidator(_no_empty)] = Field(
        default=None, description="Id of the last person already shown"
    )
    page_size: int = Field(default=15, ge=1, le=100)

    @field_validator("q")
    @classmethod
    def _searchable(cls, value: str) -> str:
        if "\n" in value or "\r" in value:
            raise ValueError("must be one line")
        if has_surrogate(value):
            raise ValueError("contains a lone surrogate, which is not a character")
        if len(search_key(value)) < MIN_SEARCH_CHARACTERS:
            raise ValueError(f"must have at least {MIN_SEARCH_CHARACTERS} letters, digits or signs")
        return value


class UserFound(UserRef):
    email: str


class UserSearchPage(Record):
    offset: str | None
    users: list[UserFound]
