"""Mail in's pure decisions (CONTRACT §9), from plain values: no store, no clock, no POP3 session.
What a mail becomes (here, first); what a poll tells (last: its counts, plain words). How a
downloaded chunk is sorted (which mail is imported now, skipped, quarantined or handled alone) sits
with the flow that drives it, in services/mail_in/ingest.py.

`MailIngestor` looks things up (the sender's user record, the group, the post a permalink names)
and hands them in; everything here is a pure function of a `ParsedMail` and those records, so
the rules are tested with plain values, without a mail server or a database.

Rejected, and why (the reason is what the mail log shows):
- no usable sender: the standard parser's `From` must name exactly one plain `local@domain`
  address (`ParsedMail.sender_problem` says what was wrong); the display name never counts;
- spoofed: OUR receiving server (`AGORA_MAIL_AUTHSERV_ID`) wrote DMARC `fail`;
- spam: the receiving server flagged it;
- unknown sender, or a sender without the group's `post`/`comment` permission;
- nothing to import: no text at all, or a text part that is binary data
  (`ParsedMail.body_problem`); never an empty post or comment (CONTRACT §9);
- email-to-comment: a subject naming no existing post or comment, or no text left after
  trimming the quoted mail.
Ignored: bounces and auto-replies (rules in `chalicelib.mail.parse`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chalicelib.auth import Caller
from chalicelib.domain.mailboxes import (
    OUTCOMES,
    MailStatus,
)
from chalicelib.mail.authentication import DnsUnavailable
from chalicelib.mail.parse import clean_line, dmarc_failed, sanitise_html
from chalicelib.mail.pop3 import MailboxError
from chalicelib.mail.replies import trim_reply
from chalicelib.sanitize import text_to_html

if TYPE_CHECKING:
    from chalicelib.domain.groups import Group
    from chalicelib.domain.posts import Post
    from chalicelib.domain.users import User
    from chalicelib.mail.parse import ParsedMail

# What a comment by mail answers: the group, the post, and the comment replied to (0: the post).
Target = tuple["Group", "Post", int]


# DynamoDB refuses items over 400 KB, and every index that projects all attributes stores a
# copy of the same size: stored content stays well under it, with room for the search text
# (store/base.py).
MAX_CONTENT_BYTES = 150_000
MAX_TITLE_CHARS = 300
TRUNCATED_NOTE = "[The mail was longer than this; the rest was not imported.]"


@dataclass
class Plan:
    """What a mail should become, decided before anything is written."""

    status: MailStatus  # posted, commented, ignored or rejected
    reason: str
    author: User | None = None
    group: Group | None = None
    post: Post | None = None  # the commented post
    parent_comment_id: int = 0
    title: str = ""
    content: str = ""
    is_approved: bool = True
    notes: list[str] = field(default_factory=list)
    # Why a comment waits for approval when its sender was not verified (the verifier's words):
    # the moderation console shows it (CommentOut.held_because).
    held_because: str = ""
    # AGORA_MAIL_AUTH=verify: whether the verifier proved the sender (None: it was not asked);
    # a rejected mail's notice reuses it (services/mail_in/notices.py) rather than check again.
    sender_proven: bool | None = None

    def made_by(self) -> tuple[User, Group]:
        """The author and the group of the post or comment this plan stores."""
        if self.author is None or self.group is None:
            raise ValueError(f"a plan that stores a {self.status} mail names its author and group")
        return self.author, self.group

    def commented(self) -> Post:
        """The post the comment this plan stores goes under."""
        if self.post is None:
            raise ValueError("a plan that stores a comment names its post")
        return self.post


@dataclass(frozen=True)
class Permalink:
    group_slug: str
    post_slug: str
    comment_id: int | None


def screen(parsed: ParsedMail, authserv_id: str | None) -> Plan | None:
    """Ignore or reject a mail on what it says about itself; None when it may go on."""

    if parsed.is_bounce:
        return Plan(MailStatus.IGNORED, f"bounce: {parsed.bounce_reason}")
    if parsed.is_auto_reply:
        return Plan(MailStatus.IGNORED, f"auto-reply: {parsed.auto_reason}")
    if authserv_id and dmarc_failed(parsed, authserv_id):
        return Plan(MailStatus.REJECTED, f"spoofed: DMARC failed at {authserv_id}")
    if authserv_id and parsed.reading_problem:
        # One reading (CONTRACT §9): the receiving server's DMARC verdict is about its own reading
        # of the mail, and this one reads two ways; it is the signer's only with AGORA_MAIL_AUTH=off.
        return Plan(
            MailStatus.REJECTED,
            f"sender not verified: {parsed.reading_problem}, so the DMARC result of "
            f"{authserv_id} may be about another reading of it",
        )
    if parsed.is_spam:
        return Plan(MailStatus.REJECTED, "marked as spam by the receiving server")
    if not parsed.from_address:
        problem = parsed.sender_problem or "no address"
        return Plan(MailStatus.REJECTED, f"no valid sender address: {problem}")
    return None


def hold_unverified(plan: Plan, why: str) -> Plan:
    """AGORA_MAIL_UNVERIFIED=hold: a mail no DKIM signature of its sender's domain vouches for
    (`why`, the verifier's words) is a stranger's as much as the member's: a post is rejected,
    a comment waits for a moderator's approval."""
    if plan.status == MailStatus.POSTED:
        return Plan(MailStatus.REJECTED, f"{why}; a post by email needs a verified sender")
    plan.is_approved = False
    plan.held_because = why
    plan.notes.insert(0, f"{why}; held for approval")
    return plan


def unknown_sender(parsed: ParsedMail) -> Plan:
    return Plan(MailStatus.REJECTED, f"unknown sender {parsed.from_address}")


def attachment_notes(parsed: ParsedMail) -> list[str]:
    if not parsed.attachments:
        return []
    names = ", ".join(a.filename or a.content_type for a in parsed.attachments)
    return [f"{len(parsed.attachments)} attachment(s) not imported: {names}"[:300]]


def plan_post(parsed: ParsedMail, author: User, caller: Caller, group: Group | None) -> Plan:
    notes = attachment_notes(parsed)
    if group is None:
        return Plan(MailStatus.REJECTED, "the mailbox's group no longer exists")
    if not caller.may("post", group):
        return Plan(
            MailStatus.REJECTED, f"{parsed.from_address} may not post in group {group.slug}"
        )
    if parsed.body_problem:
        return Plan(MailStatus.REJECTED, f"nothing to post: {parsed.body_problem}")
    title = parsed.subject.strip() or "(no subject)"
    content, truncated = fit_html(parsed.html, MAX_CONTENT_BYTES)
    if truncated:
        notes.append(f"content truncated to {MAX_CONTENT_BYTES // 1000} KB")
    return Plan(
        MailStatus.POSTED,
        "",
        author=author,
        group=group,
        title=title[:MAX_TITLE_CHARS],
        content=content,
        notes=notes,
    )


def plan_comment(parsed: ParsedMail, author: User, caller: Caller, target: Target | None) -> Plan:
    """`target` is the (group, post, parent comment id) the subject's permalink names."""

    notes = attachment_notes(parsed)
    if target is None:
        return Plan(MailStatus.REJECTED, "the subject names no existing post or comment")
    group, post, parent_id = target
    if not caller.may("comment", group):
        return Plan(
            MailStatus.REJECTED, f"{parsed.from_address} may not comment in group {group.slug}"
        )
    if parsed.body_problem:
        return Plan(MailStatus.REJECTED, f"nothing to comment with: {parsed.body_problem}")
    text = trim_reply(parsed.text)
    if not text.strip():
        return Plan(MailStatus.REJECTED, "the mail has no text to comment with")
    content, truncated = fit_html(text_to_html(text), MAX_CONTENT_BYTES)
    if truncated:
        notes.append(f"content truncated to {MAX_CONTENT_BYTES // 1000} KB")
    # Checked after `comment`, so the caller may enter the group.
    approved = caller.may("commentWithoutApproval", group)
    return Plan(
        MailStatus.COMMENTED,
        "",
        author=author,
        group=group,
        post=post,
        parent_comment_id=parent_id,
        content=content,
        is_approved=approved,
        notes=notes,
    )


def permalink_candidates(subject: str, base_url: str) -> list[Permalink]:
    """Every permalink under `base_url` in a subject, in order (`Re:`/`Fwd:` and any text around
    them do not matter); the caller takes the first that names an existing post (and comment)."""
    base = re.escape(re.sub(r"^https?://", "", base_url.rstrip("/")))
    pattern = re.compile(rf"https?://{base}/([a-z0-9-]+)/([a-z0-9-]+)/?(?:#(\d+))?", re.IGNORECASE)
    return [
        Permalink(group.lower(), post.lower(), int(comment) if comment else None)
        for group, post, comment in pattern.findall(subject)
    ]


def fit_html(markup: str, max_bytes: int) -> tuple[str, bool]:
    """HTML within `max_bytes` of UTF-8: cut, re-sanitised (which closes what the cut left open)
    and followed by a visible note; (markup, False) when it fits already."""
    if len(markup.encode("utf-8")) <= max_bytes:
        return markup, False

    budget = max_bytes - 200
    cut = markup.encode("utf-8")[:budget].decode("utf-8", "ignore")
    cut = cut[: cut.rfind("<")] if cut.rfind("<") > cut.rfind(">") else cut  # no half tag
    fitted = sanitise_html(cut)
    while len(fitted.encode("utf-8")) > budget:  # closing tags and escaping can add bytes
        cut = cut[: int(len(cut) * 0.9)]
        fitted = sanitise_html(cut)
    return f"{fitted}<p>{TRUNCATED_NOTE}</p>", True


# -----------------------------------------------------------------------------------------------
# What a poll tells: its counts (the CLI's line, the job's log and metrics) and the plain words
# its mail log entries may hold (no control characters, no library internals).


MAX_REASON_CHARS = 1000


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
                *OUTCOMES,
                "skipped",
                "deleted",
                "left",
            )
        )
        return f"{self.mailbox}: {counts}" + (f" (error: {self.error})" if self.error else "")

    def count(self, status: str) -> None:
        name = MailStatus.FAILED if status == MailStatus.QUARANTINED else status
        if hasattr(self, name) and name not in ("seen", "deleted", "left", "mailbox", "error"):
            setattr(self, name, getattr(self, name) + 1)


def plain(reason: str) -> str:
    return clean_line(reason)[:MAX_REASON_CHARS]


def plain_error(error: BaseException) -> str:
    """What the log may say about an exception: plain words, never a library's internals (the
    details go to the function's own log for operators)."""

    if isinstance(error, MailboxError | DnsUnavailable):
        return str(error)
    if isinstance(error, TimeoutError):
        return "timed out"
    module = type(error).__module__ or ""
    if module.startswith(("pynamodb", "botocore")):
        return "the database did not accept or answer the write (see the job's log)"
    return "an internal error (see the job's log)"
