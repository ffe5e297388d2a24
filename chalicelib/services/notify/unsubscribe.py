"""The one-click unsubscribe route's service (RFC 8058): what a link's token names, and turning
that subscription's email off (the token, its link and the subscription's name are emails.py's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from chalicelib.domain.ports.content import PostStore
from chalicelib.domain.ports.notify import NotificationStore, PendingDigestItems
from chalicelib.domain.ports.people import GroupStore, UserReader
from chalicelib.services.notify.emails import DIGEST, read_token, subscription_label


@dataclass(frozen=True)
class Unsubscription:
    user_id: str
    subscription: str
    # What the person reads: "All new group posts in Garden", "the daily digest".
    label: str
    # True when this request changed something (False: already off, or gone).
    changed: bool


class UnsubscribeService:
    def __init__(
        self,
        notifications: NotificationStore,
        digests: PendingDigestItems,
        groups: GroupStore,
        posts: PostStore,
        users: UserReader,
        clock: Callable[[], datetime],
    ) -> None:
        self.notifications = notifications
        self.digests = digests
        self.groups = groups
        self.posts = posts
        self.users = users
        self.clock = clock

    def describe(self, token: str) -> Unsubscription:
        """What the token would unsubscribe from (the confirmation page); changes nothing."""
        user_id, subscription = read_token(token, self.clock())
        return Unsubscription(user_id, subscription, self.label(subscription), changed=False)

    def unsubscribe(self, token: str) -> Unsubscription:
        now = self.clock()
        user_id, subscription = read_token(token, now)
        if subscription == DIGEST:
            changed = self.notifications.stop_digest_emails(user_id, now)
            for record in self.digests.pending_items(user_id, 1000):
                changed = self.digests.take(record, "unsubscribed", now) or changed
        else:
            changed = self.notifications.stop_email(user_id, subscription, now)
        return Unsubscription(user_id, subscription, self.label(subscription), changed)

    def label(self, subscription: str) -> str:
        parts = subscription.split("#")
        kind = parts[0]
        names: dict[str, str] = {}
        if kind == "group" and len(parts) == 3:
            group = self.groups.get(parts[1])
            names["group"] = group.name if group is not None else ""
        elif kind == "post" and len(parts) == 4:
            post = self.posts.get(parts[2])
            names["post"] = post.title if post is not None else ""
        elif kind == "author" and len(parts) == 3:
            author = self.users.get(parts[1])
            names["author"] = author.alias if author is not None else ""
        return subscription_label(subscription, **names)
