"""Group email (spec "Group email"): group administrator of the group (CONTRACT §5)."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.schemas.group_email import GroupEmailOut, GroupEmailUpdate
from chalicelib.schemas.paths import GroupPath

group_email_api = Blueprint(__name__)
PATH = "/api/v1/en_US/group-email/{groupId}"


# The spec reads the group email at this "group-theme" path.
@route(
    group_email_api,
    "GET",
    "/api/v1/en_US/group-theme/list/{groupId}",
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=GroupEmailOut,
)
def get_group_email_by_theme_path(call: Call[GroupPath, None, None]) -> GroupEmailOut:
    """A group's email identity (the spec's path)."""
    return deps.group_email_service().get(call.group)


# The path users will expect next to the PUT (CONTRACT §8).
@route(group_email_api, "GET", PATH, need=Need.GROUP_ADMIN, group="groupId", response=GroupEmailOut)
def get_group_email(call: Call[GroupPath, None, None]) -> GroupEmailOut:
    """A group's email identity."""
    return deps.group_email_service().get(call.group)


@route(
    group_email_api,
    "PUT",
    PATH,
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=GroupEmailOut,
)
def update_group_email(call: Call[GroupPath, None, GroupEmailUpdate]) -> GroupEmailOut:
    """Replace a group's email identity."""
    return deps.group_email_service().update(call.group, call.body, call.signed_in.user_id)
