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

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Protocol, TypeVar, cast

from chalicelib import metrics
from chalicelib.auth import Caller, Need
from chalicelib.clock import iso
from chalicelib.domain.announcements import (
    CommentCreated,
    PostCreated,
    Recorded,
    announcement_from_json,
    announcement_to_json,
)
from chalicelib.domain.comments import Comment
from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject
from chalicelib.domain.letters import Identity, Letter, MessageUnbuildable, News
from chalicelib.domain.mailboxes import SYSTEM_SCOPE, Mailbox
from chalicelib.domain.ports.content import CommentReader, PostReader
from chalicelib.domain.ports.notify import (
    Alerts,
    DigestQueue,
    Fanout,
    Identities,
    Mailer,
    NewAlert,
    Subscriptions,
)
from chalicelib.domain.ports.people import GroupReader, User, UserReader
from chalicelib.domain.posts import Post
from chalicelib.domain.subscriptions import Subscription
from chalicelib.logs import correlation_id, get_logger
from chalicelib.mail.threads import thread_ids
from chalicelib.services.group_email import KIND as GROUP_EMAIL
from chalicelib.services.links import comment_url, group_ref, post_ref, post_url, user_ref
from chalicelib.services.newsletter import KIND as NEWSLETTER
from chalicelib.services.notifications import NOTIFICATION_NAMES
from chalicelib.services.notify.emails import instant_email, unsubscribe_url

log = get_logger("notify")

INLINE_LIMIT = 25
CHUNK_SIZE = 50

INSTANT = 1
DIGEST = 2

# The domain events notifications are about.
Notified = PostCreated | CommentCreated


# --- what happened, and to whom it is told -----------------------------------------------------


@dataclass(frozen=True)
class Recipient:
    user_id: str
    email_alert_id: int = 0
    show_screen_alert: bool = False
    show_red_label: bool = False
    # The name of the subscription below (the first matched, or the one the email is sent for).
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
        # The reason goes with the subscription the email is sent for: the mail says why it
        # came with the same subscription its unsubscribe link ends.
        chosen = self if mine else other
        return replace(
            self,
            email_alert_id=email,
            reason=chosen.reason,
            subscription=chosen.subscription,
            show_screen_alert=self.show_screen_alert or other.show_screen_alert,
            show_red_label=self.show_red_label or other.show_red_label,
        )


@dataclass
class DeliveryReport:
    recipients: int = 0
    alerts: int = 0
    queued: int = 0
    emailed: int = 0
    skipped: int = 0
    failed: int = 0
    fanned_out: int = 0
    # Recipients whose email can never be built: sent to the dead-letter queue, not retried.
    dead_lettered: int = 0


# --- fan-out -----------------------------------------------------------------------------------


def chunk_body(event: Notified, recipients: list[Recipient]) -> str:
    # The correlation id of the request or mail poll that caused the event goes along, so the
    # delivery's log lines can be found from it.
    return json.dumps(
        {
            "event": announcement_to_json(event),
            "recipients": [asdict(r) for r in recipients],
            "correlationId": correlation_id(),
        }
    )


def chunk_correlation(body: str) -> str | None:
    value = json.loads(body).get("correlationId")
    return value if isinstance(value, str) else None


def parse_chunk(body: str) -> tuple[Notified, list[Recipient]]:
    data = json.loads(body)
    event = announcement_from_json(data["event"])
    if not isinstance(event, Notified):
        raise ValueError(f"a notification chunk is about a new post or comment, not {event!r}")
    return event, [Recipient(**r) for r in data["recipients"]]


class ReplyKeyMaker(Protocol):
    """Makes a recipient's reply address (emails.py `ReplyKeys`)."""

    def address(
        self, mailbox_address: str, user_id: str, post_id: str, comment_id: int | None = None
    ) -> str: ...


def not_sent(user_id: str, post_id: str, reason: str) -> bool:
    """One recipient not emailed, and why, in the log (`user`, `post`: "why did member X not get
    the notification of post Y", docs/deploy.md); answers False."""
    log.info("notification not sent", extra={"user": user_id, "post": post_id, "reason": reason})
    return False


class NotificationsFailed(RuntimeError):
    """Some recipients of an event were not told: the drain delivers the event again (those
    already told are not told twice)."""


# --- what a delivery reads once ----------------------------------------------------------------
# The post or comment a notification is about and what is told of it (the instant email's news, an
# alert's references, a digest item, the ids that thread its emails); the reads a batch of events
# shares; and each group's sending identity.


@dataclass
class Occurrence:
    """The post or comment an event is about, loaded once per delivery."""

    id: str  # post-<postId> | comment-<commentId>: the key of everything told about it
    kind: str  # newPost | newComment
    group: Group
    post: Post
    author: User | None  # None when the comment is anonymous or the account is gone
    comment: Comment | None
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

    def news(self) -> News:
        """What its instant email tells, as plain values (mail/outgoing.py renders them)."""
        return News(
            kind=self.kind,
            group_name=self.group.name,
            post_title=self.post.title,
            author_name=self.author_name,
            content_html=self.content_html,
            url=self.url,
        )

    def thread(self) -> tuple[str, ...]:
        """Our ids of the post, the comment replied to and the comment (mail/threads.py)."""
        comment = self.comment
        if comment is None:
            return thread_ids(self.post.id)
        return thread_ids(self.post.id, comment.id, comment.parent_comment_id)

    def refs(self) -> JsonObject:
        """What an alert shows, kept on it (so a page of alerts is one Query)."""

        author = user_ref(self.author).model_dump(mode="json", by_alias=True)
        if self.author is None:
            author["alias"] = author["extendedAlias"] = self.author_name
        return {
            "title": self.headline,
            "group": group_ref(self.group).model_dump(mode="json", by_alias=True),
            "post": post_ref(self.post, self.group).model_dump(mode="json", by_alias=True),
            "author": author,
            "commentId": self.comment.id if self.comment is not None else None,
            "url": self.url,
        }

    def digest_item(self, reason: str) -> JsonObject:
        return {
            "kind": self.kind,
            "groupId": self.group.id,
            "groupName": self.group.name,
            "postId": self.post.id,
            "commentId": self.comment.id if self.comment is not None else None,
            "title": self.headline,
            "url": self.url,
            "author": self.author_name,
            "occurredOn": iso(self.occurred_on),
            "reason": reason,
        }


# -----------------------------------------------------------------------------------------------
# What the notifications of one batch of events read once (the service below, jobs/outbox.py).


ValueT = TypeVar("ValueT")


class BatchReads:
    """What the notifications of one batch of events (a drain of outbox records) read once.

    A poll that posts a hundred mails into one group records a hundred events about the same
    group and author: their subscribers are read for the first and reused for the rest, and the
    drain reads the batch's posts in one BatchGetItem and hands them in here (issue 14's budget
    of DynamoDB requests per mail). Made by the drain (jobs/outbox.py) and given to the
    `NotifyService` of that batch; it lives as long as the batch, so a subscription changed
    during a batch counts from the next one on. Thread-safe.
    """

    def __init__(self, posts: Mapping[str, Post] | None = None) -> None:
        self._posts = dict(posts or {})
        self._read: dict[tuple[object, ...], object] = {}
        self._lock = threading.Lock()

    def post(self, post_id: str) -> Post | None:
        """The post as the drain read it, else None (read it from the table)."""
        return self._posts.get(post_id)

    def once(self, key: tuple[object, ...], read: Callable[[], ValueT]) -> ValueT:
        # Reading under the lock: two workers asking for the same key read it once, not twice.
        with self._lock:
            if key not in self._read:
                self._read[key] = read()
            # What `read` answered for this key: the caller's own type.
            return cast(ValueT, self._read[key])


# -----------------------------------------------------------------------------------------------
# A group's sending identity: the name its mail goes under, its own address, its disclaimer;
# and where replies by email go (the email-to-comment mailbox, while it is enabled).
#
# The services that write letters (notify, digests, mailbox alerts) look them up here and hand them
# down on the letter; chalicelib/mail/outgoing.py renders them from the values and asks nothing back.


class DocumentTexts(Protocol):
    """The settings documents' words (store/documents.py `DocumentRepository.texts`)."""

    def texts(self, scope: str, *kinds: str) -> list[dict[str, str]]: ...


class Mailboxes(Protocol):
    """The mailboxes' settings (store/mailboxes.py `MailboxRepository.get`)."""

    def get(self, scope: str) -> Mailbox | None: ...


class SendingIdentities:
    """Each group's identity and the reply address, read once per instance (a drain or a digest
    run)."""

    def __init__(self, documents: DocumentTexts, mailboxes: Mailboxes) -> None:
        self.documents = documents
        self.mailboxes = mailboxes
        self._identities: dict[str, Identity] = {}
        self._reply_address: str | None = None

    def of(self, group: Group) -> Identity:
        if group.id not in self._identities:
            # The documents as GroupEmailService and NewsletterService keep them, read here
            # without their API records: unsaved, a group's mail goes under its name, from no
            # address of its own, with no disclaimer.
            email, newsletter = self.documents.texts(group.id, GROUP_EMAIL, NEWSLETTER)
            self._identities[group.id] = Identity(
                email.get("name") or group.name,
                email.get("email", ""),
                newsletter.get("disclaimer", ""),
            )
        return self._identities[group.id]

    def reply_address(self) -> str:
        """The email-to-comment mailbox's `emailAddress` while it is enabled ("" otherwise):
        instant emails about posts and comments are answered there (replies by email)."""
        if self._reply_address is None:
            record = self.mailboxes.get(SYSTEM_SCOPE)
            enabled = record is not None and record.is_enabled
            self._reply_address = (record.email_address or "") if enabled and record else ""
        return self._reply_address


# --- the service -------------------------------------------------------------------------------


@dataclass
class NotifyService:
    notifications: Subscriptions
    users: UserReader
    groups: GroupReader
    posts: PostReader
    comments: CommentReader
    alerts: Alerts
    digests: DigestQueue
    mail: Mailer
    identities: Identities
    fanout: Fanout
    clock: Callable[[], datetime]
    # Where an announcement whose email can never be built goes, once, with its reason (the
    # notification queue's dead-letter queue); None: nowhere (logged and counted only).
    dead_letters: Fanout | None = None
    # Reply keys (CONTRACT §9): each recipient's Reply-To names them and the post or comment;
    # None: the email-to-comment mailbox's address as it is.
    reply_keys: ReplyKeyMaker | None = None
    inline_limit: int = INLINE_LIMIT
    chunk_size: int = CHUNK_SIZE
    # The batch being drained (None: every read is fresh, as for one event told alone).
    reads: BatchReads | None = None
    _root_id: str | None = field(default=None, init=False, repr=False)

    # --- the domain event handler ----------------------------------------------------------------

    def __call__(self, item: Recorded) -> None:
        """The subscriber of new posts and comments (other events pass): raises when some
        recipient was not told, so the drain delivers the event again."""
        if isinstance(item.announcement, PostCreated | CommentCreated):
            report = self.handle(item.announcement)
            if report.failed:
                raise NotificationsFailed(f"{report.failed} notification(s) failed")

    def handle(self, told: Notified | Recorded) -> DeliveryReport:
        event = told.announcement if isinstance(told, Recorded) else told
        if not isinstance(event, Notified):
            return DeliveryReport()  # other events tell nobody
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

    def recipients(self, event: object) -> list[Recipient]:
        """Everyone subscribed to this occurrence, once each, the author left out."""

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
            for subscription in self.subscribers(kind, target_id, notification_id):
                if subscription.user_id == event.author_id:
                    continue
                recipient = Recipient(
                    user_id=subscription.user_id,
                    email_alert_id=subscription.email_alert_id,
                    show_screen_alert=subscription.show_screen_alert,
                    show_red_label=subscription.show_red_label,
                    reason=NOTIFICATION_NAMES[kind][notification_id],
                    subscription=subscription.sort_key,
                )
                known = merged.get(recipient.user_id)
                merged[recipient.user_id] = known.merged(recipient) if known else recipient
        return [r for r in merged.values() if r.wants_anything]

    def subscribers(self, kind: str, target_id: str, notification_id: int) -> list[Subscription]:
        """One index Query, or none when this batch of events (a drain) read it already."""

        def read() -> list[Subscription]:
            return list(self.notifications.subscribers(kind, target_id, notification_id))

        if self.reads is None:
            return read()
        return self.reads.once(("subscribers", kind, target_id, notification_id), read)

    # --- delivery (inline, or one SQS chunk) -----------------------------------------------------

    def deliver(self, event: Notified, recipients: Iterable[Recipient]) -> DeliveryReport:
        recipients = list(recipients)
        report = DeliveryReport(recipients=len(recipients))
        if not recipients:
            return report
        # The recipients and the author in one read: the author is named in every email.
        users = self.users.get_many({r.user_id for r in recipients} | {event.author_id})
        occurrence = self.occurrence(event, users)
        if occurrence is None:
            report.skipped = len(recipients)
            for recipient in recipients:
                not_sent(recipient.user_id, event.post_id, "the post or comment is gone or hidden")
            return report
        unbuildable: list[tuple[Recipient, str]] = []
        for recipient in recipients:
            user = users.get(recipient.user_id)
            if user is None or not self.may_enter(user, occurrence.group):
                report.skipped += 1
                why = "no such user" if user is None else "may not enter the group"
                not_sent(recipient.user_id, occurrence.post.id, why)
                continue
            try:
                self._tell(user, recipient, occurrence, report)
            except MessageUnbuildable as error:
                unbuildable.append((recipient, str(error)))
            except Exception:
                # One recipient's failure must not keep the others uninformed.
                report.failed += 1
                log.exception(
                    "notification failed", extra={"user": user.id, "occurrence": occurrence.id}
                )
        if unbuildable:
            self.dead_letter(event, occurrence, unbuildable, report)
        log.info("notifications delivered", extra={"occurrence": occurrence.id, **asdict(report)})
        metrics.emit("NotificationsSent", report.emailed)
        if report.failed:
            metrics.emit("NotificationFailed", report.failed)
        return report

    def dead_letter(
        self,
        event: Notified,
        occurrence: Occurrence,
        unbuildable: list[tuple[Recipient, str]],
        report: DeliveryReport,
    ) -> None:
        """A poison announcement: sent once to the dead-letter queue (`send_dead_letter`, below).
        The recipients' claims stay, so a delivery of the same event again (another recipient's
        AWS fault) does not send it twice; when the queue refuses it (an AWS fault), the claims
        are released and the recipients count as failed: the event is delivered again."""
        chunk = chunk_body(event, [recipient for recipient, _ in unbuildable])
        try:
            send_dead_letter(
                self.dead_letters, chunk, [why for _, why in unbuildable], occurrence.id
            )
        except Exception:
            log.exception("dead letter not sent", extra={"occurrence": occurrence.id})
            for recipient, _ in unbuildable:
                self.digests.release_instant(recipient.user_id, occurrence.id)
            report.failed += len(unbuildable)
            return
        report.dead_lettered += len(unbuildable)

    def _tell(
        self, user: User, recipient: Recipient, occurrence: Occurrence, report: DeliveryReport
    ) -> None:
        now = self.clock()
        if recipient.show_alert and self.alerts.add(
            NewAlert(
                user.id,
                occurrence.id,
                stored_on=now,
                show_red_label=recipient.show_red_label,
                show_screen_alert=recipient.show_screen_alert,
                kind=occurrence.kind,
                reason=recipient.reason,
                refs=occurrence.refs(),
                occurred_on=occurrence.occurred_on,
            )
        ):
            report.alerts += 1
        if recipient.email_alert_id == DIGEST:
            if self.digests.queue(
                user.id, occurrence.id, occurrence.digest_item(recipient.reason), now
            ):
                report.queued += 1
                log.info(
                    "notification queued for the daily digest",
                    extra={"user": user.id, "post": occurrence.post.id},
                )
        elif recipient.email_alert_id == INSTANT and user.email:
            if self.send_instant(user, recipient, occurrence, now):
                report.emailed += 1
        else:
            why = "no email address" if user.email == "" else "no email wanted (alert only)"
            not_sent(user.id, occurrence.post.id, why)

    def send_instant(
        self, user: User, recipient: Recipient, occurrence: Occurrence, now: datetime
    ) -> bool:
        """One email per (user, occurrence): claimed first, released if SES fails. `now`: the
        moment the recipient is told (the claim's and the unsubscribe link's)."""
        if self.mail.is_suppressed(user.email):
            # A hard bounce or a complaint: see services/suppressions.py.
            return not_sent(user.id, occurrence.post.id, "address suppressed (bounce, complaint)")
        if not self.digests.claim_instant(user.id, occurrence.id, now):
            return not_sent(user.id, occurrence.post.id, "already sent (claimed before)")
        subject, text, body_html = instant_email(
            occurrence.news(), recipient.subscription, recipient.reason
        )
        link = recipient.subscription and unsubscribe_url(user.id, recipient.subscription, now)
        try:
            thread = occurrence.thread()
            letter = Letter(
                (user.alias, user.email),
                subject,
                text,
                body_html,
                link or None,
                thread=thread,
                reply_address=self.reply_address(user.id, occurrence) if thread else "",
                identity=self.identities.of(occurrence.group),
            )
            message_id = self.mail.send(occurrence.group, letter)
        except MessageUnbuildable:
            raise  # the claim stays: it would fail again (`dead_letter`)
        except Exception:
            self.digests.release_instant(user.id, occurrence.id)
            raise
        facts = {"user": user.id, "post": occurrence.post.id, "messageId": message_id}
        log.info("notification sent", extra=facts)
        if not self.digests.record_instant(user.id, occurrence.id, message_id):
            # The claim is gone (expired): the mail went all the same; nothing to undo.
            log.warning("notification sent after its claim was gone: not recorded", extra=facts)
        return True

    # --- helpers ---------------------------------------------------------------------------------

    def reply_address(self, user_id: str, occurrence: Occurrence) -> str:
        """The email-to-comment mailbox's address with the recipient's reply key ("" when
        replies by email are off)."""
        address = self.identities.reply_address()
        if not address or self.reply_keys is None:
            return address
        comment = occurrence.comment
        comment_id = int(comment.id) if comment is not None else None
        return self.reply_keys.address(address, user_id, str(occurrence.post.id), comment_id)

    def root_id(self) -> str | None:
        if self._root_id is None:
            self._root_id = self.groups.root_id()
        return self._root_id

    def may_enter(self, user: User, group: Group) -> bool:
        caller = Caller.of(user, self.root_id())
        return caller.has(Need.ENTER, group)

    def _user(self, user_id: str, read: Mapping[str, User]) -> User | None:
        return read[user_id] if user_id in read else self.users.get(user_id)

    def occurrence(self, event: Notified, users: Mapping[str, User]) -> Occurrence | None:
        """The post or comment as stored now; None when it is gone or hidden since. `users`:
        those read already, the event's author among them."""

        # The drain reads the posts of its batch at once (jobs/outbox.py): not one by one.
        post = (self.reads and self.reads.post(event.post_id)) or self.posts.get(event.post_id)
        group = self.groups.get(event.group_id)
        if post is None or group is None:
            return None
        comment = None
        if not isinstance(event, PostCreated):
            comment = self.comments.get(event.comment_id)
            if comment is None or comment.deleted_on is not None or not comment.is_approved:
                return None
        told = comment if comment is not None else post
        anonymous = comment is not None and comment.is_anonymous
        return Occurrence(
            id=f"comment-{comment.id}" if comment is not None else f"post-{post.id}",
            kind="newComment" if comment is not None else "newPost",
            group=group,
            post=post,
            author=None if anonymous else self._user(told.author_id, users),
            comment=comment,
            url=comment_url(group, post, int(comment.id))
            if comment is not None
            else post_url(group, post),
            occurred_on=told.created_on,
        )


# -----------------------------------------------------------------------------------------------
# Poison announcements (issue 47): a notification whose email can never be built.
#
# A mailed subject holding U+2028 was once stored as a post title; every email about that post then
# failed to build (the email package refuses the header) and the event was delivered again,
# forever. A deterministic build error (`domain.letters.MessageUnbuildable`, never an AWS fault)
# now ends here: the chunk of recipients it failed for goes, once, to the notification queue's
# dead-letter queue with its `reason`, with an error line in the log and the metric
# `NotificationDeadLettered` (the dead-letter queue's alarm calls an operator). AWS faults are not
# dead-lettered: they raise, and the event is delivered again.

MAX_REASON_CHARS = 2000


def send_dead_letter(
    queue: Fanout | None, chunk: str, reasons: Iterable[str], occurrence_id: str
) -> None:
    """Send `chunk` (`chunk_body`, above: the event and its recipients) with the build
    errors as its `reason`; raises when the queue refuses it. `queue` None: logged only."""
    body = json.loads(chunk)
    count = len(body["recipients"])
    body["reason"] = f"the email cannot be built: {'; '.join(sorted(set(reasons)))}"[
        :MAX_REASON_CHARS
    ]
    if queue is not None:
        queue.send([json.dumps(body)])
    log.error(
        "notification cannot be built; sent to the dead-letter queue, not retried",
        extra={"occurrence": occurrence_id, "recipients": count, "reason": body["reason"]},
    )
    metrics.emit("NotificationDeadLettered", count)
