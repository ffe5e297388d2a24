"""What a planned mail stores: the post or comment (with its domain event, in one transaction),
its id derived from the mail's log entry so that a retry finds it stored, a slug free in its group.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from chalicelib.domain.announcements import CommentCreated, PostCreated
from chalicelib.domain.mail_status import MailStatus
from chalicelib.domain.ports.mail import (
    Counters,
    Finish,
    LogEntry,
    MailComments,
    MailLog,
    MailPosts,
)
from chalicelib.services.links import slugify
from chalicelib.services.mail_in.report import plain
from chalicelib.services.mail_in.rules import Plan

# Mail ids derive from this namespace, so that the same mail always maps to the same records.
MAIL_NAMESPACE = uuid.UUID("1b2f6c3e-58a4-4f0d-9c47-0a9e1f3b7d21")
COMMENT_COUNTER = "comments"


def derived_id(mailbox_key: str, key: str) -> str:
    """The id of what a mailbox's mail is (its log entry, its post): the same mail, the same id."""
    return str(uuid.uuid5(MAIL_NAMESPACE, f"{mailbox_key}\n{key}"))


class PlanStore:
    def __init__(
        self,
        *,
        posts: MailPosts,
        comments: MailComments,
        counters: Counters,
        mail: MailLog,
        clock: Callable[[], datetime],
    ) -> None:
        self.posts = posts
        self.comments = comments
        self.counters = counters
        self.mail = mail
        self.clock = clock
        # A group's slugs are read once per poll.
        self._slugs: dict[str, set[str]] = {}
        self._slug_lock = threading.Lock()

    def begin_poll(self) -> None:
        with self._slug_lock:
            self._slugs.clear()

    def store(
        self,
        mailbox_key: str,
        entry: LogEntry,
        uidl: str,
        plan: Plan,
        received_on: datetime | None,
    ) -> Finish:
        """Store the post or comment with its event (a conditional put: a retry finds it there);
        answers the mail's final step, for a batch write."""
        notes = "; ".join(plan.notes)
        post_id = None
        if plan.status == MailStatus.POSTED:
            post_id = entry.post_id or derived_id(mailbox_key, f"post:{entry.entry_id}")
            # Its event goes in the same transaction (a retry that finds the post there finds
            # the event recorded with it).
            self.posts.insert(
                announcements=[
                    PostCreated(post_id=post_id, group_id=plan.group.id, author_id=plan.author.id)
                ],
                **self._post_values(post_id, plan, received_on),
            )
            reason = plain(notes or "posted")
        elif plan.status == MailStatus.COMMENTED:
            if entry.comment_id:
                comment_id = int(entry.comment_id)
            else:
                # The id is kept on the entry before the comment is stored: a retry after a
                # crash reuses it, so the conditional put finds the comment already there.
                comment_id = self.counters.next_value(COMMENT_COUNTER)
                self.mail.keep_comment_id(entry, comment_id, plan.post.id)
            self.comments.insert(
                announcements=[
                    CommentCreated(
                        comment_id=comment_id,
                        post_id=plan.post.id,
                        group_id=plan.group.id,
                        author_id=plan.author.id,
                        is_approved=plan.is_approved,
                    )
                ],
                **self._comment_values(comment_id, plan, received_on),
            )
            state = "approved" if plan.is_approved else "awaiting approval"
            reason = plain(state + (f"; {notes}" if notes else ""))
        else:
            reason = plain(plan.reason)
        return Finish(entry, uidl, plan.status, reason, post_id=post_id)

    # --- records -----------------------------------------------------------------------------

    def _post_values(self, post_id: str, plan: Plan, created_on: datetime | None) -> dict[str, Any]:
        slug = self._free_slug(plan.group.id, slugify(plan.title, "post"), post_id)
        return {
            "id": post_id,
            "group_id": plan.group.id,
            "author_id": plan.author.id,
            "title": plan.title,
            "slug": slug,
            "content": plan.content,
            "created_on": created_on or self.clock(),
            "source": "email",
        }

    def _free_slug(self, group_id: str, slug: str, post_id: str) -> str:
        """`slug`, or `slug-<id prefix>` when the group has it: the group's slugs are read once
        per poll (posts only come in through its own mailbox, polled under a lease)."""
        with self._slug_lock:
            if group_id not in self._slugs:
                self._slugs[group_id] = set(self.posts.slugs(group_id))
            taken = self._slugs[group_id]
            chosen = slug if slug not in taken else f"{slug}-{post_id[:8]}"
            taken.add(chosen)
            return chosen

    def _comment_values(
        self, comment_id: int, plan: Plan, created_on: datetime | None
    ) -> dict[str, Any]:
        now = created_on or self.clock()
        return {
            "id": comment_id,
            "post_id": plan.post.id,
            "group_id": plan.group.id,
            "author_id": plan.author.id,
            "author_alias": plan.author.alias,
            "content": plan.content,
            "created_on": now,
            "parent_comment_id": plan.parent_comment_id,
            "is_approved": plan.is_approved,
            "approved_on": now if plan.is_approved else None,
            "source": "email",
            "held_because": plan.held_because or None,
        }
