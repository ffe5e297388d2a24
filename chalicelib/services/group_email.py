"""Group email identity: one document per group; the group's name until it is saved."""

from __future__ import annotations

from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject, text_field
from chalicelib.schemas.group_email import GroupEmailOut, GroupEmailUpdate
from chalicelib.services.audited import GroupSettings
from chalicelib.services.links import group_ref

KIND = "groupEmail"


class GroupEmailService(GroupSettings[GroupEmailOut]):
    KIND = KIND

    def update(self, group: Group, update: GroupEmailUpdate, editor_id: str) -> GroupEmailOut:
        doc: JsonObject = {
            "email": update.email,
            "name": update.name,
            "newsletterName": update.newsletter_name or update.name,
        }
        return self._save(group, doc, editor_id)

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
