"""What a mail becomes, with what that needs looked up (the sender's user, the mailbox's group,
the post a permalink names, the sender's DKIM/DMARC word), and what it stores (last). The rules
themselves are pure (`chalicelib.services.mail_in.rules`). The ingestor (services/mail_in/ingest.py)
hands each mail it counted to `MailPlanner.take`, its one way in, which answers the mail's final
step.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

import chalicelib.services.mail_in.rules as mail_rules
from chalicelib.auth import Caller
from chalicelib.domain.announcements import CommentCreated, PostCreated
from chalicelib.domain.mailboxes import VIA_POP3, Finish, LogEntry, MailStatus, Step
from chalicelib.domain.ports.mail import Counters, MailComments, MailLog, MailPosts
from chalicelib.mail import unsigned_mime
from chalicelib.mail.authentication import aligned
from chalicelib.mail.parse import dmarc_result
from chalicelib.mail.threads import reply_targets
from chalicelib.sanitize import slugify
from chalicelib.services.mail_in.rules import Plan, Target, plain

if TYPE_CHECKING:
    from collections.abc import Iterable

    from chalicelib.domain.announcements import RejectionNoticeDue
    from chalicelib.domain.groups import Group
    from chalicelib.domain.mailboxes import Mailbox
    from chalicelib.domain.ports.mail import MailComments, MailGroups, MailPosts
    from chalicelib.domain.ports.people import AccountFinder
    from chalicelib.domain.posts import Post
    from chalicelib.domain.users import User
    from chalicelib.mail.parse import ParsedMail
    from chalicelib.mail.threads import KeyedReply


# Mail ids derive from this namespace, so that the same mail always maps to the same records.
MAIL_NAMESPACE = uuid.UUID("1b2f6c3e-58a4-4f0d-9c47-0a9e1f3b7d21")
COMMENT_COUNTER = "comments"


def derived_id(mailbox_key: str, key: str) -> str:
    """The id of what a mailbox's mail is (its log entry, its post): the same mail, the same id."""
    return str(uuid.uuid5(MAIL_NAMESPACE, f"{mailbox_key}\n{key}"))


class SenderCheck(Protocol):
    """What a sender verifier answers (chalicelib.mail.authentication.SenderVerdict)."""

    @property
    def spoofed(self) -> bool: ...
    @property
    def reason(self) -> str: ...
    @property
    def verified(self) -> bool: ...


class SenderVerifier(Protocol):
    """AGORA_MAIL_AUTH=verify: chalicelib.mail.authentication.SenderVerifier."""

    def verify(
        self, raw: bytes, from_domain: str, *, last_attempt: bool, sent_elsewhere: str = ""
    ) -> SenderCheck: ...


class ReplyKeyReader(Protocol):
    """Reads a mail's reply key (mail/threads.py `ReplyKeys`)."""

    def read(self, addresses: Iterable[str], domain: str | None = None) -> KeyedReply | None: ...


@dataclass
class DownloadedMail:
    """One downloaded message on its way through a poll (services/mail_in/ingest.py)."""

    uidl: str
    raw: bytes
    received_on: datetime
    parsed: ParsedMail | None = None
    entry_id: str = ""
    entry: LogEntry | None = None
    status: str = ""  # the outcome of this poll: posted, …, failed, quarantined, skipped
    deletable: bool = False
    outcome: list[Step] = field(default_factory=list)  # its final steps, to be written
    via: str = VIA_POP3  # how it came in (its log entry's `via`): a poll, or a push (no UIDL)
    notice: RejectionNoticeDue | None = None  # due to its sender (services/mail_in/notices.py)
    # The verifier's word on its sender, as its plan has it (None: not asked): its notice reuses it.
    sender_proven: bool | None = None

    @property
    def logged(self) -> LogEntry:
        assert self.entry is not None, "a mail's entry is known once its chunk is read"
        return self.entry

    @property
    def mail(self) -> ParsedMail:
        assert self.parsed is not None, "only readable mail is planned"
        return self.parsed


class Planner(Protocol):
    """The ingestor's planner (tests pass one that fails at a chosen mail)."""

    def begin_poll(self) -> None: ...
    def take(self, mailbox: Mailbox, mail: DownloadedMail, *, last_attempt: bool) -> Finish: ...


class MailPlanner:
    def __init__(
        self,
        *,
        users: AccountFinder,
        groups: MailGroups,
        posts: MailPosts,
        comments: MailComments,
        counters: Counters,
        mail: MailLog,
        clock: Callable[[], datetime],
        base_url: str,
        authserv_id: str | None = None,
        verifier: SenderVerifier | None = None,
        unverified: str = "hold",
        reply_keys: ReplyKeyReader | None = None,
        inbound_domain: str = "",
    ) -> None:
        self.users = users
        self.groups = groups
        self.posts = posts
        self.comments = comments
        self.counters = counters
        self.mail = mail
        self.clock = clock
        self.base_url = base_url.rstrip("/")
        # Our ids' host (mail/threads.py): AGORA_BASE_URL's, as the notifications wrote them.
        self.host = urlsplit(self.base_url).hostname or "localhost"
        self.authserv_id = authserv_id
        self.verifier = verifier
        # AGORA_MAIL_UNVERIFIED: what a mail whose sender the verifier could not verify becomes.
        self.unverified = unverified
        # Reply keys (CONTRACT §9): None reads none (every mail follows the rules without one).
        self.reply_keys = reply_keys
        # AGORA_MAIL_INBOUND_DOMAIN: a group's `<slug>@<domain>` is its mailbox's address too.
        self.inbound_domain = inbound_domain.strip().lower()
        # Senders, groups and a group's slugs repeat within a mailbox: each is read once per poll.
        self._authors: dict[str, User | None] = {}
        self._groups: dict[str, Group | None] = {}
        self._slugs: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def begin_poll(self) -> None:
        """Forget what the last poll read (a user may have joined a group since)."""
        with self._lock:
            self._authors.clear()
            self._groups.clear()
            self._slugs.clear()

    def take(self, mailbox: Mailbox, mail: DownloadedMail, *, last_attempt: bool) -> Finish:
        """What a mail whose attempt is counted becomes, stored; answers its final step, for a
        batch write. A comment's id is kept on the mail's entry first (`mail.entry`, and in the
        log): a failure after that is written with it, and a retry reuses it. The mail keeps the
        verifier's word on its sender too (`mail.sender_proven`)."""
        plan = self.plan(mailbox, mail.mail, raw=mail.raw, last_attempt=last_attempt)
        mail.sender_proven = plan.sender_proven
        mail.entry = self._keep_ids(mail.logged, plan)
        return self._store(mailbox.key, mail.logged, mail.uidl, plan, mail.received_on)

    def plan(
        self, mailbox: Mailbox, parsed: ParsedMail, *, raw: bytes = b"", last_attempt: bool = False
    ) -> Plan:
        verdict = mail_rules.screen(parsed, self.authserv_id) or self._header_mode(
            mailbox, parsed, raw
        )
        if verdict is not None:
            return verdict
        address = parsed.from_address or ""  # never empty here: screened above
        author = self._author(address)
        keyed = self._key_of(mailbox, parsed)
        if keyed is not None and (author is None or not keyed.is_for(str(author.id))):
            return Plan(MailStatus.REJECTED, "reply key of another member")
        if author is None:
            return mail_rules.unknown_sender(parsed)
        # Only a member's mail is worth DNS look-ups; a temporary DNS failure raises, so the
        # mail is `failed` and retried by the next poll (chalicelib.mail.authentication). A key
        # never outranks DMARC: a keyed mail that fails its domain's reject or quarantine is
        # spoofed as it would be without the key.
        sender = self._sender(mailbox, parsed, raw, last_attempt)
        if sender is not None and sender.spoofed:
            return Plan(MailStatus.REJECTED, sender.reason)
        if keyed is not None:
            plan = self._plan_keyed(parsed, author, keyed)
        else:
            plan = self._plan_unkeyed(mailbox, parsed, author, sender)
        if sender is not None:
            plan.sender_proven = sender.verified and not sender.spoofed
        return plan

    def _plan_unkeyed(
        self, mailbox: Mailbox, parsed: ParsedMail, author: User, sender: SenderCheck | None
    ) -> Plan:
        """A member's mail without a reply key, its sender not spoofed: a post of the mailbox's
        group, or a comment on what its headers or subject name; held or rejected when its
        sender is unverified and AGORA_MAIL_UNVERIFIED says `hold`."""
        caller = Caller.of(author, self.groups.root_id())
        if mailbox.is_post:
            group = self.group(mailbox.group_id) if mailbox.group_id else None
            plan = mail_rules.plan_post(parsed, author, caller, group)
        else:
            # A reply to a notification names our ids in its headers; they win over a
            # permalink in the subject (CONTRACT §11).
            target = self.find_replied(parsed) or self.find_permalink(parsed.subject)
            plan = mail_rules.plan_comment(parsed, author, caller, target)
        if sender is not None and plan.status in (MailStatus.POSTED, MailStatus.COMMENTED):
            if not sender.verified and self.unverified == "hold":
                return mail_rules.hold_unverified(plan, sender.reason)
            plan.notes.insert(0, sender.reason)
        return plan

    def _header_mode(self, mailbox: Mailbox, parsed: ParsedMail, raw: bytes) -> Plan | None:
        """AGORA_MAIL_AUTH=header: the receiving server's DMARC pass is not the signer's word on
        a mail whose aligned signatures all leave how its body reads to unsigned MIME headers
        (chalicelib/mail/unsigned_mime.py), nor on a mail sent to other recipients (a replay:
        only its signature passed, and it was not meant for this mailbox)."""
        domain = (parsed.from_address or "").rpartition("@")[2]
        if not self.authserv_id or not domain:
            return None
        server = f"the DMARC result of {self.authserv_id}"
        problem = unsigned_mime.signers_problem(raw, lambda signer: aligned(signer, domain, None))
        if problem is not None:
            return Plan(
                MailStatus.REJECTED,
                f"sender not verified: {problem}, so {server} may be about another reading of it",
            )
        elsewhere = sent_elsewhere(mailbox, parsed, self._inbound_address(mailbox))
        if elsewhere and dmarc_result(parsed, self.authserv_id) == "pass":
            return Plan(
                MailStatus.REJECTED,
                f"sender not verified: the mail was sent to other recipients, not to "
                f"{elsewhere}, so {server} is about a mail meant for them",
            )
        return None

    def _sender(
        self, mailbox: Mailbox, parsed: ParsedMail, raw: bytes, last_attempt: bool
    ) -> SenderCheck | None:
        """The verifier's word on the mail's sender (None without a verifier)."""
        if self.verifier is None:
            return None
        domain = (parsed.from_address or "").rpartition("@")[2]
        elsewhere = sent_elsewhere(mailbox, parsed, self._inbound_address(mailbox))
        return self.verifier.verify(
            raw, domain, last_attempt=last_attempt, sent_elsewhere=elsewhere
        )

    def _inbound_address(self, mailbox: Mailbox) -> str:
        return inbound_address(mailbox, self.inbound_domain, self.group)

    def _key_of(self, mailbox: Mailbox, parsed: ParsedMail) -> KeyedReply | None:
        """The valid reply key (in To, Cc or Delivered-To, at the email-to-comment mailbox's own
        domain) of a mail to that mailbox; None for one without (a key that does not verify, has
        expired or names another domain is no key: the mail follows the rules as one without)."""
        if self.reply_keys is None or mailbox.is_post or "@" not in mailbox.email_address:
            return None
        domain = mailbox.email_address.rpartition("@")[2]
        return self.reply_keys.read(parsed.to_addresses, domain)

    def _plan_keyed(self, parsed: ParsedMail, author: User, keyed: KeyedReply) -> Plan:
        """A reply with its recipient's own key, from their own address, its domain's DMARC not
        failed: theirs as a signed mail would be (only their mailbox received the key), about
        what the key names and nothing else: a key whose post or comment is gone is refused,
        never aimed elsewhere by `References` or the subject (which anyone may write)."""
        caller = Caller.of(author, self.groups.root_id())
        target = self.find_keyed(keyed)
        if target is None:
            gone = "post" if keyed.comment_id is None else "comment"
            return Plan(MailStatus.REJECTED, f"the {gone} you replied to no longer exists")
        plan = mail_rules.plan_comment(parsed, author, caller, target)
        if plan.status == MailStatus.COMMENTED:
            plan.notes.insert(0, f"sender verified: reply key of {parsed.from_address}")
        return plan

    def find_keyed(self, keyed: KeyedReply) -> Target | None:
        """The (group, post, parent comment id) a reply key names: its post, or its comment's
        post and the comment (the post itself when the comment is deleted, not yet purged)."""
        parent = 0
        post_id = keyed.post_id
        if keyed.comment_id is not None:
            comment = self.comments.get(keyed.comment_id)
            if comment is None:
                return None
            post_id = comment.post_id
            parent = 0 if comment.is_deleted else int(comment.id)
        post: Post | None = self.posts.get(post_id) if post_id else None
        group = self.group(post.group_id) if post is not None else None
        return (group, post, parent) if group is not None and post is not None else None

    def _author(self, address: str) -> User | None:
        # Under the lock: the poll's workers asking for the same sender read it once, not once
        # each (issue 14's request budget, which the outbox drain shares).
        with self._lock:
            if address not in self._authors:
                self._authors[address] = self.users.by_email(address)
            return self._authors[address]

    def group(self, group_id: str) -> Group | None:
        """The group, read once per poll (the rejection notice's decider reads it here too)."""
        with self._lock:
            if group_id not in self._groups:
                self._groups[group_id] = self.groups.get(group_id)
            return self._groups[group_id]

    def find_replied(self, parsed: ParsedMail) -> Target | None:
        """The (group, post, parent comment id) that the mail's `In-Reply-To` or `References`
        names with one of our ids (mail/threads.py): the nearest that still exists,
        so a reply to a deleted comment goes to its post."""

        for named in reply_targets(parsed.in_reply_to, parsed.references, self.host):
            post = self.posts.get(named.post_id)
            if post is None:
                continue
            group = self.group(post.group_id)
            if group is None:
                continue
            parent = self._parent_comment(post, named.comment_id)
            if parent is not None:
                return group, post, parent
        return None

    def find_permalink(self, subject: str) -> Target | None:
        """The (group, post, parent comment id) of the first permalink in the subject that names
        an existing post (and comment)."""
        for link in mail_rules.permalink_candidates(subject, self.base_url):
            group = self.groups.by_slug(link.group_slug)
            post = self.posts.by_slug(group.id, link.post_slug) if group else None
            if group is None or post is None:
                continue
            parent = self._parent_comment(post, link.comment_id)
            if parent is not None:
                return group, post, parent
        return None

    def _parent_comment(self, post: Post, comment_id: int | None) -> int | None:
        """The comment a reply answers: 0 for the post itself, the id of a live comment of that
        post, or None when the named comment is not one (the caller tries the next name)."""
        if comment_id is None:
            return 0
        comment = self.comments.get(comment_id)
        if comment is not None and comment.post_id == post.id and not comment.is_deleted:
            return int(comment.id)
        return None

    # --- what a planned mail stores: the post or comment (with its domain event, in one
    # transaction), its id derived from the mail's log entry so that a retry finds it stored, a
    # slug free in its group.

    def _keep_ids(self, entry: LogEntry, plan: Plan) -> LogEntry:
        """The entry with the id its comment will have, kept before the comment is stored: a
        retry after a crash reuses it, so the conditional put finds the comment already there."""
        if plan.status != MailStatus.COMMENTED or entry.comment_id:
            return entry
        post = plan.commented()
        return self.mail.keep_comment_id(entry, self.counters.next_value(COMMENT_COUNTER), post.id)

    def _store(
        self,
        mailbox_key: str,
        entry: LogEntry,
        uidl: str,
        plan: Plan,
        received_on: datetime | None,
    ) -> Finish:
        """Store the post or comment with its event (a conditional put: a retry finds it there);
        answers the mail's final step. A comment's id is kept on `entry` already (`_keep_ids`)."""
        notes = "; ".join(plan.notes)
        if plan.status == MailStatus.POSTED:
            post_id = self._store_post(mailbox_key, entry, plan, received_on)
            return Finish(entry, uidl, plan.status, plain(notes or "posted"), post_id=post_id)
        if plan.status == MailStatus.COMMENTED:
            self._store_comment(entry, plan, received_on)
            state = "approved" if plan.is_approved else "awaiting approval"
            return Finish(entry, uidl, plan.status, plain(state + (f"; {notes}" if notes else "")))
        return Finish(entry, uidl, plan.status, plain(plan.reason))

    # --- records -----------------------------------------------------------------------------

    def _store_post(
        self, mailbox_key: str, entry: LogEntry, plan: Plan, created_on: datetime | None
    ) -> str:
        author, group = plan.made_by()
        post_id = entry.post_id or derived_id(mailbox_key, f"post:{entry.entry_id}")
        # Its event goes in the same transaction (a retry that finds the post there finds the
        # event recorded with it).
        self.posts.insert(
            announcements=[PostCreated(post_id=post_id, group_id=group.id, author_id=author.id)],
            id=post_id,
            group_id=group.id,
            author_id=author.id,
            title=plan.title,
            slug=self._free_slug(group.id, slugify(plan.title, "post"), post_id),
            content=plan.content,
            created_on=created_on or self.clock(),
            source="email",
        )
        return post_id

    def _store_comment(self, entry: LogEntry, plan: Plan, created_on: datetime | None) -> None:
        author, group = plan.made_by()
        post = plan.commented()
        comment_id = entry.comment_id
        assert comment_id, "a comment's id is kept on its entry before it is stored (_keep_ids)"
        created = CommentCreated(
            comment_id=comment_id,
            post_id=post.id,
            group_id=group.id,
            author_id=author.id,
            is_approved=plan.is_approved,
        )
        now = created_on or self.clock()
        values: dict[str, object] = {
            "id": comment_id,
            "post_id": post.id,
            "group_id": group.id,
            "author_id": author.id,
            "author_alias": author.alias,
            "content": plan.content,
            "created_on": now,
            "parent_comment_id": plan.parent_comment_id,
            "is_approved": plan.is_approved,
            "approved_on": now if plan.is_approved else None,
            "source": "email",
            "held_because": plan.held_because or None,
        }
        self.comments.insert(announcements=[created], **values)

    def _free_slug(self, group_id: str, slug: str, post_id: str) -> str:
        """`slug`, or `slug-<id prefix>` when the group has it: the group's slugs are read once
        per poll (posts only come in through its own mailbox, polled under a lease)."""
        with self._lock:
            if group_id not in self._slugs:
                self._slugs[group_id] = set(self.posts.slugs(group_id))
            taken = self._slugs[group_id]
            chosen = slug if slug not in taken else f"{slug}-{post_id[:8]}"
            taken.add(chosen)
            return chosen


def inbound_address(
    mailbox: Mailbox, inbound_domain: str, group_of: Callable[[str], Group | None]
) -> str:
    """A group mailbox's address on the inbound domain (CONTRACT §13), "" without one; the
    planner's and the rejection notice's (services/mail_in/notices.py) one reading of it."""
    if not (inbound_domain and mailbox.is_post and mailbox.group_id):
        return ""
    group = group_of(mailbox.group_id)
    return f"{group.slug}@{inbound_domain}" if group is not None else ""


def sent_elsewhere(mailbox: Mailbox, parsed: ParsedMail, inbound: str = "") -> str:
    """The mailbox's own address when it has one and the mail's recipients (To, Cc, Delivered-To,
    X-Original-To) lack it and its `inbound` address too, a `+tag` on either side aside; ""
    otherwise. A signed mail sent to someone else and replayed to the mailbox is not the
    signer's post or comment."""
    own = mailbox.email_address.strip().lower()
    if "@" not in own:
        return ""
    addresses = {_untagged(own), *([_untagged(inbound)] if inbound else [])}
    if any(_untagged(address) in addresses for address in parsed.to_addresses):
        return ""
    return own


def _untagged(address: str) -> str:
    local, _, domain = address.lower().rpartition("@")
    return f"{local.partition('+')[0]}@{domain}"
