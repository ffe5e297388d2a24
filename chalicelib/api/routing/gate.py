"""The auth gate: who calls, which group the route's privilege applies to, and whether they have it.

A caller without the declared privilege gets 403 whatever the body (CONTRACT §6): the gate runs
before the query and body are validated. Routes whose privilege depends on a stored record (an
event, a comment) declare SIGNED_IN and check it in the handler, before reading the body.
"""

from __future__ import annotations

from typing import Any

from chalicelib import deps
from chalicelib.api.routing.call import Call, RouteSpec
from chalicelib.api.routing.inputs import validate
from chalicelib.auth import Caller, Need, token_claims, token_from_headers
from chalicelib.errors import NotFound, Unauthorized
from chalicelib.schemas.common import parse_guid

# Privileges that apply to a group, which the route must name (`group=`).
GROUP_NEEDS = (Need.ENTER, Need.MODERATOR, Need.GROUP_ADMIN)


def authenticate(request: Any, path: str) -> Caller:
    """The caller of a request's token (401 without a valid one). A missing, malformed, expired
    or wrongly signed token is refused on the token alone, before the security service (and
    with it the user table, PynamoDB and the rest of the store) is built: a cold container
    answers such a request without loading them."""
    token = token_from_headers(request.headers, path)
    if not token:
        raise Unauthorized()
    user_id, version = token_claims(token)
    return deps.security_service().caller_for_claims(user_id, version)


def admit(call: Call[Any, Any, Any], path_values: dict[str, str]) -> None:
    """Authenticate, validate the path, find the route's group and check the privilege."""

    spec = call.spec
    assert spec is not None
    if spec.need is not None:
        call.caller = authenticate(call.request, spec.path)
    if spec.path_model is not None:
        call.path = validate(spec.path_model, path_values, "path")
    if spec.group_param is not None:
        call.group = group_of(call, spec.group_param)
    if call.caller is not None:
        require_route_privilege(call.caller, spec, call.group)


def require_route_privilege(caller: Caller, spec: RouteSpec, group: Any) -> None:
    """The route's declared privilege, on its group when it names one."""
    if spec.need in (None, Need.SIGNED_IN):
        return
    assert spec.need is not None
    # A body that names no existing group leaves the check to the service, after the body's
    # validation has said what is wrong with it.
    if group is not None or spec.need is Need.ROOT_ADMIN:
        caller.require(spec.need, group)
    elif spec.group_param is not None and spec.group_param.startswith("query."):
        # A query that narrows to a group is optional: without one (or with one that does not
        # exist) the route is the root administrator's.
        caller.require(Need.ROOT_ADMIN)


def group_of(call: Call[Any, Any, Any], param: str) -> Any:
    """The group a route's privilege applies to: from the path, a body field or the query."""
    if not param.startswith(("body.", "query.")):
        return deps.group_service().get(getattr(call.path, param), key=param)
    source, name = param.split(".", 1)
    if source == "query":
        value = (call.request.query_params or {}).get(name)
    else:
        raw = call.raw_body
        value = raw.get(name) if isinstance(raw, dict) else None
    group_id = parse_guid(value) if isinstance(value, str) else None
    if group_id is None:
        return None
    try:
        return deps.group_service().get(group_id, key=name)
    except NotFound:
        return None
