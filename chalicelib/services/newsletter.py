"""Group newsletter settings: the disclaimer, sanitised HTML, one document per group."""

from __future__ import annotations

from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject, text_field
from chalicelib.sanitize import clean_html
from chalicelib.schemas.newsletter import NewsletterSettingsOut, NewsletterSettingsUpdate
from chalicelib.services.audited import GroupSettings
from chalicelib.services.links import group_ref

KIND = "newsletterSettings"


class NewsletterService(GroupSettings[NewsletterSettingsOut]):
    KIND = KIND

    def update(
        self, group: Group, update: NewsletterSettingsUpdate, editor_id: str
    ) -> NewsletterSettingsOut:
        return self._save(group, {"disclaimer": clean_html(update.disclaimer)}, editor_id)

    @staticmethod
    def _out(group: Group, doc: JsonObject) -> NewsletterSettingsOut:
        # Never saved, the disclaimer answers "".
        return NewsletterSettingsOut(
            group=group_ref(group), disclaimer=text_field(doc, "disclaimer")
        )
