"""Atomic counters for integer ids (events, comments, sections): UpdateItem ADD, never read-then-write.

The same table keeps the sending rate's clock (`take_slot`): one item whose value is the next
free moment to send a mail, which every sender of the stack moves on by one interval with a
conditional ADD (chalicelib/mail/outgoing.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from chalicelib.store.base import conditionally, register, table_meta


@register
class CounterRecord(Model):
    Meta = table_meta("counters")

    name = UnicodeAttribute(hash_key=True)
    value = NumberAttribute(default=0)
    # The sending clock's only (SlotClock): until when instant mail holds it, in ns.
    first_until = NumberAttribute(null=True)


class CounterRepository:
    def next_value(self, name: str) -> int:
        counter = CounterRecord(name)
        counter.update(actions=[CounterRecord.value.add(1)])
        return int(counter.value)

    def stamp(self, name: str, value: int) -> None:
        """Set `name` to `value` (a job's last completed run, in epoch seconds)."""
        CounterRecord(name, value=value).save()

    def read(self, name: str) -> int | None:
        try:
            return int(CounterRecord.get(name, consistent_read=True).value)
        except CounterRecord.DoesNotExist:
            return None

    def raise_to(self, name: str, at_least: int) -> None:
        """Make sure ids handed out later start above `at_least` (loaded fixture ids)."""
        conditionally(
            lambda: CounterRecord(name).update(
                actions=[CounterRecord.value.set(at_least)],
                condition=CounterRecord.value.does_not_exist() | (CounterRecord.value < at_least),
            )
        )


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
