"""System pages: the home page and the private and premium landing pages of a group."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chalicelib.schemas.common import ApiModel, LongText, Record


class PageUpdate(ApiModel):
    # A PUT replaces the page: every field the spec lists is required (blank is a value).
    content: LongText


class PremiumPageUpdate(PageUpdate):
    is_enabled: bool


class HomePageOut(Record):
    type: Literal["HomePage"] = "HomePage"
    content: str = ""


class PrivateLandingPageOut(Record):
    type: Literal["PrivateLandingPage"] = "PrivateLandingPage"
    content: str = ""


class PremiumLandingPageOut(Record):
    type: Literal["PremiumLandingPage"] = "PremiumLandingPage"
    is_enabled: bool = Field(default=False)
    content: str = ""
