"""Settings documents: one item per (scope, kind), scope a group id or `system`.

System pages, feed, group email, newsletter and connector settings are small documents read and
written whole; one table keeps them without a table per form.
"""

from __future__ import annotations

from typing import Unpack

from pynamodb.attributes import JSONAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.models import Model

from chalicelib.domain.json import JsonObject
from chalicelib.domain.ports.content import DocumentWrite
from chalicelib.store import outbox
from chalicelib.store.base import register, table_meta

SYSTEM_SCOPE = "system"


@register
class DocumentRecord(Model):
    Meta = table_meta("documents")

    scope = UnicodeAttribute(hash_key=True)
    kind = UnicodeAttribute(range_key=True)
    doc = JSONAttribute(default=dict)
    modified_on = UTCDateTimeAttribute(null=True)
    editor_id = UnicodeAttribute(null=True)


class DocumentRepository:
    def get(self, scope: str, kind: str) -> JsonObject | None:
        try:
            doc: JsonObject = DocumentRecord.get(scope, kind).doc
        except DocumentRecord.DoesNotExist:
            return None
        return doc

    def texts(self, scope: str, *kinds: str) -> list[dict[str, str]]:
        """The text fields of the scope's documents of each kind, in that order, read in one
        BatchGetItem ({} for one never saved): what a reader that wants their words takes, a
        field never saved or not text left out."""
        found = {
            record.kind: record.doc
            for record in DocumentRecord.batch_get([(scope, kind) for kind in dict.fromkeys(kinds)])
        }
        return [
            {key: value for key, value in found.get(kind, {}).items() if isinstance(value, str)}
            for kind in kinds
        ]

    def put(
        self, scope: str, kind: str, doc: JsonObject, **write: Unpack[DocumentWrite]
    ) -> JsonObject:
        """Store the document; its audit entries in the same transaction."""
        record = DocumentRecord(
            scope,
            kind,
            doc=doc,
            modified_on=write.get("modified_on"),
            editor_id=write.get("editor_id"),
        )
        audit = write.get("audit", ())
        if not audit:
            record.save()
            return doc

        outbox.save_with(record, audit)
        return doc
