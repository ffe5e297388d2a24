"""System pages (spec "System pages"): home page, private and premium landing pages."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, Routes
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
group_admin = Routes(system_pages_api, Need.GROUP_ADMIN, "groupId")
root_admin = Routes(system_pages_api, Need.ROOT_ADMIN)


@root_admin("GET", f"{PREFIX}/home-page", HomePageOut)
def get_home_page(call: Call[None, None, None]) -> HomePageOut:
    """The home page."""
    return deps.system_page_service().home_page()


@root_admin("PUT", f"{PREFIX}/home-page", HomePageOut)
def update_home_page(call: Call[None, None, PageUpdate]) -> HomePageOut:
    """Replace the home page's content (sanitised)."""
    return deps.system_page_service().update_home_page(call.body, call.signed_in.user_id)


@group_admin("GET", f"{PREFIX}/private-landing-page/group/{{groupId}}", PrivateLandingPageOut)
def get_private_landing_page(call: Call[GroupPath, None, None]) -> PrivateLandingPageOut:
    """The page shown to visitors of a private group who may not enter."""
    return deps.system_page_service().private_landing_page(call.group.id)


@group_admin("PUT", f"{PREFIX}/private-landing-page/group/{{groupId}}", PrivateLandingPageOut)
def update_private_landing_page(call: Call[GroupPath, None, PageUpdate]) -> PrivateLandingPageOut:
    """Replace a group's private landing page."""
    return deps.system_page_service().update_private_landing_page(
        call.group.id, call.body, call.signed_in.user_id
    )


@group_admin("GET", f"{PREFIX}/premium-landing-page/group/{{groupId}}", PremiumLandingPageOut)
def get_premium_landing_page(call: Call[GroupPath, None, None]) -> PremiumLandingPageOut:
    """The page shown to visitors of a premium group who may not enter."""
    return deps.system_page_service().premium_landing_page(call.group.id)


@group_admin("PUT", f"{PREFIX}/premium-landing-page/group/{{groupId}}", PremiumLandingPageOut)
def update_premium_landing_page(
    call: Call[GroupPath, None, PremiumPageUpdate],
) -> PremiumLandingPageOut:
    """Enable or disable a group's premium landing page and replace its content."""
    return deps.system_page_service().update_premium_landing_page(
        call.group.id, call.body, call.signed_in.user_id
    )
