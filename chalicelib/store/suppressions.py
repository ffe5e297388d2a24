"""Suppressed email addresses: a hard bounce or a complaint, reported by SES.

Table `email-suppressions`, hash `address` (lower-cased). Nothing is sent to an address listed
here until an administrator clears it.
"""

from __future__ import annotations

from datetime import datetime

from pynamodb.attributes import UnicodeAttribute
from pynamodb.models import Model

from chalicelib.domain.suppressions import Suppression
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

    def clear(self, address: str) -> bool:
        record = _record(address)
        if record is None:
            return False
        record.delete()
        return True


def _record(address: str) -> SuppressionRecord | None:
    if not address.strip():
        return None
    try:
        return SuppressionRecord.get(normal(address))
    except SuppressionRecord.DoesNotExist:
        return None
