"""Sign-in (CONTRACT §5): the one route that needs no token."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.schemas.security import LoginRequest

security_api = Blueprint(__name__)


@route(security_api, "POST", "/api/v1/en_US/security/login", need=None, response=str, secret=True)
def login(call: Call[None, None, LoginRequest]) -> str:
    """Exchange an email address and password for a token valid 8 hours."""
    identity = (call.request.context or {}).get("identity") or {}
    return deps.security_service().login(
        call.body.email, call.body.password, identity.get("sourceIp")
    )
