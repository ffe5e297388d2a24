"""A notification subscription as the store reads it once and the rules hold it: a frozen record,
not the PynamoDB item (store/notifications.py maps one to the other).

The settings pages list a user's subscriptions with it, and the notifier reads the subscribers of a
group, post or author as it. A setting the item lacks reads as its default (`SubscriptionChange
.DEFAULTS`: no email, no screen alert, no red label), as every reader took it before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Subscription:
    user_id: str
    # group#<groupId>#<n>  post#<groupId>#<postId>#<n>  author#<authorId>#<n>  personal#<n>
    sort_key: str
    kind: str  # group | post | author | personal
    target_id: str  # the group, post, author or (personal) the user itself
    group_id: str | None  # the post's group, for post subscriptions
    notification_id: int
    email_alert_id: int
    show_screen_alert: bool
    show_red_label: bool
    modified_on: datetime | None
