"""Post comments (spec "Post comment"), as listed and moderated."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_serializer

from chalicelib.schemas.common import ApiModel, PostRef, Record, UserRef, UtcDateTime


class SpamReportOut(ApiModel):
    created_on: UtcDateTime
    author: UserRef


class CommentOut(Record):
    id: int
    type: Literal["comment", "commentSpamReport"] = "comment"
    created_on: UtcDateTime
    author: UserRef
    deleted_on: UtcDateTime | None = None
    deleted_by: UserRef | None = None
    approved_on: UtcDateTime | None = None
    is_approved: bool
    post: PostRef
    content: str
    url: str
    rating: int = 0
    votes: int = 0
    is_anonymous: bool = False
    parent_comment_id: int = 0
    spam_reports: int = 0
    # Only in `commentSpamReport` records.
    reports: list[SpamReportOut] | None = None
    held_because: str | None = Field(
        default=None,
        description=(
            "Response only: why a comment that came by email waits for approval when its sender"
            " was not verified (no DKIM signature of the sender's domain counted, in the"
            " verifier's words); null otherwise."
        ),
        json_schema_extra={"readOnly": True},
    )

    # Unannotated return: the OpenAPI schema stays the model's own rather than a bare object.
    @model_serializer(mode="wrap")
    def _reports_only_in_spam_records(self, serialize: Any):
        data = serialize(self)
        if self.type != "commentSpamReport":
            data.pop("reports", None)
        return data


class CommentPage(Record):
    offset: int | None
    comments: list[CommentOut]
