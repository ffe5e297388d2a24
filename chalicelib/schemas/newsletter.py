"""Group newsletter settings (spec "Group newsletter settings"): the disclaimer."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chalicelib.schemas.common import ApiModel, GroupRef, Record

# A disclaimer is a footer, not a page: a bound well below an item's size keeps emails readable.
DISCLAIMER_MAX_CHARS = 10_000


class NewsletterSettingsUpdate(ApiModel):
    # Required (a PUT replaces the settings); blank is a value.
    disclaimer: str = Field(max_length=DISCLAIMER_MAX_CHARS)


class NewsletterSettingsOut(Record):
    type: Literal["groupNewsletterSettings"] = "groupNewsletterSettings"
    group: GroupRef
    disclaimer: str
