"""Writes of whole settings documents with their audit entry (CONTRACT §12): the document as it
was is read first, then the new one and its entry are one transaction.

The entry compares what the API answers, not what is stored: a document never saved answers its
defaults (a feed's time to live of 60 minutes, a group email signed with the group's name), and
those are the `before` the form showed; a field the answer shows the same either way is no
change. `shown` is that answer for a stored document (`{}`: never saved), by the API's names."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel

from chalicelib.domain import audit
from chalicelib.domain.groups import Group
from chalicelib.domain.json import JsonObject
from chalicelib.domain.ports.content import DocumentStore

# A document's fields as its GET answers them (`{}`: the document was never saved).
Shown = Callable[[JsonObject], Mapping[str, object]]


def put_document(
    documents: DocumentStore,
    scope: str,
    kind: str,
    doc: JsonObject,
    *,
    group_id: str | None,
    shown: Shown,
    secrets: Collection[str] = (),
    modified_on: datetime | None = None,
    editor_id: str | None = None,
) -> JsonObject:
    """Store `doc` as the document (`kind`, `scope`), recorded as `<kind>.update` with the
    fields whose answer changes; a save that changes no field of the answer writes nothing."""
    stored = documents.get(scope, kind)
    entry = audit.entry(
        f"{kind}.update",
        target=(kind, scope),
        group_id=group_id,
        before=shown(stored or {}),
        after=shown(doc),
        secrets=secrets,
    )
    if not entry:
        return doc
    return documents.put(
        scope, kind, doc, audit=entry, modified_on=modified_on, editor_id=editor_id
    )


def put_group_document(
    documents: DocumentStore,
    group_id: str,
    kind: str,
    doc: JsonObject,
    *,
    shown: Shown,
    modified_on: datetime,
    editor_id: str,
) -> JsonObject:
    """A group's own settings document (feed, group email, newsletter), as `put_document`."""
    return put_document(
        documents, group_id, kind, doc,
        group_id=group_id, shown=shown, modified_on=modified_on, editor_id=editor_id,
    )  # fmt: skip


Answer = TypeVar("Answer", bound=BaseModel)


class GroupSettings(Generic[Answer]):
    """A group's own settings of one `KIND` (feed, group email, newsletter): one document per
    group, answered by `_out` (`{}`: never saved, its defaults), saved with its audit entry."""

    KIND: ClassVar[str]

    def __init__(self, documents: DocumentStore, clock: Callable[[], datetime]) -> None:
        self.documents = documents
        self.clock = clock

    def get(self, group: Group) -> Answer:
        return self._out(group, self.documents.get(group.id, self.KIND) or {})

    def _save(self, group: Group, doc: JsonObject, editor_id: str) -> Answer:
        """Store `doc` as the group's document; the answer is the new document's."""
        put_group_document(
            self.documents,
            group.id,
            self.KIND,
            doc,
            shown=lambda stored: answered(self._out(group, stored)),
            modified_on=self.clock(),
            editor_id=editor_id,
        )
        return self._out(group, doc)

    def _out(self, group: Group, doc: JsonObject) -> Answer:
        raise NotImplementedError


def answered(
    model: BaseModel, *, without: Collection[str] = ("type", "group", "accessWarnings")
) -> dict[str, object]:
    """An answer's fields as JSON by the API's names, without those every answer carries."""
    fields = model.model_dump(mode="json", by_alias=True)
    return {name: value for name, value in fields.items() if name not in without}
