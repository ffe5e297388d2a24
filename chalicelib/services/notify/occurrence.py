"""The post or comment a notification is about, as one delivery loaded it, and what is told of
it: the instant email's news, an alert's references, a digest item, the ids that thread its emails
(services/notify/delivery.py delivers them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chalicelib.domain.comments import Comment
from chalicelib.domain.letters import News


@dataclass
class Occurrence:
    """The post or comment an event is about, loaded once per delivery."""

    id: str  # post-<postId> | comment-<commentId>: the key of everything told about it
    kind: str  # newPost | newComment
    group: Any
    post: Any
    author: Any  # None when the comment is anonymous or the account is gone
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
            return str(self.post.title)
        return f"New comment on: {self.post.title}"

    def news(self) -> News:
        """What its instant email tells, as plain values (mail/outgoing.py renders them)."""
        return News(
            kind=self.kind,
            group_name=str(self.group.name),
            post_title=str(self.post.title),
            author_name=self.author_name,
            content_html=self.content_html,
            url=self.url,
        )

    def thread(self) -> tuple[str, ...]:
        """Our ids of the post, the comment replied to and the comment (mail/threads.py)."""
        from chalicelib.mail.threads import comment_id_of, post_id_of, site_host

        host = site_host()
        post_id = str(self.post.id)
        ids = [post_id_of(post_id, host)]
        comment = self.comment
        if comment is not None:
            parent = int(getattr(comment, "parent_comment_id", 0) or 0)
            if parent:
                ids.append(comment_id_of(parent, post_id, host))
            ids.append(comment_id_of(int(comment.id), post_id, host))
        return tuple(ids)

    def refs(self) -> dict[str, Any]:
        """What an alert shows, kept on it (so a page of alerts is one Query)."""
        from chalicelib.services.links import group_ref, post_ref, user_ref

        author = user_ref(self.author).model_dump(mode="json", by_alias=True)
        if self.author is None:
            author["alias"] = author["extendedAlias"] = self.author_name
        return {
            "title": self.headline,
            "group": group_ref(self.group).model_dump(mode="json", by_alias=True),
            "post": post_ref(self.post, self.group).model_dump(mode="json", by_alias=True),
            "author": author,
            "commentId": int(self.comment.id) if self.comment is not None else None,
            "url": self.url,
        }

    def digest_item(self, reason: str) -> dict[str, Any]:
        from chalicelib.clock import iso

        return {
            "kind": self.kind,
            "groupId": self.group.id,
            "groupName": self.group.name,
            "postId": self.post.id,
            "commentId": int(self.comment.id) if self.comment is not None else None,
            "title": self.headline,
            "url": self.url,
            "author": self.author_name,
            "occurredOn": iso(self.occurred_on),
            "reason": reason,
        }
