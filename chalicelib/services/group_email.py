"""Group email identity: one document per group; the group's name until it is saved."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject, text_field
from chalicelib.domain.ports.content import DocumentStore
from chalicelib.schemas.group_email import GroupEmailOut, GroupEmailUpdate
from chalicelib.services.audited import answered, put_group_document
from chalicelib.services.links import group_ref

KIND = "groupEmail"


class GroupEmailService:
    def __init__(self, documents: DocumentStore, clock: Callable[[], datetime]) -> None:
        self.documents = documents
        self.clock = clock

    def get(self, group: Group) -> GroupEmailOut:
        return self._out(group, self.documents.get(group.id, KIND) or {})

    def update(self, group: Group, update: GroupEmailUpdate, editor_id: str) -> GroupEmailOut:
        doc: JsonObject = {
            "email": update.email,
            "name": update.name,
            "newsletterName": update.newsletter_name or update.name,
        }
        put_group_document(
            self.documents,
            group.id,
            KIND,
            doc,
            shown=lambda stored: answered(self._out(group, stored)),
            modified_on=self.clock(),
            editor_id=editor_id,
        )
        return self._out(group, doc)

    @staticmethod
    def _out(group: Group, doc: JsonObject) -> GroupEmailOut:
        # Unsaved: no address yet, and generated emails are signed with the group's name.
        name = text_field(doc, "name") or group.name
        return GroupEmailOut(
            group=group_ref(group),
            email=text_field(doc, "email"),
            name=name,
            newsletter_name=text_field(doc, "newsletterName") or name,
        )
