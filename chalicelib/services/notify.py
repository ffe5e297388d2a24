"""Notifications of new posts and comments (spec "Events"): who is told, and how.

A domain event (`PostCreated`, `CommentCreated`) becomes recipients: the subscribers of the group
notification (1 new posts, 2 new comments), of the post (3, new comments on it) and of the author
(8, new posts by them). The author is never told of their own post or comment; a user matched twice
is told once, with the settings merged (an instant email wins over the digest, either flag set sets
it); only users who may enter the group are told; a comment awaiting approval tells nobody.

Each recipient gets, as subscribed: an alert (screen alert, red label), an instant email through
SES from the group's email identity, or an item queued for the daily digest. Events are delivered
at least once, so every one of those writes is conditional on the occurrence: told once per
(occurrence, user). Past `inline_limit` recipients the work is fanned out through SQS in chunks.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from email.message import EmailMessage
from email.utils import formataddr
from typing import Any

from chalicelib import metrics
from chalicelib.auth import Caller, Need
from chalicelib.logs import get_logger
from chalicelib.services.domain_events import (
    CommentCreated,
    PostCreated,
    event_from_json,
    event_to_json,
)
from chalicelib.services.unsubscribe import (
    add_unsubscribe_headers,
    unsubscribe_url,
    with_unsubscribe_link,
)

log = get_logger("notify")

INLINE_LIMIT = 25
CHUNK_SIZE = 50
EXCERPT_CHARS = 300

INSTANT = 1
DIGEST = 2


# --- what happened, and to whom it is told -----------------------------------------------------


@dataclass(frozen=True)
class Recipient:
    user_id: str
    email_alert_id: int = 0
    show_screen_alert: bool = False
    show_red_label: bool = False
    # The subscription that matched (the first, in the order the event lists them).
    reason: str = ""
    # Sort key of the subscription the email is sent for: what its one-click unsubscribe stops.
    subscription: str = ""

    @property
    def wants_anything(self) -> bool:
        return self.email_alert_id in (INSTANT, DIGEST) or self.show_alert

    @property
    def show_alert(self) -> bool:
        return self.show_screen_alert or self.show_red_label

    def merged(self, other: Recipient) -> Recipient:
        # Instant beats the digest, which beats no email.
        order = {INSTANT: 2, DIGEST: 1}
        email = max(
            self.email_alert_id, other.email_alert_id, key=lambda value: order.get(value, 0)
        )
        mine = order.get(self.email_alert_id, 0) >= order.get(other.email_alert_id, 0)
        return replace(
            self,
            email_alert_id=email,
            subscription=self.subscription if mine else other.subscription,
            show_screen_alert=self.show_screen_alert or other.show_screen_alert,
            show_red_label=self.show_red_label or other.show_red_label,
        )


@dataclass
class Occurrence:
    """The post or comment an event is about, loaded once per delivery."""

    id: str  # post-<postId> | comment-<commentId>: the key of everything told about it
    kind: str  # newPost | newComment
    group: Any
    post: Any
    author: Any  # None when the comment is anonymous or the account is gone
    comment: Any
    url: str
    occurred_on: datetime

    @property
    def author_name(self) -> str:
        return self.author.alias if self.author is not None else "Someone"

    @property
    def content_html(self) -> str:
        return (self.comment.content if self.comment is not None else self.post.content) or ""

    @property
    def headline(self) -> str:
        if self.kind == "newPost":
            return self.post.title
        return f"New comment on: {self.post.title}"


@dataclass
class DeliveryReport:
    recipients: int = 0
    alerts: int = 0
    queued: int = 0
    emailed: int = 0
    skipped: int = 0
    failed: int = 0
    fanned_out: int = 0


# --- outgoing mail -----------------------------------------------------------------------------


class MessageRejected(Exception):
    """SES refused the message (typically: the sender address is not a verified identity)."""


class AddressSuppressed(Exception):
    """The recipient's address bounced for good or complained: nothing is sent to it."""


class SesMailer:
    """Sends a complete MIME message with SES (raw: our own headers go out as written)."""

    def send(self, message: EmailMessage) -> str:
        from botocore.exceptions import ClientError

        from chalicelib.aws import client
        from chalicelib.settings import get_settings

        # The configuration set publishes bounces and complaints to SNS (services/suppressions.py).
        configuration_set = get_settings().ses_configuration_set
        extra = {"ConfigurationSetName": configuration_set} if configuration_set else {}
        try:
            response = client("ses").send_raw_email(
                RawMessage={"Data": message.as_bytes()}, **extra
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "MessageRejected":
                raise MessageRejected(str(error)) from error
            raise
        return str(response["MessageId"])


@dataclass(frozen=True)
class Identity:
    name: str
    address: str  # "" when the group never saved its email
    disclaimer: str  # HTML


def fallback_address(base_url: str) -> str:
    """`noreply@<host of AGORA_BASE_URL>`: the sender when a group has no usable address."""
    from urllib.parse import urlsplit

    return f"noreply@{urlsplit(base_url).hostname or 'localhost'}"


class OutgoingMail:
    """Builds and sends Agora's own emails: group identity, disclaimer, automatic-mail headers."""

    def __init__(
        self,
        mailer: Any,
        identity_of: Callable[[Any], Identity],
        fallback: str,
        is_suppressed: Callable[[str], bool] = lambda address: False,
    ) -> None:
        self.mailer = mailer
        self.identity_of = identity_of
        self.fallback = fallback
        self.is_suppressed = is_suppressed
        self._identities: dict[str, Identity] = {}

    @classmethod
    def default(cls) -> OutgoingMail:
        from chalicelib.clock import utc_now
        from chalicelib.services.group_email import GroupEmailService
        from chalicelib.services.newsletter import NewsletterService
        from chalicelib.settings import get_settings
        from chalicelib.store.documents import DocumentRepository
        from chalicelib.store.suppressions import SuppressionRepository

        documents = DocumentRepository()
        group_email = GroupEmailService(documents, utc_now)
        newsletter = NewsletterService(documents, utc_now)

        def identity_of(group: Any) -> Identity:
            found = group_email.get(group)
            return Identity(found.name, found.email, newsletter.get(group).disclaimer)

        return cls(
            SesMailer(),
            identity_of,
            fallback_address(get_settings().public_base_url),
            SuppressionRepository().is_suppressed,
        )

    def identity(self, group: Any) -> Identity:
        if group.id not in self._identities:
            self._identities[group.id] = self.identity_of(group)
        return self._identities[group.id]

    def send(
        self,
        group: Any,
        to: tuple[str, str],
        subject: str,
        text: str,
        body_html: str,
        *,
        unsubscribe_url: str | None = None,
    ) -> str:
        """Send from the group's identity with its disclaimer appended; answers the message id.

        `unsubscribe_url` adds RFC 8058 one-click unsubscribe headers and a visible link.

        An address SES will not send from (not verified) is replaced by the fallback sender, with
        the group's address as Reply-To, so the email still goes out under the group's name.
        """
        from chalicelib.sanitize import html_to_text

        if self.is_suppressed(to[1]):
            raise AddressSuppressed(to[1])
        identity = self.identity(group)
        if unsubscribe_url:
            text, body_html = with_unsubscribe_link(text, body_html, unsubscribe_url)
        if identity.disclaimer:
            text = f"{text}\n\n-- \n{html_to_text(identity.disclaimer)}"
            body_html = f'{body_html}<hr><div class="disclaimer">{identity.disclaimer}</div>'
        sender = identity.address or self.fallback
        message = self._message(identity.name, sender, None, to, subject, text, body_html)
        add_unsubscribe_headers(message, unsubscribe_url)
        try:
            return self.mailer.send(message)
        except MessageRejected:
            if sender == self.fallback:
                raise
            log.warning(
                "group address refused; sending from the fallback", extra={"group": group.id}
            )
        message = self._message(identity.name, self.fallback, sender, to, subject, text, body_html)
        add_unsubscribe_headers(message, unsubscribe_url)
        return self.mailer.send(message)

    @staticmethod
    def _message(
        name: str,
        sender: str,
        reply_to: str | None,
        to: tuple[str, str],
        subject: str,
        text: str,
        body_html: str,
    ) -> EmailMessage:
        message = EmailMessage()
        message["From"] = formataddr((name, sender))
        if reply_to:
            message["Reply-To"] = formataddr((name, reply_to))
        message["To"] = formataddr(to)
        message["Subject"] = subject
        # RFC 3834: automatic mail. Agora's mail-in ignores it, so a notification that lands in a
        # connector mailbox never becomes a post; Exchange is asked not to auto-reply to it.
        message["Auto-Submitted"] = "auto-generated"
        message["X-Auto-Response-Suppress"] = "All"
        # Quoted-printable keeps the message 7-bit, as SES asks of raw messages.
        message.set_content(text, cte="quoted-printable")
        message.add_alternative(
            f"<html><body>{body_html}</body></html>", subtype="html", cte="quoted-printable"
        )
        return message


# --- fan-out -----------------------------------------------------------------------------------


class SqsFanout:
    """Chunks of recipients, through the queue named by AGORA_NOTIFY_QUEUE (or `queue_name`)."""

    def __init__(self, queue_name: str | None = None) -> None:
        from chalicelib.settings import get_settings

        self.queue_name = queue_name or get_settings().notify_queue

    def send(self, bodies: list[str]) -> None:
        from chalicelib.aws import client

        sqs = client("sqs")
        queue_url = sqs.get_queue_url(QueueName=self.queue_name)["QueueUrl"]
        for start in range(0, len(bodies), 10):
            batch = bodies[start : start + 10]
            response = sqs.send_message_batch(
                QueueUrl=queue_url,
                Entries=[{"Id": str(i), "MessageBody": body} for i, body in enumerate(batch)],
            )
            if response.get("Failed"):
                raise RuntimeError(f"SQS refused {len(response['Failed'])} notification chunk(s)")


def chunk_body(event: Any, recipients: list[Recipient]) -> str:
    from chalicelib.logs import correlation_id

    # The correlation id of the request or mail poll that caused the event goes along, so the
    # delivery's log lines can be found from it.
    return json.dumps(
        {
            "event": event_to_json(event),
            "recipients": [asdict(r) for r in recipients],
            "correlationId": correlation_id(),
        }
    )


def chunk_correlation(body: str) -> str | None:
    value = json.loads(body).get("correlationId")
    return value if isinstance(value, str) else None


def parse_chunk(body: str) -> tuple[Any, list[Recipient]]:
    data = json.loads(body)
    return event_from_json(data["event"]), [Recipient(**r) for r in data["recipients"]]


# --- the service -------------------------------------------------------------------------------


@dataclass
class NotifyService:
    notifications: Any
    users: Any
    groups: Any
    posts: Any
    comments: Any
    alerts: Any
    digests: Any
    mail: Any
    fanout: Any
    clock: Callable[[], datetime]
    inline_limit: int = INLINE_LIMIT
    chunk_size: int = CHUNK_SIZE
    _root_id: Any = field(default=None, init=False, repr=False)

    @classmethod
    def default(cls, **overrides: Any) -> NotifyService:
        from chalicelib.clock import utc_now
        from chalicelib.store.alerts import AlertRepository
        from chalicelib.store.comments import CommentRepository
        from chalicelib.store.digests import DigestRepository
        from chalicelib.store.groups import GroupRepository
        from chalicelib.store.notifications import NotificationRepository
        from chalicelib.store.posts import PostRepository
        from chalicelib.store.users import UserRepository

        values: dict[str, Any] = {
            "notifications": NotificationRepository(),
            "users": UserRepository(),
            "groups": GroupRepository(),
            "posts": PostRepository(),
            "comments": CommentRepository(),
            "alerts": AlertRepository(),
            "digests": DigestRepository(),
            "mail": None,
            "fanout": None,
            "clock": utc_now,
        }
        values.update(overrides)
        # Made only when used: most events have no recipient at all.
        values["mail"] = values["mail"] or _Lazy(OutgoingMail.default)
        values["fanout"] = values["fanout"] or SqsFanout()
        return cls(**values)

    # --- the domain event handler ----------------------------------------------------------------

    def handle(self, event: Any) -> DeliveryReport:
        recipients = self.recipients(event)
        if len(recipients) <= self.inline_limit:
            return self.deliver(event, recipients)
        chunks = [
            recipients[start : start + self.chunk_size]
            for start in range(0, len(recipients), self.chunk_size)
        ]
        self.fanout.send([chunk_body(event, chunk) for chunk in chunks])
        log.info("notifications fanned out", extra={"recipients": len(recipients)})
        return DeliveryReport(recipients=len(recipients), fanned_out=len(chunks))

    def recipients(self, event: Any) -> list[Recipient]:
        """Everyone subscribed to this occurrence, once each, the author left out."""
        from chalicelib.services.notifications import NOTIFICATION_NAMES

        if isinstance(event, PostCreated):
            wanted = [("author", event.author_id, 8), ("group", event.group_id, 1)]
        elif isinstance(event, CommentCreated):
            if not event.is_approved:
                return []  # not visible yet; approval is not an event (yet)
            wanted = [("post", event.post_id, 3), ("group", event.group_id, 2)]
        else:
            return []
        merged: dict[str, Recipient] = {}
        for kind, target_id, notification_id in wanted:
            for subscription in self.notifications.subscribers(kind, target_id, notification_id):
                if subscription.user_id == event.author_id:
                    continue
                recipient = Recipient(
                    user_id=subscription.user_id,
                    email_alert_id=int(subscription.email_alert_id or 0),
                    show_screen_alert=bool(subscription.show_screen_alert),
                    show_red_label=bool(subscription.show_red_label),
                    reason=NOTIFICATION_NAMES[kind][notification_id],
                    subscription=str(subscription.sort_key),
                )
                known = merged.get(recipient.user_id)
                merged[recipient.user_id] = known.merged(recipient) if known else recipient
        return [r for r in merged.values() if r.wants_anything]

    # --- delivery (inline, or one SQS chunk) -----------------------------------------------------

    def deliver(self, event: Any, recipients: Iterable[Recipient]) -> DeliveryReport:
        recipients = list(recipients)
        report = DeliveryReport(recipients=len(recipients))
        if not recipients:
            return report
        occurrence = self.occurrence(event)
        if occurrence is None:
            report.skipped = len(recipients)
            return report
        users = self.users.get_many({r.user_id for r in recipients})
        for recipient in recipients:
            user = users.get(recipient.user_id)
            if user is None or not self.may_enter(user, occurrence.group):
                report.skipped += 1
                continue
            try:
                self._tell(user, recipient, occurrence, report)
            except Exception:
                # One recipient's failure must not keep the others uninformed.
                report.failed += 1
                log.exception(
                    "notification failed", extra={"user": user.id, "occurrence": occurrence.id}
                )
        log.info("notifications delivered", extra={"occurrence": occurrence.id, **asdict(report)})
        metrics.emit("NotificationsSent", report.emailed)
        return report

    def _tell(
        self, user: Any, recipient: Recipient, occurrence: Occurrence, report: DeliveryReport
    ) -> None:
        now = self.clock()
        if recipient.show_alert and self.alerts.add(
            user.id,
            occurrence.id,
            stored_on=now,
            show_red_label=recipient.show_red_label,
            show_screen_alert=recipient.show_screen_alert,
            kind=occurrence.kind,
            reason=recipient.reason,
            refs=self.refs(occurrence),
            occurred_on=occurrence.occurred_on,
        ):
            report.alerts += 1
        if recipient.email_alert_id == DIGEST:
            if self.digests.queue(
                user.id, occurrence.id, self.digest_item(occurrence, recipient), now
            ):
                report.queued += 1
        elif recipient.email_alert_id == INSTANT and user.email:
            if self.send_instant(user, recipient, occurrence):
                report.emailed += 1

    def send_instant(self, user: Any, recipient: Recipient, occurrence: Occurrence) -> bool:
        """One email per (user, occurrence): claimed first, released if SES fails."""
        if self.mail.is_suppressed(user.email):
            return False  # a hard bounce or a complaint: see services/suppressions.py
        if not self.digests.claim_instant(user.id, occurrence.id, self.clock()):
            return False
        subject, text, body_html = instant_email(occurrence, recipient)
        link = recipient.subscription and unsubscribe_url(
            user.id, recipient.subscription, self.clock()
        )
        try:
            message_id = self.mail.send(
                occurrence.group,
                (user.alias, user.email),
                subject,
                text,
                body_html,
                unsubscribe_url=link or None,
            )
        except Exception:
            self.digests.release_instant(user.id, occurrence.id)
            raise
        self.digests.record_instant(user.id, occurrence.id, message_id)
        return True

    # --- helpers ---------------------------------------------------------------------------------

    def root_id(self) -> str | None:
        if self._root_id is None:
            self._root_id = self.groups.root_id()
        return self._root_id

    def may_enter(self, user: Any, group: Any) -> bool:
        caller = Caller.of(user, self.root_id())
        return caller.has(Need.ENTER, group)

    def occurrence(self, event: Any) -> Occurrence | None:
        """The post or comment as stored now; None when it is gone or hidden since."""
        from chalicelib.services.links import comment_url, post_url

        post = self.posts.get(event.post_id)
        group = self.groups.get(event.group_id)
        if post is None or group is None:
            return None
        if isinstance(event, PostCreated):
            author = self.users.get(post.author_id)
            return Occurrence(
                id=f"post-{post.id}",
                kind="newPost",
                group=group,
                post=post,
                author=author,
                comment=None,
                url=post_url(group, post),
                occurred_on=post.created_on,
            )
        comment = self.comments.get(event.comment_id)
        if comment is None or comment.deleted_on is not None or not comment.is_approved:
            return None
        author = None if comment.is_anonymous else self.users.get(comment.author_id)
        return Occurrence(
            id=f"comment-{comment.id}",
            kind="newComment",
            group=group,
            post=post,
            author=author,
            comment=comment,
            url=comment_url(group, post, int(comment.id)),
            occurred_on=comment.created_on,
        )

    @staticmethod
    def refs(occurrence: Occurrence) -> dict[str, Any]:
        """What an alert shows, kept on it (so a page of alerts is one Query)."""
        from chalicelib.services.links import group_ref, post_ref, user_ref

        author = user_ref(occurrence.author).model_dump(mode="json", by_alias=True)
        if occurrence.author is None:
            author["alias"] = author["extendedAlias"] = occurrence.author_name
        return {
            "title": occurrence.headline,
            "group": group_ref(occurrence.group).model_dump(mode="json", by_alias=True),
            "post": post_ref(occurrence.post, occurrence.group).model_dump(
                mode="json", by_alias=True
            ),
            "author": author,
            "commentId": int(occurrence.comment.id) if occurrence.comment is not None else None,
            "url": occurrence.url,
        }

    @staticmethod
    def digest_item(occurrence: Occurrence, recipient: Recipient) -> dict[str, Any]:
        from chalicelib.clock import iso

        return {
            "kind": occurrence.kind,
            "groupId": occurrence.group.id,
            "groupName": occurrence.group.name,
            "postId": occurrence.post.id,
            "commentId": int(occurrence.comment.id) if occurrence.comment is not None else None,
            "title": occurrence.headline,
            "url": occurrence.url,
            "author": occurrence.author_name,
            "occurredOn": iso(occurrence.occurred_on),
            "reason": recipient.reason,
        }


class _Lazy:
    """Builds the wrapped object on first use."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._made: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._made is None:
            self._made = self._factory()
        return getattr(self._made, name)


def excerpt(markup: str, limit: int = EXCERPT_CHARS) -> str:
    from chalicelib.sanitize import html_to_text

    text = " ".join(html_to_text(markup).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def instant_email(occurrence: Occurrence, recipient: Recipient) -> tuple[str, str, str]:
    """Subject, text and HTML of the instant email: title, link, a short excerpt."""
    group, post = occurrence.group, occurrence.post
    if occurrence.kind == "newPost":
        intro = f"{occurrence.author_name} posted in {group.name}:"
    else:
        intro = f"{occurrence.author_name} commented on “{post.title}” in {group.name}:"
    summary = excerpt(occurrence.content_html)
    why = f"You receive this email because you follow “{recipient.reason}”."
    subject = f"[{group.name}] {occurrence.headline}"
    text = f"{intro}\n\n{occurrence.headline}\n{occurrence.url}\n\n{summary}\n\n{why}"
    e = html.escape
    body_html = (
        f"<p>{e(intro)}</p>"
        f'<h2><a href="{e(occurrence.url)}">{e(occurrence.headline)}</a></h2>'
        f"<p>{e(summary)}</p>"
        f'<p><a href="{e(occurrence.url)}">{e(occurrence.url)}</a></p>'
        f"<p><small>{e(why)}</small></p>"
    )
    return subject, text, body_html


def notify_of_new_content(event: Any) -> None:
    """The domain event handler (registered in `chalicelib.deps.domain_events`): new posts and
    comments tell their subscribers."""
    if isinstance(event, PostCreated | CommentCreated):
        NotifyService.default().handle(event)
