"""The mail log (CONTRACT §10): one entry per mail handled, newest first."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BeforeValidator, Field, WithJsonSchema

from chalicelib.schemas.common import GuidPageQuery, PostRef, Record, UtcDateTime

MailStatus = Literal["posted", "commented", "ignored", "rejected", "failed"]
_EMPTY_OR_STATUS = WithJsonSchema({"type": "string", "enum": ["", *get_args(MailStatus)]})
_Status = Annotated[MailStatus | None, BeforeValidator(lambda v: v or None), _EMPTY_OR_STATUS]


class MailLogQuery(GuidPageQuery):
    """`?status=` lists only the entries of that outcome (CONTRACT §9); empty or absent: all."""

    status: _Status = Field(
        default=None,
        description="only the entries of this outcome: posted, commented, ignored, rejected, "
        "failed (an import to be retried, or given up)",
    )


class MailLogEntryOut(Record):
    type: Literal["mailLogEntry"] = "mailLogEntry"
    id: str
    received_on: UtcDateTime
    message_id: str | None
    from_: str | None = Field(alias="from")
    subject: str | None
    status: MailStatus
    reason: str
    post: PostRef | None
    comment_id: int | None
    # How the mail came in (CONTRACT §10, §13): a poll of the POP3 mailbox, or a push.
    via: Literal["pop3", "push"] = "pop3"
    # Whether the sender of a rejected mail was sent a notice of why (CONTRACT §9).
    notice_sent: bool = False


class MailLogPage(Record):
    offset: str | None
    entries: list[MailLogEntryOut]
