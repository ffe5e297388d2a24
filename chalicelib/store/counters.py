"""Atomic counters for integer ids (events, comments, sections): UpdateItem ADD, never read-then-write.

The same table keeps the sending rate's clock: one item whose value is the next free moment to
send a mail (store/sending.py `SlotClock`, with the rest of what the outgoing mail keeps).
"""

from __future__ import annotations

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
