"""Suppressed email addresses: a hard bounce or a complaint, reported by SES.

Table `email-suppressions`, hash `address` (lower-cased). Nothing is sent to an address listed
here until an administrator clears it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pynamodb.attributes import UnicodeAttribute
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.clock import utc_now
from chalicelib.domain.suppressions import Suppression
from chalicelib.store import outbox
from chalicelib.store.base import UtcAttribute, frozen, register, table_meta


@register
class SuppressionRecord(Model):
    Meta = table_meta("email-suppressions")

    address = UnicodeAttribute(hash_key=True)
    reason = UnicodeAttribute()  # bounce | complaint
    # The receiving server's words ("smtp; 550 5.1.1 user unknown") or the complaint's type.
    detail = UnicodeAttribute(default="")
    feedback_id = UnicodeAttribute(default="")
    suppressed_on = UtcAttribute()

    def as_suppression(self) -> Suppression:
        """The record as the rules hold it (domain/suppressions.py)."""
        return frozen(self, Suppression)


def normal(address: str) -> str:
    return address.strip().lower()


class SuppressionRepository:
    def get(self, address: str) -> Suppression | None:
        record = _record(address)
        return record.as_suppression() if record is not None else None

    def is_suppressed(self, address: str) -> bool:
        return self.get(address) is not None

    def suppress(
        self, address: str, reason: str, detail: str, feedback_id: str, now: datetime
    ) -> None:
        SuppressionRecord(
            normal(address),
            reason=reason,
            detail=detail[:1000],
            feedback_id=feedback_id[:200],
            suppressed_on=now,
        ).save()

    def clear(self, address: str, audit: Sequence[Any] = ()) -> bool:
        """Forget the address's suppression, with `audit` (the change's entries) in the same
        transaction; False, and nothing written, when it was not suppressed."""
        record = _record(address)
        if record is None:
            return False
        if not audit:
            record.delete()
            return True

        items = outbox.records(audit, utc_now())
        with TransactWrite(connection=SuppressionRecord._get_connection().connection) as write:
            write.delete(record)
            outbox.add_to(write, items)
        return True


def _record(address: str) -> SuppressionRecord | None:
    if not address.strip():
        return None
    try:
        return SuppressionRecord.get(normal(address))
    except SuppressionRecord.DoesNotExist:
        return None
