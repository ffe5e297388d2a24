"""A user's screen alerts and red label count (spec "Events"), and marking them read."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.schemas.alerts import AlertsQuery, UserAlertsOut
from chalicelib.schemas.paths import UserPath

alerts_api = Blueprint(__name__)
PREFIX = "/api/v1/en_US/user/{userId}/alerts"


@route(alerts_api, "GET", PREFIX, response=UserAlertsOut)
def list_alerts(call: Call[UserPath, AlertsQuery, None]) -> UserAlertsOut:
    """The red label count (`unreadCount`) and the latest alerts, newest first."""
    service = deps.alert_service()
    user = service.user(call.path.userId)
    service.require_reader(call.signed_in, user)
    return service.page(user, call.query)


@route(alerts_api, "POST", f"{PREFIX}/read", response=UserAlertsOut)
def mark_alerts_read(call: Call[UserPath, AlertsQuery, None]) -> UserAlertsOut:
    """Mark every alert read (the red label drops to 0); answers the first page."""
    service = deps.alert_service()
    user = service.user(call.path.userId)
    service.require_self(call.signed_in, user)
    return service.mark_read(user, call.query)
