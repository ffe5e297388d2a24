"""Group newsletter settings (spec "Newsletter settings"): group administrator (CONTRACT §5)."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.group_settings import group_settings_routes
from chalicelib.api.routing import Routes
from chalicelib.auth import Need
from chalicelib.schemas.newsletter import NewsletterSettingsOut, NewsletterSettingsUpdate

newsletter_api = Blueprint(__name__)
PATH = "/api/v1/en_US/newsletter/settings/{groupId}"

group_settings_routes(
    Routes(newsletter_api, Need.GROUP_ADMIN, "groupId"),
    PATH,
    deps.newsletter_service,
    (NewsletterSettingsOut, NewsletterSettingsUpdate),
    get=("get_newsletter_settings", "A group's newsletter disclaimer."),
    put=("update_newsletter_settings", "Replace a group's newsletter disclaimer (sanitised HTML)."),
)
