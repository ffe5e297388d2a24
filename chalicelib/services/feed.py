"""Group feed settings: one document per group; answers list every day and hour (CONTRACT §8)."""

from __future__ import annotations

from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject
from chalicelib.schemas.feed import (
    DEFAULT_TTL_MINUTES,
    HOURS,
    WEEKDAYS,
    FeedSettingsOut,
    FeedSettingsUpdate,
    NamedFlag,
)
from chalicelib.services.audited import GroupSettings
from chalicelib.services.links import group_ref

KIND = "feedSettings"


class FeedService(GroupSettings[FeedSettingsOut]):
    KIND = KIND  # never saved, it answers the defaults (_UNSAVED)

    def update(self, group: Group, update: FeedSettingsUpdate, editor_id: str) -> FeedSettingsOut:
        # The document is the update as the API names it, except that only the selected days
        # and hours are stored; the answer lists all of them.
        doc = update.model_dump(by_alias=True, exclude=set(_FLAGS))
        for name, alias in _FLAGS.items():
            doc[alias] = [flag.name for flag in getattr(update, name) if flag.selected]
        return self._save(group, doc, editor_id)

    @staticmethod
    def _out(group: Group, doc: JsonObject) -> FeedSettingsOut:
        days, hours = _selected(doc, "skipDays"), _selected(doc, "skipHours")
        return FeedSettingsOut.model_validate(
            {
                **_UNSAVED,
                **doc,
                "group": group_ref(group),
                "skipDays": [NamedFlag(name=day, selected=day in days) for day in WEEKDAYS],
                "skipHours": [NamedFlag(name=hour, selected=hour in hours) for hour in HOURS],
            }
        )


# The day and hour flags, stored as the names selected.
_FLAGS = {"skip_days": "skipDays", "skip_hours": "skipHours"}
# What a group that never saved its settings answers: blank texts, the default time to live.
_UNSAVED: JsonObject = {
    **{
        field.alias or name: ""
        for name, field in FeedSettingsUpdate.model_fields.items()
        if name not in _FLAGS
    },
    "ttl": DEFAULT_TTL_MINUTES,
}


def _selected(doc: JsonObject, key: str) -> set[str]:
    """The names a flag list of the document holds (stored as the names selected)."""
    names = doc.get(key)
    return {str(name) for name in names} if isinstance(names, list) else set()
