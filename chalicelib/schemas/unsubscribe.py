"""One-click unsubscribe (RFC 8058): the answer of the POST."""

from __future__ import annotations

from typing import Literal

from chalicelib.schemas.common import ApiModel, Record


class UnsubscribeOut(Record):
    type: Literal["unsubscription"] = "unsubscription"
    # What was unsubscribed from, in words ("All new group posts in Garden").
    subscription: str
    # False when it was off already: the POST is idempotent.
    changed: bool


class UnsubscribeQuery(ApiModel):
    # The signed token of the email's List-Unsubscribe URL.
    token: str = ""
