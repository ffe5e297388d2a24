"""What notifications, digests and the suppression list ask of the stores and of outgoing mail."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, ClassVar, Protocol

from chalicelib.domain.letters import Identity, Letter
from chalicelib.domain.subscriptions import Subscription
from chalicelib.domain.suppressions import Suppression


@dataclass(frozen=True)
class SubscriptionChange:
    """One subscription as a settings page sends it: a setting that is None keeps its stored
    value, or takes its default (`DEFAULTS`) on a new subscription."""

    kind: str
    target_id: str
    notification_id: int
    group_id: str | None
    modified_on: datetime
    email_alert_id: int | None = None
    show_screen_alert: bool | None = None
    show_red_label: bool | None = None

    # A new subscription: no email, no screen alert, no red label.
    DEFAULTS: ClassVar[dict[str, int | bool]] = {
        "email_alert_id": 0,
        "show_screen_alert": False,
        "show_red_label": False,
    }


class NotificationStore(Protocol):
    """The store and its fake subclass this: they save a `SubscriptionChange`, `upsert` says it
    in words."""

    def of_user(self, user_id: str, prefix: str) -> Sequence[Subscription]: ...
    def get(self, user_id: str, key: str) -> Subscription | None: ...
    def upsert(
        self,
        user_id: str,
        *,
        kind: str,
        target_id: str,
        notification_id: int,
        group_id: str | None,
        settings: dict[str, Any],
        modified_on: datetime,
    ) -> Subscription:
        change = SubscriptionChange(
            kind, target_id, notification_id, group_id, modified_on, **settings
        )
        return self.save_subscription(user_id, change)

    def save_subscription(
        self, user_id: str, change: SubscriptionChange, audit: Sequence[Any] = ()
    ) -> Subscription:
        """Add the subscription or update it; two concurrent saves cannot lose it. `audit` (the
        change's entries) in the same transaction: then every setting of `change` is given."""
        ...

    def subscription(self, user_id: str, change: SubscriptionChange) -> Subscription | None:
        """The stored subscription `change` would write (None: none yet)."""
        ...

    def stop_email(self, user_id: str, key: str, modified_on: datetime) -> bool: ...
    def stop_digest_emails(self, user_id: str, modified_on: datetime) -> bool: ...
    def digest_type(self, user_id: str) -> int | None: ...
    def set_digest_type(
        self, user_id: str, type_id: int, modified_on: datetime, audit: Sequence[Any] = ()
    ) -> None: ...


class Subscriptions(Protocol):
    def subscribers(
        self, kind: str, target_id: str, notification_id: int
    ) -> Sequence[Subscription]: ...


@dataclass(frozen=True)
class NewAlert:
    """An alert of one occurrence for one user, as the notifier writes it (store/alerts.py)."""

    user_id: str
    alert_id: str
    stored_on: datetime
    show_red_label: bool
    show_screen_alert: bool
    kind: str  # newPost | newComment
    reason: str  # the subscription that matched
    refs: dict[str, Any]  # what the alert shows, as the API shows it
    occurred_on: datetime

    def fields(self) -> dict[str, Any]:
        """What is stored under (user_id, alert_id)."""
        values = asdict(self)
        del values["user_id"], values["alert_id"]
        return values


class Alerts(Protocol):
    def add(self, alert: NewAlert) -> bool:
        """Store the alert unless it is there already."""
        ...


class DigestQueue(Protocol):
    def queue(
        self, user_id: str, occurrence_id: str, item: dict[str, Any], now: datetime
    ) -> bool: ...
    def claim_instant(self, user_id: str, occurrence_id: str, now: datetime) -> bool: ...
    def release_instant(self, user_id: str, occurrence_id: str) -> None: ...
    def record_instant(self, user_id: str, occurrence_id: str, message_id: str) -> bool:
        """False when the claim is gone (expired, or released): nothing is recorded."""
        ...


class PendingDigestItems(Protocol):
    """The items waiting for a user's daily digest; `take` settles one (False: already taken).
    (`DigestQueue` is the other side: notifications queueing items.)"""

    def pending_items(self, user_id: str, limit: int) -> Sequence[object]: ...
    def take(self, record: Any, day: str, now: datetime) -> bool: ...


class SuppressionStore(Protocol):
    """Suppressed addresses as frozen records (domain/suppressions.py)."""

    def get(self, address: str) -> Suppression | None: ...
    def suppress(
        self, address: str, reason: str, detail: str, feedback_id: str, now: datetime
    ) -> None: ...
    def clear(self, address: str, audit: Sequence[Any] = ()) -> bool: ...


class Mailer(Protocol):
    """chalicelib.mail.outgoing.OutgoingMail: `send` answers SES's message id."""

    def is_suppressed(self, address: str) -> bool: ...
    def send(self, group: Any, letter: Letter) -> str: ...


class SendDeferred(Exception):
    """The mailer found no moment to send at before its deadline (instant mail had the sending
    rate): nothing was sent, and the mail is to be sent later."""


class Identities(Protocol):
    """chalicelib.services.notify.delivery.SendingIdentities: the identity a group's letters
    carry down to the outgoing mail, and where replies by email go ("" when they are off)."""

    def of(self, group: Any) -> Identity: ...
    def reply_address(self) -> str: ...


class Fanout(Protocol):
    def send(self, bodies: list[str]) -> None: ...
