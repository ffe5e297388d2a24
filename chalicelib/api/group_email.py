"""Group email (spec "Group email"): group administrator of the group (CONTRACT §5)."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.group_settings import group_settings_routes
from chalicelib.api.routing import Call, Routes
from chalicelib.auth import Need
from chalicelib.schemas.group_email import GroupEmailOut, GroupEmailUpdate
from chalicelib.schemas.paths import GroupPath

group_email_api = Blueprint(__name__)
PATH = "/api/v1/en_US/group-email/{groupId}"
group_admin = Routes(group_email_api, Need.GROUP_ADMIN, "groupId")


# The spec reads the group email at this "group-theme" path.
@group_admin("GET", "/api/v1/en_US/group-theme/list/{groupId}", GroupEmailOut)
def get_group_email_by_theme_path(call: Call[GroupPath, None, None]) -> GroupEmailOut:
    """A group's email identity (the spec's path)."""
    return deps.group_email_service().get(call.group)


# The path users will expect next to the PUT (CONTRACT §8).
group_settings_routes(
    group_admin,
    PATH,
    deps.group_email_service,
    (GroupEmailOut, GroupEmailUpdate),
    get=("get_group_email", "A group's email identity."),
    put=("update_group_email", "Replace a group's email identity."),
)
