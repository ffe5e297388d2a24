"""Helpers for notification tests: subscriptions, the sending identity, SES's sent mail in moto."""

from __future__ import annotations

import email
from datetime import UTC, datetime
from email.message import EmailMessage
from email.policy import default as default_policy
from typing import Any

from chalicelib import deps
from tests.fixtures import Community, garden_and_photos

SENDER_DOMAIN = "community.example"  # AGORA_BASE_URL's host in tests: the fallback sender
# A subscription's email_alert_id: mailed at once, or in the daily digest.
INSTANT, DIGEST = 1, 2


def ann_in_garden_and_photos(c: Community) -> Community:
    """The notification tests' scene (not loaded yet): `garden_and_photos`, and Ann, who writes
    the posts, a member of both groups."""
    garden_and_photos(c)
    c.ann = c.user("ann", {c.garden: "member", c.photos: "member"})
    return c


def garden_with_fans(c: Community, ann: str, fans: int) -> Community:
    """The outbox tests' scene (not loaded yet): the garden, Ann (`ann` there) who writes its
    posts, and `fans` members, who `load_with_fans_told_at_once` subscribes."""
    c.garden = c.group("garden")
    c.ann = c.user("ann", {c.garden: ann})
    c.fans = [c.user(f"fan-{n}", {c.garden: "member"}) for n in range(fans)]
    return c


def load_with_fans_told_at_once(c: Community) -> Community:
    """Load `garden_with_fans`'s scene; SES sends from the community's domain, and each fan is
    mailed at once about every post of the garden."""
    c.load()
    verify_sender_domain()
    for fan in c.fans:
        subscribe(fan, "group", c.garden, 1, email=INSTANT)
    return c


def email_of(c: Community, user_id: str) -> str:
    return next(u["email"] for u in c.users if u["id"] == user_id)


def verify_sender_domain(domain: str = SENDER_DOMAIN) -> None:
    from chalicelib.aws import client

    client("ses").verify_domain_identity(Domain=domain)


def subscribe(
    user_id: str,
    kind: str,
    target_id: str,
    notification_id: int,
    *,
    email: int = 0,
    screen: bool = False,
    red: bool = False,
    group_id: str | None = None,
) -> None:
    """Store a subscription as the notification upserts do (the repository, not the API)."""
    from chalicelib.store.notifications import NotificationRepository

    NotificationRepository().upsert(
        user_id,
        kind=kind,
        target_id=target_id,
        notification_id=notification_id,
        group_id=group_id,
        settings={"email_alert_id": email, "show_screen_alert": screen, "show_red_label": red},
        modified_on=datetime(2026, 1, 1, tzinfo=UTC),
    )


def sent_mail() -> list[EmailMessage]:
    """Every message moto's SES accepted, parsed."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    backend = ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
    return [
        email.message_from_string(message.raw_data, policy=default_policy)  # type: ignore[misc]
        for message in backend.sent_messages
    ]


def recipients(messages: list[EmailMessage]) -> list[str]:
    return sorted(str(m["To"].addresses[0].addr_spec) for m in messages)


def mail_to(c: Community, user_id: str) -> list[EmailMessage]:
    """The messages moto's SES accepted for one user of the community."""
    return [m for m in sent_mail() if recipients([m]) == [email_of(c, user_id)]]


def text_of(message: EmailMessage) -> str:
    return message.get_body(preferencelist=("plain",)).get_content()  # type: ignore[union-attr]


def html_of(message: EmailMessage) -> str:
    return message.get_body(preferencelist=("html",)).get_content()  # type: ignore[union-attr]


def set_group_email(group: Any, address: str, name: str) -> None:
    from chalicelib.schemas.group_email import GroupEmailUpdate

    deps.group_email_service().update(
        group, GroupEmailUpdate(email=address, name=name, newsletter_name=""), "test"
    )


def set_disclaimer(group: Any, disclaimer: str) -> None:
    from chalicelib.schemas.newsletter import NewsletterSettingsUpdate

    deps.newsletter_service().update(group, NewsletterSettingsUpdate(disclaimer=disclaimer), "test")


def group_record(group_id: str) -> Any:
    from chalicelib.store.groups import GroupRepository

    return GroupRepository().get(group_id)
