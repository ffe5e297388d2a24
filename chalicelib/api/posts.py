"""Post reads (CONTRACT §10): a post, a group's posts, a post's comments."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Caller, Need
from chalicelib.domain.groups import Group
from chalicelib.domain.posts import Post
from chalicelib.schemas.comments import CommentPage
from chalicelib.schemas.common import GuidPageQuery, IntPageQuery
from chalicelib.schemas.paths import GroupPath, PostPath
from chalicelib.schemas.posts import PostOut, PostPage
from chalicelib.services.posts import PostService

posts_api = Blueprint(__name__)


def _entered_post(post_id: str, caller: Caller, service: PostService) -> tuple[Post, Group]:
    """The post and its group, once the caller is known to may enter the group."""
    post = service.find(post_id)
    group = deps.group_service().get(service.group_id_of(post), key="postId")
    caller.require(Need.ENTER, group)
    return post, group


@route(posts_api, "GET", "/api/v1/en_US/post/{postId}", response=PostOut)
def get_post(call: Call[PostPath, None, None]) -> PostOut:
    """A post with its comment count."""
    service = deps.post_service()
    post, group = _entered_post(call.path.postId, call.signed_in, service)
    return service.get(post, group)


@route(
    posts_api,
    "GET",
    "/api/v1/en_US/post/list/{groupId}",
    need=Need.ENTER,
    group="groupId",
    response=PostPage,
)
def list_posts(call: Call[GroupPath, GuidPageQuery, None]) -> PostPage:
    """A group's posts, newest first."""
    return deps.post_service().page(call.group, call.query)


@route(posts_api, "GET", "/api/v1/en_US/post/{postId}/comments", response=CommentPage)
def list_post_comments(call: Call[PostPath, IntPageQuery, None]) -> CommentPage:
    """A post's approved, not deleted comments, oldest first."""
    service = deps.post_service()
    post, _group = _entered_post(call.path.postId, call.signed_in, service)
    return service.comments_page(post, call.query)
