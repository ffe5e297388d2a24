"""Screen alerts and the red label of a user (spec "Events": notified "by a screen alert and by
the red label count")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

from chalicelib.schemas.common import ApiModel, GroupRef, PostRef, Record, UserRef, UtcDateTime


class AlertsQuery(ApiModel):
    # The id of the last alert already shown; absent, 0 or empty: from the start (CONTRACT §7).
    offset: Annotated[str | None, BeforeValidator(lambda v: None if v in ("", "0") else v)] = None
    page_size: int = Field(default=15, ge=1, le=100)


class AlertOut(Record):
    id: str
    type: Literal["alert"] = "alert"
    kind: Literal["newPost", "newComment"]
    title: str
    # The subscription that brought it, e.g. "All new group posts".
    reason: str
    group: GroupRef
    post: PostRef
    author: UserRef
    comment_id: int | None = None
    url: str
    created_on: UtcDateTime
    show_screen_alert: bool
    show_red_label: bool
    is_read: bool


class UserAlertsOut(Record):
    type: Literal["userAlerts"] = "userAlerts"
    user_id: str
    # The red label: red-label alerts stored since the user last marked them read.
    unread_count: int
    read_on: UtcDateTime | None = None
    offset: str | None = None
    alerts: list[AlertOut]
