"""Group email (spec "Group email"): the group's webmaster identity on generated emails.

The email address types live here and serve the feed settings too.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, WithJsonSchema

from chalicelib.schemas.common import ApiModel, GroupRef, Record, SingleLine, email_address

NAME_MAX = 200
EMAIL_MAX = 254


def _email(text: str) -> str:
    return email_address(text)


def _optional_email(text: str) -> str:
    return _email(text) if text else ""


def _not_blank(text: str) -> str:
    if not text:
        raise ValueError("must not be blank")
    return text


# Strings are trimmed by ApiModel before these run.
EMAIL = {"type": "string", "format": "email", "maxLength": EMAIL_MAX}
EmailText = Annotated[
    SingleLine, Field(max_length=EMAIL_MAX), AfterValidator(_email), WithJsonSchema(EMAIL)
]
OptionalEmailText = Annotated[
    SingleLine,
    Field(max_length=EMAIL_MAX),
    AfterValidator(_optional_email),
    WithJsonSchema({"anyOf": [{"type": "string", "maxLength": 0}, EMAIL]}),
]
# The document asks for a visible character (common.document_trimming), as `_not_blank` does.
NonBlankName = Annotated[
    SingleLine,
    Field(max_length=NAME_MAX, json_schema_extra={"minLength": 1}),
    AfterValidator(_not_blank),
]


class GroupEmailUpdate(ApiModel):
    # Required like every field of a replacing PUT; blank means no address of the group's own, as
    # before any save (mail then goes from AGORA_MAIL_SENDER alone): the console's form sends the
    # blank it showed when only the sender name was changed (issue 56).
    email: OptionalEmailText
    name: NonBlankName
    # Required like every field of a replacing PUT; blank means "the same as name".
    newsletter_name: SingleLine = Field(max_length=NAME_MAX)


class GroupEmailOut(Record):
    type: Literal["groupEmail"] = "groupEmail"
    group: GroupRef
    email: str
    name: str
    newsletter_name: str
