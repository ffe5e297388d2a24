"""The fixture file of `python -m chalicelib.cli load` and demo/community.json (CONTRACT §4)."""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, model_validator

from chalicelib.sanitize import clean_html
from chalicelib.schemas.common import ApiModel, Guid, LongText, UtcDateTime, rule_error
from chalicelib.schemas.events import MAX_SHORT_TEXT, EventFields, end_date_problem
from chalicelib.schemas.player import CardFields, LogCardFields, LogFields, QuestFields
from chalicelib.schemas.posts import PostFields, Source

RoleName = Literal["regular", "member", "moderator", "administrator"]

DEFAULT_PERMISSIONS: dict[str, list[RoleName]] = {
    "post": ["member", "moderator", "administrator"],
    "comment": ["regular", "member", "moderator", "administrator"],
    "commentWithoutApproval": ["member", "moderator", "administrator"],
}


class FixtureModel(ApiModel):
    # A misspelt key in a fixture is an error, not silently ignored data.
    model_config = ConfigDict(**{**ApiModel.model_config, "extra": "forbid"})


class Permissions(FixtureModel):
    post: list[RoleName] = Field(default_factory=lambda: list(DEFAULT_PERMISSIONS["post"]))
    comment: list[RoleName] = Field(default_factory=lambda: list(DEFAULT_PERMISSIONS["comment"]))
    comment_without_approval: list[RoleName] = Field(
        default_factory=lambda: list(DEFAULT_PERMISSIONS["commentWithoutApproval"])
    )


class FixtureGroup(FixtureModel):
    id: Guid
    name: str = Field(min_length=1)
    slug: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9-]*$")
    parent_id: Guid | None = None
    access: Literal["public", "private", "premium"] = "public"
    thumb_url: str | None = None
    permissions: Permissions = Field(default_factory=Permissions)


class FixtureMembership(FixtureModel):
    group_id: Guid
    role: Literal["member", "moderator", "administrator"]


class FixtureUser(FixtureModel):
    id: Guid
    alias: str = Field(min_length=1)
    email: str = Field(min_length=3, pattern=r"^[^@\s]+@[^@\s]+$")
    password: str | None = Field(default=None, min_length=1)
    # What `export` writes instead of a password: the stored slow hash (argon2), kept as it is.
    password_hash: str | None = Field(default=None, pattern=r"^\$argon2(id|i|d)\$")
    slug: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9-]*$")
    avatar_url: str | None = None
    memberships: list[FixtureMembership] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_password(self) -> FixtureUser:
        if self.password is not None and self.password_hash is not None:
            raise rule_error("passwordHash", "give password or passwordHash, not both")
        return self


class _PostKeys(FixtureModel):
    # What places a fixture's post: its first fields in the file.
    id: Guid
    group_id: Guid
    author_id: Guid


class FixturePost(PostFields, _PostKeys):
    """A post: its keys and what it says of itself (`PostFields`, in the file's order)."""

    model_config = FixtureModel.model_config


class FixtureSpamReport(FixtureModel):
    author_id: Guid
    created_on: UtcDateTime


class FixtureComment(FixtureModel):
    id: int = Field(ge=1)
    post_id: Guid
    author_id: Guid
    content: LongText = ""
    created_on: UtcDateTime
    parent_comment_id: int = Field(default=0, ge=0)
    is_approved: bool = True
    approved_on: UtcDateTime | None = None
    rating: int = 0
    votes: int = 0
    is_anonymous: bool = False
    deleted_on: UtcDateTime | None = None
    deleted_by_id: Guid | None = None
    spam_reports: list[FixtureSpamReport] = Field(default_factory=list)
    source: Source = "fixture"

    @model_validator(mode="after")
    def _deleted_needs_both(self) -> FixtureComment:
        if (self.deleted_on is None) != (self.deleted_by_id is None):
            raise rule_error("deletedById", "deletedOn and deletedById go together")
        return self


class _EventKeys(FixtureModel):
    # What places a fixture's event: its first fields in the file (a model's fields follow its
    # bases from the last one).
    id: int = Field(ge=1)
    group_id: Guid
    author_id: Guid


class FixtureEvent(EventFields, _EventKeys):
    """An event (an addition to CONTRACT §4: the demo's calendar, and what `export` writes): its
    keys, what it says of itself as the API takes it (`EventFields`: a new field of an event
    comes with it, in the file's order) and when it was made.

    Only where the API is stricter than the file has always been (line breaks in a single-line
    text, a date as a number) is the file's own check declared again, so that every file that
    loaded, and every export of what it stored, loads still."""

    model_config = FixtureModel.model_config

    title: str = Field(min_length=1, max_length=MAX_SHORT_TEXT)
    start_date: UtcDateTime
    end_date: UtcDateTime | None = None
    organizer: str = Field(default="", max_length=MAX_SHORT_TEXT)
    location: str = Field(default="", max_length=MAX_SHORT_TEXT)
    # Omitted: the time of the first load (a reload keeps it), so that no event was created, or
    # last changed, in the future (the .ics's DTSTAMP and LAST-MODIFIED).
    created_on: UtcDateTime | None = None

    @model_validator(mode="after")
    def _end_date(self) -> FixtureEvent:

        problem = end_date_problem(self.start_date, self.end_date, self.all_day)
        if problem:
            raise rule_error("endDate", problem)
        return self


class FixtureConnector(FixtureModel):
    id: Guid
    kind: Literal["chat", "crm"]
    name: str = Field(min_length=1)
    description: str = ""
    # The connector in the root group: it is enabled there when true.
    is_enabled: bool = True
    # Omitted: the root group's first administrator in the file, and the time of the first load.
    author_id: Guid | None = None
    created_on: UtcDateTime | None = None


# Quest, card and log entries use the spec's field names (schemas/player.py); texts that may be
# HTML are sanitised as they are loaded.
SafeHtml = Annotated[str, AfterValidator(clean_html)]


class FixtureCard(CardFields):
    model_config = FixtureModel.model_config


class FixtureQuest(QuestFields):
    model_config = FixtureModel.model_config
    description: SafeHtml = ""
    state_message: SafeHtml | None = None


class FixtureLogCard(LogCardFields):
    model_config = FixtureModel.model_config


class FixtureLog(LogFields):
    model_config = FixtureModel.model_config
    notification: SafeHtml | None = None
    cards: list[FixtureLogCard] = Field(default_factory=list)


class FixturePlayer(FixtureModel):
    id: Guid
    name: str = Field(min_length=1, max_length=100)
    experience: int = Field(default=0, ge=0)
    is_public_profile: bool = False
    # The spec spells this field so.
    last_log_notifation: UtcDateTime | None = None
    last_log_read: UtcDateTime | None = None
    # Omitted: the time of the load (an export gives the stored one).
    last_modified: UtcDateTime | None = None
    quests: list[FixtureQuest] = Field(default_factory=list)
    cards: list[FixtureCard] = Field(default_factory=list)
    log: list[FixtureLog] = Field(default_factory=list)


class FixtureHomePage(FixtureModel):
    """The community's home page (an addition to CONTRACT §4, like events)."""

    content: LongText = ""


def _day(value: object) -> date:
    """A day as `YYYY-MM-DD` (no time, no offset), a real one (2026-02-30 is refused)."""
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return date.fromisoformat(value)
    raise ValueError("a day as YYYY-MM-DD, such as 2026-11-21")


Day = Annotated[date, BeforeValidator(_day)]


class Fixture(FixtureModel):
    # The day the file's dates are written relative to (an addition to CONTRACT §4: the demo
    # has it): `load` moves every date by the days from it to the day of the load
    # (services/fixture_dates.py). Omitted: the dates are as written; `export` never writes it.
    dates_relative_to: Day | None = None
    groups: list[FixtureGroup] = Field(default_factory=list)
    users: list[FixtureUser] = Field(default_factory=list)
    posts: list[FixturePost] = Field(default_factory=list)
    comments: list[FixtureComment] = Field(default_factory=list)
    events: list[FixtureEvent] = Field(default_factory=list)
    connectors: list[FixtureConnector] = Field(default_factory=list)
    players: list[FixturePlayer] = Field(default_factory=list)
    # Omitted: the stored home page stays as it is.
    home_page: FixtureHomePage | None = None

    @model_validator(mode="after")
    def _connector_authors(self) -> Fixture:
        root = next((g.id for g in self.groups if g.parent_id is None), None)
        first_admin = next(
            (
                u.id
                for u in self.users
                if any(m.group_id == root and m.role == "administrator" for m in u.memberships)
            ),
            None,
        )
        for connector in self.connectors:
            if connector.author_id is None:
                connector.author_id = first_admin
        return self
