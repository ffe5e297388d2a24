"""Permalinks and reference objects (GroupRef, UserRef, PostRef), built from AGORA_BASE_URL.

Post url = `{base}/{group slug}/{post slug}`; comment url = post url + `#` + id (CONTRACT §9).
"""

from __future__ import annotations

from typing import Protocol

from chalicelib.domain.groups import Group
from chalicelib.domain.posts import Post
from chalicelib.schemas.common import GroupRef, PostRef, UserRef
from chalicelib.settings import get_settings


class _Slugged(Protocol):
    @property
    def slug(self) -> str: ...


class _PersonShown(_Slugged, Protocol):
    """A user or a user search's hit (services/user_search.py): what a reference to them shows."""

    @property
    def id(self) -> str: ...
    @property
    def alias(self) -> str: ...
    @property
    def avatar_url(self) -> str | None: ...


def base_url() -> str:
    return get_settings().public_base_url


def group_url(group: _Slugged) -> str:
    return f"{base_url()}/{group.slug}"


def post_url(group: _Slugged, post: _Slugged) -> str:
    return f"{group_url(group)}/{post.slug}"


def comment_url(group: _Slugged, post: _Slugged, comment_id: int) -> str:
    return f"{post_url(group, post)}#{comment_id}"


def group_ref(group: Group) -> GroupRef:
    return GroupRef(
        id=group.id,
        name=group.name,
        slug=group.slug,
        thumb_url=group.thumb_url or f"{base_url()}/images/group-default.png",
        url=group_url(group),
    )


def user_ref(user: _PersonShown | None) -> UserRef:
    if user is None:
        # The account is gone (or never loaded); the record still names a user.
        return UserRef(
            id="",
            alias="",
            extended_alias="",
            slug="",
            avatar_url=f"{base_url()}/images/avatar-default.png",
            url="",
        )
    return UserRef(
        id=user.id,
        alias=user.alias,
        extended_alias=user.alias,
        slug=user.slug,
        avatar_url=user.avatar_url or f"{base_url()}/images/avatar-default.png",
        url=f"{base_url()}/people/{user.slug}",
    )


def post_ref(post: Post, group: _Slugged) -> PostRef:
    return PostRef(id=post.id, title=post.title, slug=post.slug, url=post_url(group, post))
