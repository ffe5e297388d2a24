"""The mail log (CONTRACT §10): one entry per mail handled, newest first."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chalicelib.schemas.common import PostRef, Record, UtcDateTime


class MailLogEntryOut(Record):
    type: Literal["mailLogEntry"] = "mailLogEntry"
    id: str
    received_on: UtcDateTime
    message_id: str | None
    from_: str | None = Field(alias="from")
    subject: str | None
    status: Literal["posted", "commented", "ignored", "rejected", "failed"]
    reason: str
    post: PostRef | None
    comment_id: int | None


class MailLogPage(Record):
    offset: str | None
    entries: list[MailLogEntryOut]
