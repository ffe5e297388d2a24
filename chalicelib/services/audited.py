"""Writes of whole settings documents with their audit entry (CONTRACT §12): the document as it
was is read first (what the entry's `before` shows, and a save that changes nothing writes
nothing), then the new one and its entry are one transaction."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from chalicelib.domain import audit
from chalicelib.domain.json import JsonObject
from chalicelib.domain.ports.content import DocumentStore


def put_document(
    documents: DocumentStore,
    scope: str,
    kind: str,
    doc: JsonObject,
    *,
    group_id: str | None,
    secrets: Collection[str] = (),
    modified_on: datetime | None = None,
    editor_id: str | None = None,
) -> JsonObject:
    """Store `doc` as the document (`kind`, `scope`), recorded as `<kind>.update`; a document
    that already holds exactly `doc` is left as it is."""
    before = documents.get(scope, kind)
    entry = audit.entry(
        f"{kind}.update",
        target=(kind, scope),
        group_id=group_id,
        before=before or {},
        after=doc,
        secrets=secrets,
    )
    if not entry and before is not None:
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
    modified_on: datetime,
    editor_id: str,
) -> JsonObject:
    """A group's own settings document (feed, group email, newsletter), as `put_document`."""
    return put_document(
        documents, group_id, kind, doc,
        group_id=group_id, modified_on=modified_on, editor_id=editor_id,
    )  # fmt: skip
