"""Clearing a suppressed email address (bounced for good, or reported as spam): an addition to
CONTRACT §10, for the `EMAIL_SUPPRESSED` access warning of the user's notification list.

Who may: the same administrators who may change the user's digest (CONTRACT §8): the root group
administrator, or an administrator of a group the user is a member of.
"""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.notifications import digest_managed_user
from chalicelib.api.routing import Call, route
from chalicelib.schemas.paths import UserPath
from chalicelib.schemas.suppressions import SuppressionCleared

suppressions_api = Blueprint(__name__)
PATH = "/api/v1/en_US/user/{userId}/email-suppression"


@route(suppressions_api, "DELETE", PATH, response=SuppressionCleared)
def clear_email_suppression(call: Call[UserPath, None, None]) -> SuppressionCleared:
    """Send notification and digest email to the user's address again (after a bounce)."""
    _service, user = digest_managed_user(call.path.userId, call.signed_in)
    cleared = deps.suppression_service().clear(user.email, user.id)
    return SuppressionCleared(user_id=user.id, user_email=user.email, cleared=cleared)
