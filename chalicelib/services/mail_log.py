"""Reading the mail log of a mailbox, newest first, paged by entry id (CONTRACT §7, §10)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from chalicelib.domain.groups import Group
from chalicelib.domain.mailboxes import LogEntry, MailStatus, listed
from chalicelib.domain.ports.mail import MailLogPages
from chalicelib.domain.posts import Post
from chalicelib.schemas.mail_log import MailLogEntryOut, MailLogPage, MailLogQuery
from chalicelib.services.links import post_ref
from chalicelib.services.posts import unknown_offset

if TYPE_CHECKING:
    from chalicelib.store.refs import ReferenceReader


class MailLogService:
    def __init__(self, mail: MailLogPages, refs: ReferenceReader) -> None:
        self.mail = mail
        self.refs = refs

    def page(self, mailbox_key: str, query: MailLogQuery) -> MailLogPage:
        after = None
        if query.offset:
            after = self.mail.position(mailbox_key, query.offset)
            if after is None:
                raise unknown_offset(query.offset)
        records = self.mail.page_newest_first(
            mailbox_key, limit=query.page_size, after=after, status=query.status
        )
        # The posts first (an entry names no group); their groups are remembered once warm.
        posts = self.refs.read(posts={r.post_id for r in records if r.post_id}).posts
        groups = self.refs.read(groups={p.group_id for p in posts.values()}).groups
        entries = [_entry_out(record, posts, groups) for record in records]
        return MailLogPage(
            offset=records[-1].entry_id if records else query.offset, entries=entries
        )


def _entry_out(
    record: LogEntry, posts: Mapping[str, Post], groups: Mapping[str, Group]
) -> MailLogEntryOut:
    """One log entry as the API shows it, its post (if any) read beforehand with its group."""
    post = posts.get(record.post_id) if record.post_id else None
    group = groups.get(post.group_id) if post else None
    reason = record.reason or (
        "interrupted; will be retried" if record.status == MailStatus.PROCESSING else ""
    )
    # Validated from a mapping: `from` is a Python keyword.
    return MailLogEntryOut.model_validate(
        {
            "id": record.entry_id,
            "receivedOn": record.received_on,
            "messageId": record.message_id,
            "from": record.sender,
            "subject": record.subject,
            # Internal states as the API names them (the store lists entries by the same).
            "status": listed(record.status) if record.status else record.status,
            "reason": reason,
            "post": post_ref(post, group) if post and group else None,
            "commentId": record.comment_id or None,
            "via": record.via,
            "noticeSent": record.notice_sent,
        }
    )
