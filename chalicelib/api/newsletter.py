"""Group newsletter settings (spec "Newsletter settings"): group administrator (CONTRACT §5)."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.schemas.newsletter import NewsletterSettingsOut, NewsletterSettingsUpdate
from chalicelib.schemas.paths import GroupPath

newsletter_api = Blueprint(__name__)
PATH = "/api/v1/en_US/newsletter/settings/{groupId}"


@route(
    newsletter_api,
    "GET",
    PATH,
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=NewsletterSettingsOut,
)
def get_newsletter_settings(call: Call[GroupPath, None, None]) -> NewsletterSettingsOut:
    """A group's newsletter disclaimer."""
    return deps.newsletter_service().get(call.group)


@route(
    newsletter_api,
    "PUT",
    PATH,
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=NewsletterSettingsOut,
)
def update_newsletter_settings(
    call: Call[GroupPath, None, NewsletterSettingsUpdate],
) -> NewsletterSettingsOut:
    """Replace a group's newsletter disclaimer (sanitised HTML)."""
    return deps.newsletter_service().update(call.group, call.body, call.signed_in.user_id)
