"""Settings documents: one item per (scope, kind), scope a group id or `system`.

System pages, feed, group email, newsletter and connector settings are small documents read and
written whole; one table keeps them without a table per form.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pynamodb.attributes import JSONAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.models import Model

from chalicelib.domain.json import JsonObject
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

    def put(
        self,
        scope: str,
        kind: str,
        doc: JsonObject,
        audit: Sequence[object] = (),
        *,
        modified_on: datetime | None = None,
        editor_id: str | None = None,
    ) -> JsonObject:
        """Store the document; `audit` (the change's entries) in the same transaction."""
        record = DocumentRecord(scope, kind, doc=doc, modified_on=modified_on, editor_id=editor_id)
        if not audit:
            record.save()
            return doc

        outbox.save_with(record, audit)
        return doc
