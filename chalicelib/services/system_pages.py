"""System pages: stored as documents, content sanitised before it is stored."""

from __future__ import annotations

from chalicelib.clock import utc_now
from chalicelib.domain.json import JsonObject
from chalicelib.domain.ports.content import DocumentStore
from chalicelib.sanitize import clean_html
from chalicelib.schemas.common import Record
from chalicelib.schemas.system_pages import (
    HomePageOut,
    PageUpdate,
    PremiumLandingPageOut,
    PremiumPageUpdate,
    PrivateLandingPageOut,
)
from chalicelib.services.audited import answered, put_document

SYSTEM_SCOPE = "system"
HOME = "homePage"
PRIVATE = "privateLandingPage"
PREMIUM = "premiumLandingPage"


class SystemPageService:
    def __init__(self, documents: DocumentStore) -> None:
        self.documents = documents

    def home_page(self) -> HomePageOut:
        return HomePageOut.model_validate(self.documents.get(SYSTEM_SCOPE, HOME) or {})

    def update_home_page(self, update: PageUpdate, editor_id: str) -> HomePageOut:
        doc: JsonObject = {"content": clean_html(update.content)}
        stored = self._put(SYSTEM_SCOPE, HOME, doc, editor_id, HomePageOut)
        return HomePageOut.model_validate(stored)

    def private_landing_page(self, group_id: str) -> PrivateLandingPageOut:
        return PrivateLandingPageOut.model_validate(self.documents.get(group_id, PRIVATE) or {})

    def update_private_landing_page(
        self, group_id: str, update: PageUpdate, editor_id: str
    ) -> PrivateLandingPageOut:
        doc: JsonObject = {"content": clean_html(update.content)}
        stored = self._put(group_id, PRIVATE, doc, editor_id, PrivateLandingPageOut)
        return PrivateLandingPageOut.model_validate(stored)

    def premium_landing_page(self, group_id: str) -> PremiumLandingPageOut:
        doc = self.documents.get(group_id, PREMIUM) or {}
        return PremiumLandingPageOut.model_validate(doc)

    def update_premium_landing_page(
        self, group_id: str, update: PremiumPageUpdate, editor_id: str
    ) -> PremiumLandingPageOut:
        page = PremiumLandingPageOut(
            is_enabled=update.is_enabled, content=clean_html(update.content)
        )
        # The document is the page as the API names it, without what every answer carries.
        doc = page.model_dump(by_alias=True, exclude={"type", "access_warnings"})
        self._put(group_id, PREMIUM, doc, editor_id, PremiumLandingPageOut)
        return page

    def _put(
        self, scope: str, kind: str, doc: JsonObject, editor_id: str, out: type[Record]
    ) -> JsonObject:
        group_id = None if scope == SYSTEM_SCOPE else scope
        return put_document(
            self.documents,
            scope,
            kind,
            doc,
            group_id=group_id,
            # A page never saved answers its defaults (no content, not enabled).
            shown=lambda stored: answered(out.model_validate(stored)),
            modified_on=utc_now(),
            editor_id=editor_id,
        )
