"""Comments: how a page of comment records becomes the spec's records."""

from __future__ import annotations

from typing import Any

from chalicelib.schemas.comments import CommentOut, SpamReportOut
from chalicelib.services.links import comment_url, post_ref, user_ref


class CommentPresenter:
    """Turns comment records into `CommentOut`, fetching their posts, groups and users in batches
    (three BatchGets per page, whatever its size)."""

    def __init__(self, posts: Any, groups: Any, users: Any) -> None:
        self.posts = posts
        self.groups = groups
        self.users = users

    @classmethod
    def default(cls) -> CommentPresenter:
        from chalicelib.store.groups import GroupRepository
        from chalicelib.store.posts import PostRepository
        from chalicelib.store.users import UserRepository

        return cls(PostRepository(), GroupRepository(), UserRepository())

    def present(self, records: list[Any], *, as_spam_report: bool = False) -> list[CommentOut]:
        posts = self.posts.get_many({r.post_id for r in records})
        groups = self.groups.get_many({p.group_id for p in posts.values()})
        user_ids = {r.author_id for r in records} | {
            r.deleted_by_id for r in records if r.deleted_by_id
        }
        if as_spam_report:
            user_ids |= {report.author_id for r in records for report in r.spam_reports or []}
        users = self.users.get_many(user_ids)
        out = []
        for record in records:
            post = posts.get(record.post_id)
            group = groups.get(post.group_id) if post else None
            if post is None or group is None:
                continue  # the post was removed; its comments are no longer listed
            out.append(self._one(record, post, group, users, as_spam_report))
        return out

    def present_one(self, record: Any, *, as_spam_report: bool = False) -> CommentOut:
        return self.present([record], as_spam_report=as_spam_report)[0]

    @staticmethod
    def _one(record: Any, post: Any, group: Any, users: dict[str, Any], spam: bool) -> CommentOut:
        reports = list(record.spam_reports or [])
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
            reports=[
                SpamReportOut(created_on=r.created_on, author=user_ref(users.get(r.author_id)))
                for r in sorted(reports, key=lambda r: r.created_on, reverse=True)
            ]
            if spam
            else None,
        )
