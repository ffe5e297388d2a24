"""What mail in and notifications ask of the stores: one Protocol per repository, so the
services take these and not PynamoDB classes, and fast tests pass fakes (tests/support).

The mail log speaks in domain steps (`Reserve`, `Finish`, `Quarantine`, `Fail`, `Skip`, on the
frozen `LogEntry` records of domain/mailboxes.py): the service says what happened to a mail, the
store writes a poll's steps in batches (store/mail.py) and answers the entries as they left them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol, TypedDict, Unpack

from chalicelib.domain.groups import Group
from chalicelib.domain.mailboxes import LogEntry, Step
from chalicelib.domain.ports.content import CommentReader, PostReader
from chalicelib.domain.ports.people import GroupReader
from chalicelib.domain.posts import NewPost, Post


class EntryHeaders(TypedDict, total=False):
    """What a mail's headers say, as its log entry keeps them (cleaned and cut by mail in)."""

    message_id: str | None
    sender: str | None
    subject: str | None
    via: str


class Marker(NamedTuple):
    """A message on the server is handled: by which entry, with which final status."""

    entry_id: str
    status: str | None  # the entry's final status when marked (None: marked before statuses)


class MailLog(Protocol):
    """The mail-in log of store/mail.py (tests: tests/support/mail_fakes.FakeMailLog)."""

    def entry(self, mailbox: str, entry_id: str) -> LogEntry | None: ...
    def entries(self, mailbox: str, entry_ids: list[str]) -> dict[str, LogEntry]: ...
    def handled_uidls(self, mailbox: str, account: str, uidls: list[str]) -> dict[str, Marker]: ...
    def record(self, mailbox: str, account: str, steps: Sequence[Step]) -> dict[str, LogEntry]:
        """Write the steps, in order, in as few requests as the store can; answers each entry
        they name, by id, as they left it (`domain.mailboxes.played`)."""
        ...

    def keep_comment_id(self, entry: LogEntry, comment_id: int, post_id: str) -> LogEntry:
        """Store the id a comment will have before the comment is stored: a retry after a crash
        reuses it, so the comment's conditional put finds it there. Answers the entry as kept."""
        ...


class MailLogPages(Protocol):
    """The log as the mail log endpoints read it (services/mail_log.py)."""

    def position(self, mailbox: str, entry_id: str) -> LogEntry | None: ...
    def page_newest_first(
        self, mailbox: str, *, limit: int, after: LogEntry | None, status: str | None = None
    ) -> Sequence[LogEntry]: ...


# --- what mail in reads and writes elsewhere ----------------------------------------------------


class MailGroups(GroupReader, Protocol):
    def by_slug(self, slug: str) -> Group | None: ...


class MailPosts(PostReader, Protocol):
    def by_slug(self, group_id: str, slug: str) -> Post | None: ...
    def slugs(self, group_id: str) -> Iterable[str]: ...
    def insert(
        self, *, announcements: Sequence[object] = ..., **values: Unpack[NewPost]
    ) -> bool: ...


class MailComments(CommentReader, Protocol):
    # The comment's fields by name (store/comments.py `CommentRecord`): False when it exists.
    def insert(self, *, announcements: Sequence[object] = ..., **values: object) -> bool: ...


class Counters(Protocol):
    def next_value(self, name: str) -> int: ...


class Outbox(Protocol):
    def save(self, announcements: Sequence[object]) -> None: ...
