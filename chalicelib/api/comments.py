"""Post comments (spec "Post comments"): moderation lists and transitions.

Lists name their group in the path, so the router checks the privilege; the other routes name a
comment, whose group is known only once it is loaded. Either way the caller must be a moderator or
administrator of that group, or the root group administrator (CONTRACT §5).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, Routes, made_view, route
from chalicelib.auth import Need
from chalicelib.jobs.base import Deadline
from chalicelib.schemas.comments import CommentOut, CommentPage
from chalicelib.schemas.common import IntPageQuery, Result
from chalicelib.schemas.paths import CommentPath, GroupPath
from chalicelib.services.comments import CommentService

comments_api = Blueprint(__name__)
moderated = Routes(comments_api, Need.MODERATOR, "groupId")

PREFIX = "/api/v1/en_US/comment/post"
# A bulk operation stops after this long, within API Gateway's 29 s; what is left is done by the
# next call (or, for purges, by the monthly job).
REQUEST_BUDGET_SECONDS = 20


# What moderators do to one comment: (method, path after the comment's, view, summary, the
# service's transition given the comment and the moderator's id). The group is known only once the
# comment is loaded, so the view checks the privilege itself.
Transition = Callable[[CommentService, Any, str], CommentOut]
TRANSITIONS: tuple[tuple[str, str, str, str, Transition], ...] = (
    ("DELETE", "", "delete_comment", "Delete a comment (idempotent).", CommentService.delete),
    (
        "POST",
        "/undelete",
        "undelete_comment",
        "Restore a deleted comment (409 when it is not deleted).",
        lambda service, record, _moderator: service.undelete(record),
    ),
    (
        "POST",
        "/purge",
        "purge_comment",
        "Remove a deleted comment for good, however recently deleted (409 when it is not deleted).",
        CommentService.purge,
    ),
    (
        "POST",
        "/approve",
        "approve_comment",
        "Approve a comment (idempotent).",
        CommentService.approve,
    ),
    (
        "DELETE",
        "/spam-reports",
        "delete_spam_reports",
        "Remove every spam report of a comment; its state is unchanged.",
        lambda service, record, _moderator: service.delete_spam_reports(record),
    ),
)
# A group's moderation lists: (state in the path, view, summary, the service's page of it).
ModerationList = Callable[[CommentService, Any, IntPageQuery], CommentPage]
LISTS: tuple[tuple[str, str, str, ModerationList], ...] = (
    (
        "deleted",
        "list_deleted_comments",
        "Deleted comments of a group, newest deletion first.",
        CommentService.deleted_page,
    ),
    (
        "unapproved",
        "list_unapproved_comments",
        "Comments of a group awaiting approval, newest first.",
        CommentService.unapproved_page,
    ),
    (
        "spam-reports",
        "list_spam_reported_comments",
        "Comments of a group with spam reports (type `commentSpamReport`), newest report first.",
        CommentService.spam_report_page,
    ),
)


def _transition_view(
    transition: Transition,
) -> Callable[[Call[CommentPath, None, None]], CommentOut]:
    def view(call: Call[CommentPath, None, None]) -> CommentOut:
        service = deps.comment_service()
        record = service.find(call.path.commentId)
        call.signed_in.require(Need.MODERATOR, service.group_of(record))
        return transition(service, record, call.signed_in.user_id)

    return view


def _list_view(
    page: ModerationList,
) -> Callable[[Call[GroupPath, IntPageQuery, None]], CommentPage]:
    def view(call: Call[GroupPath, IntPageQuery, None]) -> CommentPage:
        return page(deps.comment_service(), call.group, call.query)

    return view


for method, suffix, name, summary, transition in TRANSITIONS:
    route(comments_api, method, f"{PREFIX}/{{commentId}}{suffix}", response=CommentOut)(
        made_view(
            name, summary, Call[CommentPath, None, None], CommentOut, _transition_view(transition)
        )
    )
for state, name, summary, page in LISTS:
    moderated("GET", f"{PREFIX}/list/{{groupId}}/{state}", CommentPage)(
        made_view(name, summary, Call[GroupPath, IntPageQuery, None], CommentPage, _list_view(page))
    )


@moderated("POST", f"{PREFIX}/purge-deleted/group/{{groupId}}", Result)
def purge_deleted_comments(call: Call[GroupPath, None, None]) -> Result:
    """Purge a group's comments deleted more than a calendar month ago; answers the count."""
    deadline = Deadline.after_seconds(REQUEST_BUDGET_SECONDS)
    return deps.comment_service().purge_deleted_in_group(call.group, deadline)


@moderated("DELETE", f"{PREFIX}/list/{{groupId}}/unapproved", Result)
def delete_unapproved_comments(call: Call[GroupPath, None, None]) -> Result:
    """Delete every unapproved comment of a group; answers the count."""
    deadline = Deadline.after_seconds(REQUEST_BUDGET_SECONDS)
    return deps.comment_service().delete_unapproved_in_group(
        call.group, call.signed_in.user_id, deadline
    )
