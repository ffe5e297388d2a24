"""Group newsletter settings: the disclaimer, sanitised HTML, one document per group."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from chalicelib.domain.groups import Group
from chalicelib.domain.json import text_field
from chalicelib.domain.ports.content import DocumentStore
from chalicelib.sanitize import clean_html
from chalicelib.schemas.newsletter import NewsletterSettingsOut, NewsletterSettingsUpdate
from chalicelib.services.audited import put_group_document
from chalicelib.services.links import group_ref

KIND = "newsletterSettings"


class NewsletterService:
    def __init__(self, documents: DocumentStore, clock: Callable[[], datetime]) -> None:
        self.documents = documents
        self.clock = clock

    def get(self, group: Group) -> NewsletterSettingsOut:
        doc = self.documents.get(group.id, KIND) or {}
        return NewsletterSettingsOut(
            group=group_ref(group), disclaimer=text_field(doc, "disclaimer")
        )

    def update(
        self, group: Group, update: NewsletterSettingsUpdate, editor_id: str
    ) -> NewsletterSettingsOut:
        disclaimer = clean_html(update.disclaimer)
        put_group_document(
            self.documents,
            group.id,
            KIND,
            {"disclaimer": disclaimer},
            # Never saved, the disclaimer answers "".
            shown=lambda stored: {"disclaimer": text_field(stored, "disclaimer")},
            modified_on=self.clock(),
            editor_id=editor_id,
        )
        return NewsletterSettingsOut(group=group_ref(group), disclaimer=disclaimer)
