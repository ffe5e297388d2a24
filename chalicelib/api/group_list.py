"""The groups an operator may manage (CONTRACT §10): their ids, for every other route."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.schemas.group_list import GroupListQuery, GroupPage

group_list_api = Blueprint(__name__)


@route(group_list_api, "GET", "/api/v1/en_US/group/list", need=Need.SIGNED_IN, response=GroupPage)
def list_groups(call: Call[None, GroupListQuery, None]) -> GroupPage:
    """The groups the caller administers or moderates, by name (a root group administrator:
    every group), with their parent and access."""
    return deps.group_list_service().page(call.signed_in, call.query)
