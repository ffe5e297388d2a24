"""Every blueprint of the API, in the order of the spec's sections."""

from __future__ import annotations

from typing import Any

from chalicelib.api.alerts import alerts_api
from chalicelib.api.audit import audit_api
from chalicelib.api.comments import comments_api
from chalicelib.api.connectors import connectors_api
from chalicelib.api.console import console_api
from chalicelib.api.events import events_api
from chalicelib.api.feed import feed_api
from chalicelib.api.feed_keys import feed_keys_api
from chalicelib.api.group_email import group_email_api
from chalicelib.api.group_list import group_list_api
from chalicelib.api.mail_log import mail_log_api
from chalicelib.api.newsletter import newsletter_api
from chalicelib.api.notifications import notifications_api
from chalicelib.api.openapi import openapi_api
from chalicelib.api.player import player_api
from chalicelib.api.posts import posts_api
from chalicelib.api.profile import profile_api
from chalicelib.api.rss import rss_api
from chalicelib.api.security import security_api
from chalicelib.api.suppressions import suppressions_api
from chalicelib.api.system_pages import system_pages_api
from chalicelib.api.unsubscribe import unsubscribe_api
from chalicelib.api.user_search import user_search_api


def all_blueprints() -> list[Any]:
    return [
        security_api,
        connectors_api,
        mail_log_api,
        audit_api,
        system_pages_api,
        user_search_api,
        group_list_api,
        notifications_api,
        suppressions_api,
        alerts_api,
        player_api,
        feed_api,
        rss_api,
        feed_keys_api,
        unsubscribe_api,
        group_email_api,
        newsletter_api,
        events_api,
        profile_api,
        comments_api,
        posts_api,
        openapi_api,
        console_api,
    ]
