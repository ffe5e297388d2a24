"""The audit log (CONTRACT §10, §12): a group's, for its administrators; all of it, for the root
group's."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.schemas.audit import AuditPage, AuditQuery
from chalicelib.schemas.paths import GroupPath

audit_api = Blueprint(__name__)


@route(
    audit_api,
    "GET",
    "/api/v1/en_US/audit/{groupId}",
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=AuditPage,
)
def group_audit_log(call: Call[GroupPath, AuditQuery, None]) -> AuditPage:
    """The group's audit log, newest first; `action` and `actorId` narrow it."""
    return deps.audit_service().page(call.group.id, call.query)


@route(audit_api, "GET", "/api/v1/en_US/audit", need=Need.ROOT_ADMIN, response=AuditPage)
def audit_log(call: Call[None, AuditQuery, None]) -> AuditPage:
    """Every change recorded, newest first; `action` and `actorId` narrow it."""
    return deps.audit_service().page(None, call.query)
