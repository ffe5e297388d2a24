"""Post comments (spec "Post comments"): moderation lists and transitions.

Lists name their group in the path, so the router checks the privilege; the other routes name a
comment, whose group is known only once it is loaded. Either way the caller must be a moderator or
administrator of that group, or the root group administrator (CONTRACT §5).
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.jobs.base import Deadline
from chalicelib.schemas.comments import CommentOut, CommentPage
from chalicelib.schemas.common import IntPageQuery, Result
from chalicelib.schemas.paths import CommentPath, GroupPath
from chalicelib.services.comments import CommentService

comments_api = Blueprint(__name__)

PREFIX = "/api/v1/en_US/comment/post"
# A bulk operation stops after this long, within API Gateway's 29 s; what is left is done by the
# next call (or, for purges, by the monthly job).
REQUEST_BUDGET_SECONDS = 20


def _moderated(call: Call[CommentPath, None, None]) -> tuple[CommentService, Any]:
    """The comment named by the path, once the caller is known to moderate its group."""
    service = deps.comment_service()
    record = service.find(call.path.commentId)
    call.signed_in.require(Need.MODERATOR, service.group_of(record))
    return service, record


@route(
    comments_api,
    "GET",
    f"{PREFIX}/list/{{groupId}}/deleted",
    need=Need.MODERATOR,
    group="groupId",
    response=CommentPage,
)
def list_deleted_comments(call: Call[GroupPath, IntPageQuery, None]) -> CommentPage:
    """Deleted comments of a group, newest deletion first."""
    return deps.comment_service().deleted_page(call.group, call.query)


@route(comments_api, "DELETE", f"{PREFIX}/{{commentId}}", response=CommentOut)
def delete_comment(call: Call[CommentPath, None, None]) -> CommentOut:
    """Delete a comment (idempotent)."""
    service, record = _moderated(call)
    return service.delete(record, call.signed_in.user_id)


@route(comments_api, "POST", f"{PREFIX}/{{commentId}}/undelete", response=CommentOut)
def undelete_comment(call: Call[CommentPath, None, None]) -> CommentOut:
    """Restore a deleted comment (409 when it is not deleted)."""
    service, record = _moderated(call)
    return service.undelete(record)


@route(comments_api, "POST", f"{PREFIX}/{{commentId}}/purge", response=CommentOut)
def purge_comment(call: Call[CommentPath, None, None]) -> CommentOut:
    """Remove a deleted comment for good, however recently deleted (409 when it is not deleted)."""
    service, record = _moderated(call)
    return service.purge(record, call.signed_in.user_id)


@route(
    comments_api,
    "POST",
    f"{PREFIX}/purge-deleted/group/{{groupId}}",
    need=Need.MODERATOR,
    group="groupId",
    response=Result,
)
def purge_deleted_comments(call: Call[GroupPath, None, None]) -> Result:
    """Purge a group's comments deleted more than a calendar month ago; answers the count."""
    deadline = Deadline.after_seconds(REQUEST_BUDGET_SECONDS)
    return deps.comment_service().purge_deleted_in_group(call.group, deadline)


@route(
    comments_api,
    "GET",
    f"{PREFIX}/list/{{groupId}}/unapproved",
    need=Need.MODERATOR,
    group="groupId",
    response=CommentPage,
)
def list_unapproved_comments(call: Call[GroupPath, IntPageQuery, None]) -> CommentPage:
    """Comments of a group awaiting approval, newest first."""
    return deps.comment_service().unapproved_page(call.group, call.query)


@route(comments_api, "POST", f"{PREFIX}/{{commentId}}/approve", response=CommentOut)
def approve_comment(call: Call[CommentPath, None, None]) -> CommentOut:
    """Approve a comment (idempotent)."""
    service, record = _moderated(call)
    return service.approve(record, call.signed_in.user_id)


@route(
    comments_api,
    "DELETE",
    f"{PREFIX}/list/{{groupId}}/unapproved",
    need=Need.MODERATOR,
    group="groupId",
    response=Result,
)
def delete_unapproved_comments(call: Call[GroupPath, None, None]) -> Result:
    """Delete every unapproved comment of a group; answers the count."""
    deadline = Deadline.after_seconds(REQUEST_BUDGET_SECONDS)
    return deps.comment_service().delete_unapproved_in_group(
        call.group, call.signed_in.user_id, deadline
    )


@route(
    comments_api,
    "GET",
    f"{PREFIX}/list/{{groupId}}/spam-reports",
    need=Need.MODERATOR,
    group="groupId",
    response=CommentPage,
)
def list_spam_reported_comments(call: Call[GroupPath, IntPageQuery, None]) -> CommentPage:
    """Comments of a group with spam reports (type `commentSpamReport`), newest report first."""
    return deps.comment_service().spam_report_page(call.group, call.query)


@route(comments_api, "DELETE", f"{PREFIX}/{{commentId}}/spam-reports", response=CommentOut)
def delete_spam_reports(call: Call[CommentPath, None, None]) -> CommentOut:
    """Remove every spam report of a comment; its state is unchanged."""
    service, record = _moderated(call)
    return service.delete_spam_reports(record)
