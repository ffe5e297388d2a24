"""The daily digest: each user with queued items gets one email per day, and no item twice.

For each user the index of pending items names: claim the user's day (conditional put: a second
run the same day, or a concurrent one, skips the user), take each item (conditional update: an item
already taken by another digest is left out), send, record. If SES fails, the items are put back
and the day released, so the next run sends them; a crash between taking and sending loses that
digest rather than ever sending an item twice.

`Summary Daily digest` lists titles and links; `Full Daily digest` adds each post's or comment's
content as it is when the digest is sent. The digest is sent from the root group's email identity,
with its disclaimer.
"""

from __future__ import annotations

import html
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, TypedDict

from chalicelib.auth import Caller, Need
from chalicelib.domain.letters import Letter
from chalicelib.domain.ports.notify import Identities, Mailer, SendDeferred
from chalicelib.logs import get_logger
from chalicelib.services.notifications import DIGEST_NAMES
from chalicelib.services.notify.emails import (
    DIGEST,
    HEADING,
    LINK,
    MUTED,
    reason_paragraph,
    shown_content,
    subscription_label,
    unsubscribe_url,
)

if TYPE_CHECKING:
    from chalicelib.domain.ports.people import User
    from chalicelib.store.comments import CommentRepository
    from chalicelib.store.groups import GroupRepository
    from chalicelib.store.notifications import (
        DigestRecord,
        DigestRepository,
        NotificationRepository,
    )
    from chalicelib.store.posts import PostRepository
    from chalicelib.store.users import UserRepository

log = get_logger("digests")

# Items beyond this wait for the next day's digest.
MAX_ITEMS = 200
# Users per batch of the fan-out (one SQS message): about 15 s of a worker's sending.
BATCH_SIZE = 100
SUMMARY, FULL = 1, 2


@dataclass
class DigestRun:
    sent: int = 0
    skipped: int = 0
    failed: int = 0
    stopped_early: bool = False
    # One line per user whose digest could not be sent (the CLI prints them, exit 1).
    failures: list[str] = field(default_factory=list)
    # The users a run stopped before (their items wait; a fan-out worker queues them again).
    left: list[str] = field(default_factory=list)

    def add(self, other: DigestRun) -> None:
        self.sent += other.sent
        self.skipped += other.skipped
        self.failed += other.failed
        self.stopped_early = self.stopped_early or other.stopped_early
        self.failures += other.failures
        self.left += other.left


class DigestItem(TypedDict):
    """A queued item as services/notify/delivery.py writes it (`Occurrence.digest_item`)."""

    kind: str
    groupId: str
    groupName: str
    postId: str
    commentId: int | None
    title: str
    url: str
    author: str
    occurredOn: str
    reason: str


@dataclass
class DigestEntry:
    item: DigestItem
    content_html: str = ""


class DigestService:
    def __init__(
        self,
        *,
        digests: DigestRepository,
        notifications: NotificationRepository,
        users: UserRepository,
        groups: GroupRepository,
        posts: PostRepository,
        comments: CommentRepository,
        mail: Mailer,
        identities: Identities,
        clock: Callable[[], datetime],
        max_items: int = MAX_ITEMS,
    ) -> None:
        self.digests = digests
        self.notifications = notifications
        self.users = users
        self.groups = groups
        self.posts = posts
        self.comments = comments
        self.mail: Mailer = mail
        self.identities = identities
        self.clock = clock
        self.max_items = max_items

    def today(self) -> str:
        return self.clock().date().isoformat()

    def batches(self, size: int = BATCH_SIZE) -> Iterator[list[str]]:
        """Everyone with queued items, once each, in lists of `size` (the index's order)."""
        batch: list[str] = []
        for user_id in self.digests.users_with_pending_items():
            batch.append(user_id)
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch

    def send_all(self, expired: Callable[[], bool], *, threads: int = 1) -> DigestRun:
        """Today's digests in this process: every batch, one after the other, with the code a
        fan-out worker runs on each (`send_batch`)."""
        run = DigestRun()
        day = self.today()
        for batch in self.batches():
            if run.stopped_early:
                run.left += batch
                continue
            run.add(self.send_batch(batch, day, expired, threads=threads))
        log.info(
            "digests sent",
            extra={
                "day": day,
                **{k: v for k, v in run.__dict__.items() if k not in ("failures", "left")},
                "left": len(run.left),
            },
        )
        return run

    def send_batch(
        self, user_ids: list[str], day: str, expired: Callable[[], bool], *, threads: int = 1
    ) -> DigestRun:
        """The digest of `day` to each of these users (a user whose day was sent is skipped);
        stops once `expired()`, leaving the rest in `left`. One user's failure is counted and
        the others are still sent. `threads`: users handled side by side (each digest waits on
        DynamoDB and SES; the sends themselves are paced by the mailer)."""
        run = DigestRun()
        lock = threading.Lock()

        def one(user_id: str) -> None:
            if expired():
                with lock:
                    run.stopped_early = True  # the rest wait for the next run
                    run.left.append(user_id)
                return
            try:
                sent = self.send_one(user_id, day)
            except SendDeferred:
                # Instant mail had the rate until the deadline: nothing was sent or kept.
                with lock:
                    run.stopped_early = True
                    run.left.append(user_id)
                return
            except Exception as error:
                # The others are still sent; this user's items wait for the next run.
                log.exception("digest failed", extra={"user": user_id, "day": day})
                with lock:
                    run.failed += 1
                    run.failures.append(
                        f"digest of user {user_id} failed: {type(error).__name__}: {error}"[:500]
                    )
                return
            with lock:
                if sent:
                    run.sent += 1
                else:
                    run.skipped += 1

        if threads <= 1:
            for user_id in user_ids:
                one(user_id)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=threads) as pool:
                list(pool.map(one, user_ids))
        # In the order given, whatever order the threads stopped in.
        left = set(run.left)
        run.left = [user_id for user_id in user_ids if user_id in left]
        return run

    def send_one(self, user_id: str, day: str) -> bool:
        """Send the user's digest of `day`; False when there is nothing (more) to send today."""
        pending = self.digests.pending_items(user_id, self.max_items)
        if not pending:
            return False
        user = self.users.get(user_id)
        if user is not None and user.email and self.mail.is_suppressed(user.email):
            # A hard bounce or a complaint: the items wait (and expire) unless it is cleared.
            return False
        now = self.clock()
        if not self.digests.claim_day(user_id, day, now):
            return False  # today's digest went out already: these wait for tomorrow's
        taken = [record for record in pending if self.digests.take(record, day, now)]
        entries = self._visible_entries(user, taken) if user is not None and user.email else []
        if user is None or not user.email or not entries:
            # Nothing the user may still see: the taken items are dropped, the day stays free.
            self.digests.release_day(user_id, day)
            return False
        self._send(user_id, user, day, entries, taken, now)
        return True

    def _send(
        self,
        user_id: str,
        user: User,
        day: str,
        entries: list[DigestEntry],
        taken: list[DigestRecord],
        now: datetime,
    ) -> None:
        """Send the digest of the taken items; when the mail fails they are put back and the
        day is freed, and the failure is raised."""
        type_id = self.notifications.digest_type(user_id) or SUMMARY
        root_id = self.groups.root_id()
        sender = (self.groups.get(root_id) if root_id else None) or self.groups.get(
            entries[0].item["groupId"]
        )

        subject, text, body_html = digest_email(entries, type_id, day)
        link = unsubscribe_url(user.id, DIGEST, now)
        try:
            identity = self.identities.of(sender)
            letter = Letter(
                (user.alias, user.email), subject, text, body_html, link, identity=identity
            )
            message_id = self.mail.send(sender, letter)
        except Exception:
            for record in taken:
                self.digests.put_back(record)
            self.digests.release_day(user_id, day)
            raise
        if not self.digests.finish_day(user_id, day, len(entries), message_id):
            # The day's claim is gone (expired): the digest went all the same; nothing to undo.
            log.warning(
                "digest sent after its day's claim was gone", extra={"day": day, "user": user_id}
            )

    def _visible_entries(self, user: User, taken: list[DigestRecord]) -> list[DigestEntry]:
        """The items whose post or comment still exists in a group the user may enter."""
        items = [record.item for record in taken]
        groups = self.groups.get_many({item["groupId"] for item in items})
        posts = self.posts.get_many({item["postId"] for item in items})
        caller = Caller.of(user, self.groups.root_id())
        entries = []
        for item in items:
            group, post = groups.get(item["groupId"]), posts.get(item["postId"])
            if group is None or post is None or not caller.has(Need.ENTER, group):
                continue
            content = post.content
            if item.get("commentId") is not None:
                comment = self.comments.get(int(item["commentId"]))
                if comment is None or comment.deleted_on is not None or not comment.is_approved:
                    continue
                content = comment.content
            entries.append(DigestEntry(item=item, content_html=content or ""))
        return entries


def digest_email(entries: list[DigestEntry], type_id: int, day: str) -> tuple[str, str, str]:
    """Subject, text and HTML: the items by group, oldest first; content in the full digest.
    The text part is rendered from the HTML when it is sent (chalicelib/mail/outgoing.py)."""
    name = DIGEST_NAMES.get(type_id, DIGEST_NAMES[SUMMARY])
    count = len(entries)
    subject = f"{name} for {day}: {count} new {'item' if count == 1 else 'items'}"
    by_group: dict[str, list[DigestEntry]] = defaultdict(list)
    for entry in sorted(entries, key=lambda e: e.item["occurredOn"]):
        by_group[entry.item["groupName"]].append(entry)
    e = html.escape
    parts = [f'<h1 style="{HEADING}">{e(name)} for {e(day)}</h1>']
    for group_name, group_entries in by_group.items():
        parts.append(f'<h2 style="{HEADING}">{e(group_name)}</h2>')
        items = []
        for entry in group_entries:
            item = entry.item
            byline = f"{item['author']}, {item['occurredOn'][:16].replace('T', ' ')} UTC"
            shown = (
                # Stored content is sanitised HTML already (CONTRACT §6).
                shown_content(entry.content_html, item["url"]) if type_id == FULL else ""
            )
            items.append(
                f'<li style="margin:0 0 12px"><a href="{e(item["url"])}" style="{LINK}">'
                f'{e(item["title"])}</a><br><span style="{MUTED}">{e(byline)}</span>{shown}</li>'
            )
        parts.append(f'<ul style="margin:0 0 16px;padding-left:20px">{"".join(items)}</ul>')
    parts.append(reason_paragraph(subscription_label(DIGEST)))
    return subject, "", "".join(parts)
