"""Atomic counters for integer ids (events, comments, sections): UpdateItem ADD, never read-then-write."""

from __future__ import annotations

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from chalicelib.store.base import conditionally, register, table_meta


@register
class CounterRecord(Model):
    Meta = table_meta("counters")

    name = UnicodeAttribute(hash_key=True)
    value = NumberAttribute(default=0)


class CounterRepository:
    def next_value(self, name: str) -> int:
        counter = CounterRecord(name)
        counter.update(actions=[CounterRecord.value.add(1)])
        return int(counter.value)

    def raise_to(self, name: str, at_least: int) -> None:
        """Make sure ids handed out later start above `at_least` (loaded fixture ids)."""
        conditionally(
            lambda: CounterRecord(name).update(
                actions=[CounterRecord.value.set(at_least)],
                condition=CounterRecord.value.does_not_exist() | (CounterRecord.value < at_least),
            )
        )
