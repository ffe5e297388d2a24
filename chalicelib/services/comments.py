"""Comments: how comment records become the spec's records, and their moderation (spec "Post
comment moderation"; CONTRACT §7 for the lists, §8 for the rules).

Every change is a conditional write on the version that was read: when two moderators act at once,
the later write fails, the comment is read again and the rule is decided anew on what is stored
(an undelete racing a purge answers 404 or 409, never a half-restored comment).
"""

from __future__ import annotations

import calendar
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypedDict, Unpack

from chalicelib.clock import utc_now
from chalicelib.domain.announcements import (
    CommentApproved,
    CommentDeleted,
    CommentPurged,
)
from chalicelib.domain.comments import Comment, PurgeCandidate, SpamReport
from chalicelib.domain.groups import Group
from chalicelib.domain.ports.content import CommentStore, ReferenceStore
from chalicelib.domain.posts import Post
from chalicelib.domain.users import User
from chalicelib.errors import Conflict, NotFound, ValidationFailed
from chalicelib.schemas.comments import CommentOut, CommentPage, SpamReportOut
from chalicelib.schemas.common import IntPageQuery, Result
from chalicelib.services.comment_audit import audited as _audited
from chalicelib.services.comment_audit import purge_entry as _purge_entry
from chalicelib.services.links import comment_url, post_ref, user_ref
from chalicelib.services.paging import next_offset

if TYPE_CHECKING:
    from chalicelib.services.groups import GroupService

# The posts, groups and users that presenting some comments needs, read before presenting them.
Loaded = tuple[Mapping[str, Post], Mapping[str, Group], Mapping[str, User]]

# How many comments a bulk operation reads (and then writes) at a time.
BATCH_SIZE = 100
# A comment that keeps changing under us is given up after this many attempts.
MAX_ATTEMPTS = 5


class Deadline(Protocol):
    def expired(self) -> bool: ...


def one_month_before(moment: datetime) -> datetime:
    """The same time one calendar month earlier; the day is clamped (Mar 31 → Feb 28 or 29)."""
    year, month = (moment.year - 1, 12) if moment.month == 1 else (moment.year, moment.month - 1)
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


class CommentPresenter:
    """Turns comment records into `CommentOut`, fetching their posts, groups and users in one
    BatchGetItem across tables (or none, when the warm container remembers them all)."""

    def __init__(self, refs: ReferenceStore) -> None:
        self.refs = refs

    def load(
        self,
        records: Sequence[Comment],
        *,
        as_spam_report: bool = False,
        also_users: frozenset[str] = frozenset(),
    ) -> Loaded:
        """The posts, groups and users presenting `records` needs (and users `also_users`)."""
        # A comment carries its post's group: posts, groups and people are asked for at once.
        refs = self.refs.read(
            posts={r.post_id for r in records},
            groups={r.group_id for r in records},
            users=self._user_ids(records, as_spam_report) | set(also_users),
        )
        posts, groups, users = refs.posts, refs.groups, refs.users
        missing_groups = {p.group_id for p in posts.values()} - set(groups)
        if missing_groups:  # a post outside its comments' group: not expected, still answered
            groups = {**groups, **self.refs.read(groups=missing_groups).groups}
        return posts, groups, users

    @staticmethod
    def _user_ids(records: Sequence[Comment], as_spam_report: bool) -> set[str]:
        user_ids = {r.author_id for r in records} | {
            r.deleted_by_id for r in records if r.deleted_by_id
        }
        if as_spam_report:
            user_ids |= {report.author_id for r in records for report in r.spam_reports or []}
        return user_ids

    def present(
        self,
        records: Sequence[Comment],
        *,
        as_spam_report: bool = False,
        loaded: Loaded | None = None,
    ) -> list[CommentOut]:
        """`records` as the API shows them; `loaded` is what `load` read earlier (before a write,
        so that nothing is read after it), topped up only if the records changed meanwhile."""
        if loaded is None:
            posts, groups, users = self.load(records, as_spam_report=as_spam_report)
        else:
            posts, groups, users = loaded
            missing = self._user_ids(records, as_spam_report) - set(users)
            if missing:
                users = {**users, **self.refs.read(users=missing).users}
        out = []
        for record in records:
            post = posts.get(record.post_id)
            group = groups.get(post.group_id) if post else None
            if post is None or group is None:
                continue  # the post was removed; its comments are no longer listed
            out.append(self._one(record, post, group, users, as_spam_report))
        return out

    def present_one(self, record: Comment, *, as_spam_report: bool = False) -> CommentOut:
        return self.present([record], as_spam_report=as_spam_report)[0]

    @staticmethod
    def _one(
        record: Comment, post: Post, group: Group, users: Mapping[str, User], spam: bool
    ) -> CommentOut:
        reports: list[SpamReport] = list(record.spam_reports or [])
        return CommentOut(
            id=int(record.id),
            type="commentSpamReport" if spam else "comment",
            created_on=record.created_on,
            author=user_ref(users.get(record.author_id)),
            deleted_on=record.deleted_on,
            deleted_by=user_ref(users.get(record.deleted_by_id)) if record.deleted_by_id else None,
            approved_on=record.approved_on,
            is_approved=record.is_approved,
            post=post_ref(post, group),
            content=record.content,
            url=comment_url(group, post, int(record.id)),
            rating=int(record.rating or 0),
            votes=int(record.votes or 0),
            is_anonymous=bool(record.is_anonymous),
            parent_comment_id=int(record.parent_comment_id or 0),
            spam_reports=len(reports),
            held_because=record.held_because,
            reports=[
                SpamReportOut(created_on=r.created_on, author=user_ref(users.get(r.author_id)))
                for r in sorted(reports, key=lambda r: r.created_on, reverse=True)
            ]
            if spam
            else None,
        )


def _state(record: Comment) -> str:
    if record.is_deleted:
        return "deleted"
    return "approved" if record.is_approved else "unapproved"


def _unknown_offset(
    offset: int | None, why: str = "no comment of this group has this id"
) -> ValidationFailed:
    return ValidationFailed.one("offset", offset, why)


# The domain events a change of this comment announces (domain/announcements.py).
ModerationEvent = CommentApproved | CommentDeleted | CommentPurged


def _about(
    kind: type[CommentApproved] | type[CommentDeleted], record: Comment, actor_id: str | None
) -> ModerationEvent:
    return kind(
        comment_id=int(record.id),
        post_id=record.post_id,
        group_id=record.group_id,
        actor_id=actor_id,
    )


def _purged(record: Comment | PurgeCandidate, actor_id: str | None) -> CommentPurged:
    """A purge candidate from the keys-only index has no post or group."""
    return CommentPurged(record.id, record.post_id, record.group_id, actor_id)


class CommentService:
    """Moderation of a group's comments. `clock` answers "now" (injected by tests and the job)."""

    def __init__(
        self,
        comments: CommentStore,
        groups: GroupService,
        presenter: CommentPresenter,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.comments = comments
        self.groups = groups
        self.presenter = presenter
        self.clock = clock

    # --- finding -------------------------------------------------------------------------------

    def find(self, comment_id: int) -> Comment:
        record = self.comments.get(comment_id)
        if record is None:
            raise NotFound("commentId", comment_id, "comment")
        return record

    def group_of(self, record: Comment) -> Group:
        """The group whose moderators may act on the comment."""
        return self.groups.get(record.group_id, key="commentId")

    # --- lists ---------------------------------------------------------------------------------

    def deleted_page(self, group: Group, query: IntPageQuery) -> CommentPage:
        never = "this comment has never been in the deleted list"
        return self._list(group, query, self.comments.deleted_page, _deleted_position, never)

    def unapproved_page(self, group: Group, query: IntPageQuery) -> CommentPage:
        # Every comment of the group has a place in this order (its creation time).
        return self._list(group, query, self.comments.unapproved_page)

    def spam_report_page(self, group: Group, query: IntPageQuery) -> CommentPage:
        never, listing = "this comment has never been reported", self.comments.reported_page
        return self._list(group, query, listing, _reported_position, never, as_spam_report=True)

    def _list(
        self,
        group: Group,
        query: IntPageQuery,
        listing: Callable[..., Sequence[Comment]],
        place: Callable[[Comment], datetime | None] = lambda c: c.created_on,
        never_listed: str = "",
        *,
        as_spam_report: bool = False,
    ) -> CommentPage:
        """A page of one of the group's lists, after the comment `offset` names: one that has
        never had a `place` in the list is refused (`never_listed`)."""
        after = None
        if query.offset:
            after = self.comments.position(query.offset)
            if after is None or after.group_id != group.id:
                raise _unknown_offset(query.offset)
            if place(after) is None:
                raise _unknown_offset(query.offset, never_listed)
        records = listing(group.id, limit=query.page_size, after=after, text=query.search)
        return CommentPage(
            offset=next_offset(records, query.offset, lambda r: int(r.id)),
            comments=self.presenter.present(records, as_spam_report=as_spam_report),
        )

    # --- one comment ---------------------------------------------------------------------------

    def delete(self, record: Comment, by_user_id: str) -> CommentOut:
        """A comment in any state → deleted; one already deleted is answered as it is."""
        return self._moderate(
            record,
            _unless(lambda c: c.is_deleted, deleted_on=self.clock(), deleted_by_id=by_user_id),
            also_users=frozenset({by_user_id}),
            announcements=[_about(CommentDeleted, record, by_user_id)],
            action="comment.delete",
        )

    def undelete(self, record: Comment) -> CommentOut:
        """Deleted → restored, approved or not as it was before; anything else is a 409."""

        def restore(comment: Comment) -> Comment | None:
            self._require_deleted(comment, "undeleted")
            return dataclasses.replace(comment, deleted_on=None, deleted_by_id=None)

        return self._moderate(record, restore, action="comment.undelete")

    def approve(self, record: Comment, by_user_id: str | None = None) -> CommentOut:
        """Unapproved → approved (deleted or not); an approved comment is answered as it is."""
        return self._moderate(
            record,
            _unless(lambda c: c.is_approved, is_approved=True, approved_on=self.clock()),
            announcements=[_about(CommentApproved, record, by_user_id)],
            action="comment.approve",
        )

    def delete_spam_reports(self, record: Comment) -> CommentOut:
        return self._moderate(
            record,
            _unless(lambda c: not c.spam_reports, spam_reports=()),
            as_spam_report=True,
            action="comment.deleteSpamReports",
        )

    def _moderate(
        self,
        record: Comment,
        apply: Callable[[Comment], Comment | None],
        *,
        as_spam_report: bool = False,
        also_users: frozenset[str] = frozenset(),
        announcements: Sequence[ModerationEvent] = (),
        action: str = "comment.update",
    ) -> CommentOut:
        """`_change`, answered as the comment now is, with what the answer needs read before the
        write: once the change is made, no failing read can answer an error for it."""
        loaded = self.presenter.load([record], as_spam_report=as_spam_report, also_users=also_users)
        record, _ = self._change(record, apply, announcements, action)
        return self.presenter.present([record], as_spam_report=as_spam_report, loaded=loaded)[0]

    def purge(self, record: Comment, by_user_id: str | None = None) -> CommentOut:
        """Deleted → gone for good, however recently deleted (the month rule is for bulk purges)."""
        for _ in range(MAX_ATTEMPTS):
            self._require_deleted(record, "purged")
            # Presented first: afterwards there is nothing left to read.
            purged = self.presenter.present_one(record)
            if self.comments.purge_if_unchanged(
                record, announcements=[_purged(record, by_user_id), *_purge_entry(record)]
            ):
                return purged
            record = self.find(int(record.id))
        raise self._still_changing(record)

    # --- bulk ----------------------------------------------------------------------------------

    def purge_deleted_in_group(self, group: Group, deadline: Deadline) -> Result:
        """Purge the group's comments deleted at least one calendar month ago."""
        cutoff = one_month_before(self.clock())
        count = self._purge_batches(
            lambda after, limit: self.comments.deleted_before_in_group(
                group.id, cutoff, limit=limit, after=after
            ),
            cutoff,
            deadline,
            BATCH_SIZE,
        )
        return Result(count=count)

    def purge_old_deleted(
        self,
        deadline: Deadline,
        batch_size: int = BATCH_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """The monthly purge: the same rule over every group, oldest deletions first.
        `progress(count so far)` is told after each batch."""
        cutoff = one_month_before(self.clock())
        return self._purge_batches(
            lambda after, limit: self.comments.deleted_before(cutoff, limit=limit, after=after),
            cutoff,
            deadline,
            batch_size,
            progress,
        )

    def delete_unapproved_in_group(
        self, group: Group, by_user_id: str, deadline: Deadline, batch_size: int = BATCH_SIZE
    ) -> Result:
        """Move every live unapproved comment of the group to deleted (undeletable, purgeable)."""
        # Approved or deleted by someone else in the meantime: no longer ours to delete.
        mark_deleted = _unless(
            lambda c: c.is_deleted or c.is_approved,
            deleted_on=self.clock(),
            deleted_by_id=by_user_id,
        )
        count, after = 0, None
        while True:
            batch: Sequence[Comment] = self.comments.unapproved_page(
                group.id, limit=batch_size, after=after, newest_first=False
            )
            for record in batch:
                _, changed = self._change(
                    record,
                    mark_deleted,
                    [_about(CommentDeleted, record, by_user_id)],
                    "comment.delete",
                )
                count += changed
            # At least one batch per call, so every call makes progress; then stop in time.
            if len(batch) < batch_size or deadline.expired():
                return Result(count=count)
            after = batch[-1]

    def _purge_batches(
        self,
        candidates: Callable[[PurgeCandidate | None, int], Sequence[PurgeCandidate]],
        cutoff: datetime,
        deadline: Deadline,
        batch_size: int,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        count, after = 0, None
        while True:
            batch: Sequence[PurgeCandidate] = candidates(after, batch_size)
            for candidate in batch:
                # Conditional on the stored state: a comment undeleted (or deleted again) since
                # the Query read it is left alone.
                if self.comments.purge_if_deleted_before(
                    candidate.id,
                    cutoff,
                    announcements=[_purged(candidate, None), *_purge_entry(candidate)],
                ):
                    count += 1
            if progress is not None:
                progress(count)
            # At least one batch per run, so every run makes progress; the next run goes on from
            # the oldest comment left.
            if len(batch) < batch_size or deadline.expired():
                return count
            after = batch[-1]

    # --- the write loop ------------------------------------------------------------------------

    def _change(
        self,
        record: Comment,
        apply: Callable[[Comment], Comment | None],
        announcements: Sequence[ModerationEvent] = (),
        action: str = "comment.update",
    ) -> tuple[Comment, bool]:
        """Apply a rule to the comment and write the changed copy if nobody changed the comment
        since it was read; otherwise read it again and decide again. `apply` answers the changed
        copy, None when there is nothing to change, and raises when the rule forbids the change.
        `announcements`: the domain events of the change (they name the comment, its post and
        group, which no change moves); the store writes them to the outbox in the same request,
        only when the change is made. Answers the comment as stored afterwards."""
        for _ in range(MAX_ATTEMPTS):
            changed = apply(record)
            if changed is None:
                return record, False
            written = self.comments.replace_if_unchanged(
                record, changed, announcements=[*announcements, *_audited(action, record, changed)]
            )
            if written is not None:
                return written, True
            record = self.find(record.id)
        raise self._still_changing(record)

    @staticmethod
    def _require_deleted(record: Comment, action: str) -> None:
        if not record.is_deleted:
            raise Conflict(
                "state", _state(record), f"Only a deleted comment can be {action}; this one is not."
            )

    @staticmethod
    def _still_changing(record: Comment) -> Conflict:
        return Conflict(
            "state", _state(record), "The comment kept changing while this ran; try again."
        )


class _Moderated(TypedDict, total=False):
    """The fields of a comment a moderation sets (domain/comments.py)."""

    is_approved: bool
    approved_on: datetime | None
    deleted_on: datetime | None
    deleted_by_id: str | None
    spam_reports: tuple[SpamReport, ...]


def _unless(
    already: Callable[[Comment], bool], **changes: Unpack[_Moderated]
) -> Callable[[Comment], Comment | None]:
    """A moderation that sets a comment's fields to `changes` unless it is `already` so (then it
    is answered as it is: None, nothing to write)."""
    return lambda comment: None if already(comment) else dataclasses.replace(comment, **changes)


def _deleted_position(comment: Comment) -> datetime | None:
    return comment.deleted_list_position


def _reported_position(comment: Comment) -> datetime | None:
    return comment.last_reported_on
