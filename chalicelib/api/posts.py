"""Post reads (CONTRACT §10): a post, a group's posts, a post's comments."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.schemas.comments import CommentPage
from chalicelib.schemas.common import GuidPageQuery, IntPageQuery
from chalicelib.schemas.posts import PostOut, PostPage
from chalicelib.services.posts import PostService

posts_api = Blueprint(__name__)


def _post_and_group(call: Call, service: PostService):
    post = service.find(call.path.postId)
    group = deps.group_service().get(post.group_id, key="postId")
    call.signed_in.require(Need.ENTER, group)
    return post, group


@route(posts_api, "GET", "/api/v1/en_US/post/{postId}", response=PostOut)
def get_post(call: Call) -> PostOut:
    """A post with its comment count."""
    service = deps.post_service()
    post, group = _post_and_group(call, service)
    return service.get(post, group)


@route(
    posts_api,
    "GET",
    "/api/v1/en_US/post/list/{groupId}",
    need=Need.ENTER,
    group="groupId",
    query=GuidPageQuery,
    response=PostPage,
)
def list_posts(call: Call) -> PostPage:
    """A group's posts, newest first."""
    return deps.post_service().page(call.group, call.query)


@route(
    posts_api,
    "GET",
    "/api/v1/en_US/post/{postId}/comments",
    query=IntPageQuery,
    response=CommentPage,
)
def list_post_comments(call: Call) -> CommentPage:
    """A post's approved, not deleted comments, oldest first."""
    service = deps.post_service()
    post, _group = _post_and_group(call, service)
    return service.comments_page(post, call.query)
