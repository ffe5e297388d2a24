"""What a delivery reads once (services/notify/delivery.py delivers with it): the post or comment
a notification is about and what is told of it (the instant email's news, an alert's references,
a digest item, the ids that thread its emails); the reads a batch of events shares; and each
group's sending identity (below)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar, cast

from chalicelib.clock import iso
from chalicelib.domain.comments import Comment
from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject, text_field
from chalicelib.domain.letters import Identity, News
from chalicelib.domain.mailboxes import SYSTEM_SCOPE, Mailbox
from chalicelib.domain.ports.content import DocumentStore
from chalicelib.domain.posts import Post
from chalicelib.domain.users import User
from chalicelib.mail.threads import comment_id_of, post_id_of, site_host
from chalicelib.services.group_email import KIND as GROUP_EMAIL
from chalicelib.services.links import group_ref, post_ref, user_ref
from chalicelib.services.newsletter import KIND as NEWSLETTER


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
        """Our ids of the post, the comment replied to and the comment (emails.py)."""

        host = site_host()
        post_id = self.post.id
        ids = [post_id_of(post_id, host)]
        comment = self.comment
        if comment is not None:
            if comment.parent_comment_id:
                ids.append(comment_id_of(comment.parent_comment_id, post_id, host))
            ids.append(comment_id_of(comment.id, post_id, host))
        return tuple(ids)

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
# What the notifications of one batch of events read once (services/notify/delivery.py, jobs/outbox.py).


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


class Mailboxes(Protocol):
    """The mailboxes' settings (store/mailboxes.py `MailboxRepository.get`)."""

    def get(self, scope: str) -> Mailbox | None: ...


class SendingIdentities:
    """Each group's identity and the reply address, read once per instance (a drain or a digest
    run)."""

    def __init__(self, documents: DocumentStore, mailboxes: Mailboxes) -> None:
        self.documents = documents
        self.mailboxes = mailboxes
        self._identities: dict[str, Identity] = {}
        self._reply_address: str | None = None

    def of(self, group: Group) -> Identity:
        if group.id not in self._identities:
            # The documents as GroupEmailService and NewsletterService keep them, read here
            # without their API records: unsaved, a group's mail goes under its name, from no
            # address of its own, with no disclaimer.
            email = self.documents.get(group.id, GROUP_EMAIL) or {}
            newsletter = self.documents.get(group.id, NEWSLETTER) or {}
            self._identities[group.id] = Identity(
                text_field(email, "name") or group.name,
                text_field(email, "email"),
                text_field(newsletter, "disclaimer"),
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
