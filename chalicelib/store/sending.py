"""What the outgoing mail (chalicelib/mail/outgoing.py) keeps: the addresses it never writes to,
and the sending rate's clock.

- Suppressed email addresses: a hard bounce or a complaint, reported by SES. Table
  `email-suppressions`, hash `address` (lower-cased). Nothing is sent to an address listed here
  until an administrator clears it.
- The sending clock (`SlotClock`): an item of the counters table (store/counters.py) whose value
  is the next free moment to send a mail, which every sender of the stack moves on by one
  interval with a conditional ADD.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pynamodb.attributes import UnicodeAttribute
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.clock import utc_now
from chalicelib.domain.suppressions import Suppression
from chalicelib.store import outbox
from chalicelib.store.base import UtcAttribute, conditionally, frozen, register, table_meta
from chalicelib.store.counters import CounterRecord


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


# --- the sending clock ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """A moment on a slot clock, in integer nanoseconds: the one taken, or (`taken` False, for a
    sender that lets instant mail go first) the moment until which instant mail holds the clock."""

    taken: bool
    at: int


class SlotClock:
    """Moments `interval` apart, each handed out once, across every process (`take_slot`)."""

    def take_slot(self, name: str, now: int, interval: int, *, first: bool) -> Slot:
        """The next free moment of the clock `name` that is not before `now` (all in ns), and
        the clock moved on by `interval` past it.

        `first` (instant mail): the clock is held for instant mail until the end of the moment
        taken; its sender takes its next moment right after it sent, so the hold lasts while it
        has mail. Otherwise (digests): refused while held (answering until when), so an instant
        sender never waits behind more than the moments the digests took before it came.

        One UpdateItem (ADD, on the condition that the clock is not behind `now`) while senders
        keep it busy; when it fell behind (nobody sent for a while), a read and a conditional
        SET to `now`. A lost race reads and tries again."""
        record = CounterRecord(name)
        value, held = CounterRecord.value, CounterRecord.first_until
        free = held.does_not_exist() | (held <= now)
        while True:
            ahead = value >= now
            actions: list[Any] = [value.add(interval)]
            if first:
                actions.append(held.set(value + interval))
            else:
                ahead &= free
            if _update(record, actions, ahead):
                return Slot(True, int(record.value) - interval)
            current = self._read(name)
            if not first and current is not None and (current.first_until or 0) > now:
                return Slot(False, int(current.first_until))
            if current is not None and int(current.value) >= now:
                continue  # it moved on between the two requests: take the next
            behind = value.does_not_exist() | (value < now)
            actions = [value.set(now + interval)]
            if first:
                actions.append(held.set(now + interval))
            else:
                behind &= free
            if _update(record, actions, behind):
                return Slot(True, now)

    @staticmethod
    def _read(name: str) -> CounterRecord | None:
        try:
            return CounterRecord.get(name, consistent_read=True)
        except CounterRecord.DoesNotExist:
            return None


def _update(record: CounterRecord, actions: list[Any], condition: Any) -> bool:
    return conditionally(lambda: record.update(actions=actions, condition=condition))
