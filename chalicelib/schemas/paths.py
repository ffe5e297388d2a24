"""The path parameters of the routes, by their spec names: GUIDs, or integers (events, comments,
sections, notifications). A view names its path model in `Call[Path, Query, Body]`, so
`call.path.postId` is a `str` to the type checker and a canonical GUID at run time."""

# The fields keep the spec's camelCase names: they are the `{parameters}` of the paths.

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from chalicelib.schemas.common import Guid


class PathModel(BaseModel):
    # Built on first use, like every API model (cold start).
    model_config = ConfigDict(defer_build=True)


class GroupPath(PathModel):
    groupId: Guid


class UserPath(PathModel):
    userId: Guid


class PostPath(PathModel):
    postId: Guid


class PlayerPath(PathModel):
    playerId: Guid


class FieldPath(PathModel):
    fieldId: Guid


class ConnectorPath(PathModel):
    connectorId: Guid


class ConnectorGroupPath(PathModel):
    connectorId: Guid
    groupId: Guid


class CommentPath(PathModel):
    commentId: int


class EventPath(PathModel):
    eventId: int


class SectionPath(PathModel):
    sectionId: int


class UserNotificationPath(PathModel):
    userId: Guid
    notificationId: int
