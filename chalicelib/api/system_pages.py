"""System pages (spec "System pages"): home page, private and premium landing pages."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.schemas.paths import GroupPath
from chalicelib.schemas.system_pages import (
    HomePageOut,
    PageUpdate,
    PremiumLandingPageOut,
    PremiumPageUpdate,
    PrivateLandingPageOut,
)

system_pages_api = Blueprint(__name__)
PREFIX = "/api/v1/en_US/system-page"


@route(system_pages_api, "GET", f"{PREFIX}/home-page", need=Need.ROOT_ADMIN, response=HomePageOut)
def get_home_page(call: Call[None, None, None]) -> HomePageOut:
    """The home page."""
    return deps.system_page_service().home_page()


@route(
    system_pages_api,
    "PUT",
    f"{PREFIX}/home-page",
    need=Need.ROOT_ADMIN,
    response=HomePageOut,
)
def update_home_page(call: Call[None, None, PageUpdate]) -> HomePageOut:
    """Replace the home page's content (sanitised)."""
    return deps.system_page_service().update_home_page(call.body, call.signed_in.user_id)


@route(
    system_pages_api,
    "GET",
    f"{PREFIX}/private-landing-page/group/{{groupId}}",
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=PrivateLandingPageOut,
)
def get_private_landing_page(call: Call[GroupPath, None, None]) -> PrivateLandingPageOut:
    """The page shown to visitors of a private group who may not enter."""
    return deps.system_page_service().private_landing_page(call.group.id)


@route(
    system_pages_api,
    "PUT",
    f"{PREFIX}/private-landing-page/group/{{groupId}}",
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=PrivateLandingPageOut,
)
def update_private_landing_page(call: Call[GroupPath, None, PageUpdate]) -> PrivateLandingPageOut:
    """Replace a group's private landing page."""
    return deps.system_page_service().update_private_landing_page(
        call.group.id, call.body, call.signed_in.user_id
    )


@route(
    system_pages_api,
    "GET",
    f"{PREFIX}/premium-landing-page/group/{{groupId}}",
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=PremiumLandingPageOut,
)
def get_premium_landing_page(call: Call[GroupPath, None, None]) -> PremiumLandingPageOut:
    """The page shown to visitors of a premium group who may not enter."""
    return deps.system_page_service().premium_landing_page(call.group.id)


@route(
    system_pages_api,
    "PUT",
    f"{PREFIX}/premium-landing-page/group/{{groupId}}",
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=PremiumLandingPageOut,
)
def update_premium_landing_page(
    call: Call[GroupPath, None, PremiumPageUpdate],
) -> PremiumLandingPageOut:
    """Enable or disable a group's premium landing page and replace its content."""
    return deps.system_page_service().update_premium_landing_page(
        call.group.id, call.body, call.signed_in.user_id
    )
