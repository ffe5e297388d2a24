"""Posts: reads (CONTRACT §10); creation by mail goes through `create_post` in the mail service."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields

from chalicelib.domain.groups import Group
from chalicelib.domain.ports.content import CommentStore, PostStore
from chalicelib.domain.ports.people import UserReader
from chalicelib.domain.posts import Post
from chalicelib.domain.users import User
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.schemas.comments import CommentPage
from chalicelib.schemas.common import GuidPageQuery, IntPageQuery
from chalicelib.schemas.posts import PostOut, PostPage
from chalicelib.services.comments import CommentPresenter
from chalicelib.services.links import group_ref, post_url, user_ref
from chalicelib.services.paging import next_offset

# What an answer shows of a post as its record holds it, in the answer's order (the rest the
# answer makes: its links, its group and author, its source as the API names it).
SHOWN = tuple(
    name for name in PostOut.model_fields if name in {f.name for f in fields(Post)} - {"source"}
)


def unknown_offset(offset: str | int) -> ValidationFailed:
    return ValidationFailed.one("offset", offset, "no item has this id")


class PostService:
    def __init__(
        self,
        posts: PostStore,
        comments: CommentStore,
        users: UserReader,
        presenter: CommentPresenter,
    ) -> None:
        self.posts = posts
        self.comments = comments
        self.users = users
        self.presenter = presenter

    def find(self, post_id: str) -> Post:
        post = self.posts.get(post_id)
        if post is None:
            raise NotFound("postId", post_id, "post")
        return post

    def get(self, post: Post, group: Group) -> PostOut:
        author = self.users.get(post.author_id)
        return self._out(post, group, {post.author_id: author} if author else {})

    def page(self, group: Group, query: GuidPageQuery) -> PostPage:
        after = None
        if query.offset:
            after = self.posts.position(query.offset)
            if after is None or after.group_id != group.id:
                raise unknown_offset(query.offset)
        records = self.posts.page_newest_first(
            group.id, limit=query.page_size, after=after, text=query.search
        )
        authors = self.users.get_many({p.author_id for p in records})
        posts = [self._out(p, group, authors) for p in records]
        return PostPage(offset=next_offset(records, query.offset, lambda p: p.id), posts=posts)

    def comments_page(self, post: Post, query: IntPageQuery) -> CommentPage:
        after = None
        if query.offset:
            after = self.comments.position(query.offset)
            if after is None or after.post_id != post.id:
                raise unknown_offset(query.offset)
        records = self.comments.visible_page(post.id, limit=query.page_size, after=after)
        return CommentPage(
            offset=int(records[-1].id) if records else query.offset,
            comments=self.presenter.present(records),
        )

    def _out(self, post: Post, group: Group, authors: Mapping[str, User]) -> PostOut:
        return PostOut(
            # Its comments' count is kept on it by every comment write: no comment is read.
            **{name: getattr(post, name) for name in SHOWN},
            url=post_url(group, post),
            group=group_ref(group),
            author=user_ref(authors.get(post.author_id)),
            source="email" if post.source == "email" else "fixture",
        )

    def group_id_of(self, post: Post) -> str:
        """The id of the group a post is in (whose privilege a reader needs)."""
        return post.group_id
