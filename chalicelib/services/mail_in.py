"""Mail in (CONTRACT §9): a mailbox's mail becomes posts or comments, exactly once.

The order of steps is what makes a crash between any two of them harmless:

1. download the mail (nothing stored yet: a crash means the next poll downloads it again);
2. reserve its log entry, keyed by (mailbox, Message-ID or content hash), with the id of the post
   (derived from the same key) or comment (taken from the counter once, kept in the entry);
3. store the post or comment with a conditional put (a second attempt finds it there);
4. store the outcome on the entry and mark the POP3 UIDL handled;
5. only then DELE (committed by QUIT; a crash before QUIT keeps the mail on the server, where the
   UIDL marker or the entry makes the next poll skip it).

A mail that raises is logged `failed` and retried on later polls up to `max_attempts`, then kept
out of the way (quarantined: final, never deleted). It never stops the mails after it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from chalicelib.auth import Caller
from chalicelib.logs import get_logger
from chalicelib.services.domain_events import CommentCreated, PostCreated
from chalicelib.services.links import slugify

log = get_logger("mail")

# Mail ids derive from this namespace, so that the same mail always maps to the same records.
MAIL_NAMESPACE = uuid.UUID("1b2f6c3e-58a4-4f0d-9c47-0a9e1f3b7d21")
FINAL = {"posted", "commented", "ignored", "rejected", "quarantined"}
MAX_MAIL_BYTES = 10 * 1024 * 1024
COMMENT_COUNTER = "comments"


@dataclass(frozen=True)
class MailboxConfig:
    key: str  # post#<groupId> | comment#system
    kind: Literal["post", "comment"]
    group_id: str | None
    host: str
    port: int
    username: str
    password: str
    is_ssl: bool
    delete_processed: bool


@dataclass
class PollResult:
    mailbox: str
    seen: int = 0
    posted: int = 0
    commented: int = 0
    ignored: int = 0
    rejected: int = 0
    failed: int = 0
    skipped: int = 0
    deleted: int = 0
    left: int = 0
    error: str | None = None

    def line(self) -> str:
        counts = ", ".join(
            f"{name} {getattr(self, name)}"
            for name in (
                "seen",
                "posted",
                "commented",
                "ignored",
                "rejected",
                "failed",
                "skipped",
                "deleted",
                "left",
            )
        )
        return f"{self.mailbox}: {counts}" + (f" (error: {self.error})" if self.error else "")


@dataclass(frozen=True)
class Outcome:
    status: str  # posted | commented | ignored | rejected
    reason: str
    post_id: str | None = None
    comment_id: int | None = None


@dataclass
class Plan:
    """What a mail should become, decided before anything is written."""

    status: Literal["posted", "commented", "ignored", "rejected"]
    reason: str
    author: Any = None
    group: Any = None
    post: Any = None  # the commented post
    parent_comment_id: int = 0
    title: str = ""
    content: str = ""
    is_approved: bool = True
    notes: list[str] = field(default_factory=list)


class Checkpoints:
    """Named points between the steps above. Tests pass one that fails at a chosen step."""

    def reached(self, step: str) -> None:
        return None


class MailIngestor:
    def __init__(
        self,
        *,
        users: Any,
        groups: Any,
        posts: Any,
        comments: Any,
        counters: Any,
        mail: Any,
        events: Any,
        clock: Callable[[], datetime],
        base_url: str,
        authserv_id: str | None = None,
        checkpoints: Checkpoints | None = None,
        max_messages: int = 200,
        max_bytes: int = MAX_MAIL_BYTES,
        max_attempts: int = 3,
    ) -> None:
        self.users = users
        self.groups = groups
        self.posts = posts
        self.comments = comments
        self.counters = counters
        self.mail = mail
        self.events = events
        self.clock = clock
        self.base_url = base_url.rstrip("/")
        self.authserv_id = authserv_id
        self.checkpoints = checkpoints or Checkpoints()
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.max_attempts = max_attempts
        # Senders and groups repeat within a mailbox: each is read once per poll.
        self._authors: dict[str, Any] = {}
        self._groups: dict[str, Any] = {}

    @classmethod
    def default(cls, **overrides: Any) -> MailIngestor:
        from chalicelib.clock import utc_now
        from chalicelib.services.domain_events import DomainEvents
        from chalicelib.settings import get_settings
        from chalicelib.store.comments import CommentRepository
        from chalicelib.store.counters import CounterRepository
        from chalicelib.store.groups import GroupRepository
        from chalicelib.store.mail import MailRepository
        from chalicelib.store.posts import PostRepository
        from chalicelib.store.users import UserRepository

        settings = get_settings()
        values: dict[str, Any] = {
            "users": UserRepository(),
            "groups": GroupRepository(),
            "posts": PostRepository(),
            "comments": CommentRepository(),
            "counters": CounterRepository(),
            "mail": MailRepository(),
            "events": DomainEvents.default(),
            "clock": utc_now,
            "base_url": settings.public_base_url,
            "authserv_id": settings.mail_authserv_id,
        }
        values.update(overrides)
        return cls(**values)

    # --- one mailbox -------------------------------------------------------------------------

    def poll(self, mailbox: MailboxConfig, expired: Callable[[], bool]) -> PollResult:
        from chalicelib.mail.pop3 import Pop3Mailbox

        result = PollResult(mailbox=mailbox.key)
        self._authors.clear()
        self._groups.clear()
        with Pop3Mailbox(
            mailbox.host, mailbox.port, mailbox.username, mailbox.password, is_ssl=mailbox.is_ssl
        ) as server:
            sizes = server.listing()
            uidls = server.uidls()
            handled = self.mail.handled_uidls(mailbox.key, sorted(set(uidls.values())))
            for number in sorted(sizes):
                if result.seen >= self.max_messages or expired():
                    result.left = len([n for n in sizes if n >= number])
                    break
                result.seen += 1
                uidl = uidls.get(number, f"#{number}")
                if uidl in handled:
                    result.skipped += 1
                    if mailbox.delete_processed and self._deletable(mailbox.key, handled[uidl]):
                        server.delete(number)
                        result.deleted += 1
                    continue
                status, entry_id = self._handle(server, mailbox, number, sizes[number], uidl)
                self._count(result, status)
                done = status in FINAL and status != "quarantined"
                duplicate = status == "skipped" and self._deletable(mailbox.key, entry_id)
                if mailbox.delete_processed and (done or duplicate):
                    server.delete(number)
                    self.checkpoints.reached("deleted")
                    result.deleted += 1
            server.quit()
        return result

    def _deletable(self, mailbox_key: str, entry_id: str) -> bool:
        entry = self.mail.entry(mailbox_key, entry_id)
        return entry is None or entry.status != "quarantined"

    @staticmethod
    def _count(result: PollResult, status: str) -> None:
        name = {"quarantined": "failed"}.get(status, status)
        if hasattr(result, name):
            setattr(result, name, getattr(result, name) + 1)

    # --- one mail ----------------------------------------------------------------------------

    def _handle(
        self, server: Any, mailbox: MailboxConfig, number: int, size: int, uidl: str
    ) -> tuple[str, str]:
        from chalicelib.mail.parse import MailParseError, content_hash, parse_mail

        now = self.clock()
        if size > self.max_bytes:
            entry_id = self._entry_id(mailbox.key, f"uidl:{uidl}:{size}")
            reason = f"larger than {self.max_bytes} bytes ({size}); not downloaded"
            return self._finish_plain(mailbox, entry_id, uidl, now, "rejected", reason), entry_id

        raw = server.retrieve(number)
        self.checkpoints.reached("downloaded")
        try:
            parsed = parse_mail(raw)
        except MailParseError as error:
            entry_id = self._entry_id(mailbox.key, f"sha256:{content_hash(raw)}")
            return self._finish_plain(
                mailbox, entry_id, uidl, now, "rejected", f"cannot be parsed: {error}"
            ), entry_id

        entry_id = self._entry_id(mailbox.key, parsed.dedup_key)
        entry = self.mail.entry(mailbox.key, entry_id)
        if entry is not None and entry.status in FINAL:
            # The same mail again (same Message-ID, or same content): it was handled already.
            self.mail.mark_uidl(mailbox.key, uidl, entry_id)
            return "skipped", entry_id
        if entry is None:
            entry = self.mail.new_entry(
                mailbox.key,
                entry_id,
                now,
                message_id=parsed.message_id,
                sender=parsed.from_address,
                subject=parsed.subject[:500],
                status="processing",
                attempts=0,
            )
        try:
            outcome = self._import(mailbox, parsed, entry)
        except Exception as error:  # one bad mail must not stop the mailbox
            return self._failed(mailbox, entry, uidl, error), entry_id
        entry.status, entry.reason = outcome.status, outcome.reason
        entry.post_id = outcome.post_id or entry.post_id
        entry.comment_id = outcome.comment_id or entry.comment_id
        self.mail.save_entry(entry)
        self.mail.mark_uidl(mailbox.key, uidl, entry_id)
        self.checkpoints.reached("outcome_stored")
        log.info(
            "mail handled",
            extra={"mailbox": mailbox.key, "status": outcome.status, "reason": outcome.reason},
        )
        return outcome.status, entry_id

    def _finish_plain(
        self,
        mailbox: MailboxConfig,
        entry_id: str,
        uidl: str,
        now: datetime,
        status: str,
        reason: str,
    ) -> str:
        entry = self.mail.entry(mailbox.key, entry_id) or self.mail.new_entry(
            mailbox.key, entry_id, now
        )
        entry.status, entry.reason = status, reason
        self.mail.save_entry(entry)
        self.mail.mark_uidl(mailbox.key, uidl, entry_id)
        log.info("mail handled", extra={"mailbox": mailbox.key, "status": status, "reason": reason})
        return status

    def _failed(self, mailbox: MailboxConfig, entry: Any, uidl: str, error: Exception) -> str:
        entry.attempts = int(entry.attempts or 0) + 1
        detail = f"{type(error).__name__}: {error}"[:300]
        log.exception("mail failed", extra={"mailbox": mailbox.key, "attempt": entry.attempts})
        if entry.attempts >= self.max_attempts:
            entry.status = "quarantined"
            entry.reason = (
                f"failed {entry.attempts} times, no more retries (kept on the server): {detail}"
            )
            self.mail.save_entry(entry)
            self.mail.mark_uidl(mailbox.key, uidl, entry.entry_id)
            return "quarantined"
        entry.status = "failed"
        entry.reason = (
            f"attempt {entry.attempts} of {self.max_attempts} failed, will retry: {detail}"
        )
        self.mail.save_entry(entry)
        return "failed"

    @staticmethod
    def _entry_id(mailbox_key: str, dedup_key: str) -> str:
        return str(uuid.uuid5(MAIL_NAMESPACE, f"{mailbox_key}\n{dedup_key}"))

    # --- the rules ---------------------------------------------------------------------------

    def _import(self, mailbox: MailboxConfig, parsed: Any, entry: Any) -> Outcome:
        plan = self.plan(mailbox, parsed)
        if plan.status in ("ignored", "rejected"):
            return Outcome(plan.status, plan.reason)
        notes = "; ".join(plan.notes)
        if plan.status == "posted":
            post_id = entry.post_id or self._entry_id(mailbox.key, f"post:{entry.entry_id}")
            entry.post_id = post_id
            self.mail.save_entry(entry)
            self.checkpoints.reached("entry_reserved")
            self._store_post(post_id, plan, parsed)
            self.checkpoints.reached("record_stored")
            self.events.publish(
                PostCreated(post_id=post_id, group_id=plan.group.id, author_id=plan.author.id)
            )
            return Outcome("posted", notes or "posted", post_id=post_id)
        comment_id = (
            int(entry.comment_id) if entry.comment_id else self.counters.next_value(COMMENT_COUNTER)
        )
        entry.comment_id = comment_id
        entry.post_id = plan.post.id
        self.mail.save_entry(entry)
        self.checkpoints.reached("entry_reserved")
        self._store_comment(comment_id, plan)
        self.checkpoints.reached("record_stored")
        self.events.publish(
            CommentCreated(
                comment_id=comment_id,
                post_id=plan.post.id,
                group_id=plan.group.id,
                author_id=plan.author.id,
                is_approved=plan.is_approved,
            )
        )
        state = "approved" if plan.is_approved else "awaiting approval"
        return Outcome(
            "commented", f"{state}" + (f"; {notes}" if notes else ""), plan.post.id, comment_id
        )

    def plan(self, mailbox: MailboxConfig, parsed: Any) -> Plan:
        from chalicelib.mail.parse import dmarc_failed

        if parsed.is_bounce:
            return Plan("ignored", f"bounce: {parsed.bounce_reason}")
        if parsed.is_auto_reply:
            return Plan("ignored", f"auto-reply: {parsed.auto_reason}")
        if self.authserv_id and dmarc_failed(parsed, self.authserv_id):
            return Plan("rejected", f"spoofed: DMARC failed at {self.authserv_id}")
        if parsed.is_spam:
            return Plan("rejected", "marked as spam by the receiving server")
        if not parsed.from_address:
            return Plan("rejected", "no valid sender address")
        author = self._author(parsed.from_address)
        if author is None:
            return Plan("rejected", f"unknown sender {parsed.from_address}")
        caller = Caller.of(author, self.groups.root_id())
        notes = []
        if parsed.attachments:
            names = ", ".join(a.filename or a.content_type for a in parsed.attachments)
            notes.append(f"{len(parsed.attachments)} attachment(s) not imported: {names}"[:300])
        if mailbox.kind == "post":
            return self._plan_post(mailbox, parsed, author, caller, notes)
        return self._plan_comment(parsed, author, caller, notes)

    def _author(self, address: str) -> Any:
        if address not in self._authors:
            self._authors[address] = self.users.by_email(address)
        return self._authors[address]

    def _group(self, group_id: str) -> Any:
        if group_id not in self._groups:
            self._groups[group_id] = self.groups.get(group_id)
        return self._groups[group_id]

    def _plan_post(
        self, mailbox: MailboxConfig, parsed: Any, author: Any, caller: Caller, notes: list[str]
    ) -> Plan:
        group = self._group(mailbox.group_id) if mailbox.group_id else None
        if group is None:
            return Plan("rejected", "the mailbox's group no longer exists")
        if not caller.may("post", group):
            return Plan("rejected", f"{parsed.from_address} may not post in group {group.slug}")
        title = parsed.subject.strip() or "(no subject)"
        return Plan(
            "posted",
            "",
            author=author,
            group=group,
            title=title[:300],
            content=parsed.html,
            notes=notes,
        )

    def _plan_comment(self, parsed: Any, author: Any, caller: Caller, notes: list[str]) -> Plan:
        from chalicelib.mail.replies import trim_reply
        from chalicelib.sanitize import text_to_html

        target = self.find_permalink(parsed.subject)
        if target is None:
            return Plan("rejected", "the subject names no existing post or comment")
        group, post, parent_id = target
        if not caller.may("comment", group):
            return Plan("rejected", f"{parsed.from_address} may not comment in group {group.slug}")
        text = trim_reply(parsed.text)
        if not text.strip():
            return Plan("rejected", "the mail has no text to comment with")
        # Checked after `comment`, so the caller may enter the group.
        approved = caller.may("commentWithoutApproval", group)
        return Plan(
            "commented",
            "",
            author=author,
            group=group,
            post=post,
            parent_comment_id=parent_id,
            content=text_to_html(text),
            is_approved=approved,
            notes=notes,
        )

    def find_permalink(self, subject: str) -> tuple[Any, Any, int] | None:
        """The (group, post, parent comment id) whose permalink the subject carries.

        `Re:`/`Fwd:` chains and any text around the link do not matter: the first link under
        AGORA_BASE_URL that names an existing post (and comment) wins.
        """
        base = re.escape(re.sub(r"^https?://", "", self.base_url))
        pattern = re.compile(
            rf"https?://{base}/([a-z0-9-]+)/([a-z0-9-]+)/?(?:#(\d+))?", re.IGNORECASE
        )
        for group_slug, post_slug, comment_id in pattern.findall(subject):
            group = self.groups.by_slug(group_slug.lower())
            post = self.posts.by_slug(group.id, post_slug.lower()) if group else None
            if post is None:
                continue
            if not comment_id:
                return group, post, 0
            comment = self.comments.get(int(comment_id))
            if comment is not None and comment.post_id == post.id and not comment.is_deleted:
                return group, post, int(comment.id)
        return None

    # --- writes ------------------------------------------------------------------------------

    def _store_post(self, post_id: str, plan: Plan, parsed: Any) -> None:
        from chalicelib.sanitize import html_to_text

        # A post stored by an attempt that crashed before recording its outcome makes the
        # conditional insert below a no-op: no need to read first.
        slug = slugify(plan.title, "post")
        if self.posts.slug_taken(plan.group.id, slug):
            slug = f"{slug}-{post_id[:8]}"
        self.posts.insert(
            id=post_id,
            group_id=plan.group.id,
            author_id=plan.author.id,
            title=plan.title,
            slug=slug,
            content=plan.content,
            created_on=self.clock(),
            source="email",
            search_text=f"{plan.title}\n{html_to_text(plan.content)}".lower(),
        )

    def _store_comment(self, comment_id: int, plan: Plan) -> None:
        from chalicelib.sanitize import html_to_text

        now = self.clock()  # the insert is conditional: a retry finds the comment there
        self.comments.insert(
            id=comment_id,
            post_id=plan.post.id,
            group_id=plan.group.id,
            author_id=plan.author.id,
            content=plan.content,
            created_on=now,
            parent_comment_id=plan.parent_comment_id,
            is_approved=plan.is_approved,
            approved_on=now if plan.is_approved else None,
            source="email",
            search_text=f"{html_to_text(plan.content)}\n{plan.author.alias}".lower(),
        )
