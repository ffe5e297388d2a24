"""The profile structure: its sections and fields, as items of one partition.

The structure is small administration data read whole (GET /profile is one Query of one key) and
changed a few records at a time: a write moves its neighbours' positions in the same transaction,
and every item carries a version, so two administrators editing at once cannot interleave (the
later transaction fails and is answered 409).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pynamodb.attributes import (
    JSONAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import TransactWriteError
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.aws import error_code, is_unavailable
from chalicelib.clock import utc_now
from chalicelib.store import outbox
from chalicelib.store.base import nullable, register, table_meta, transact
from chalicelib.store.counters import CounterRepository

STRUCTURE = "profile"
SECTION_COUNTER = "profileSections"
# DynamoDB's limit of items in one transaction.
TRANSACTION_ITEMS = 100


@register
class ProfileItemRecord(Model):
    """A section (`kind` "section", `section_id` its id) or a field (`kind` "field")."""

    Meta = table_meta("profile")

    structure = UnicodeAttribute(hash_key=True)
    # "section#<id, zero-padded>" or "field#<guid>".
    item_key = UnicodeAttribute(range_key=True)
    kind = UnicodeAttribute()
    name = UnicodeAttribute()
    position = NumberAttribute()
    section_id = NumberAttribute()
    default_visibility_id = nullable(NumberAttribute(null=True))
    field_id = nullable(UnicodeAttribute(null=True))
    type_id = nullable(NumberAttribute(null=True))
    parent_id = nullable(UnicodeAttribute(null=True))
    parent_selected_value_id = nullable(UnicodeAttribute(null=True))
    data = JSONAttribute(null=True)
    version = VersionAttribute()


class StaleStructure(Exception):
    """The structure changed between our read and our write."""


class ProfileRepository:
    def load(self) -> list[ProfileItemRecord]:
        """Every section and field: one Query (DynamoDB pages it past 1 MB)."""
        return list(ProfileItemRecord.query(STRUCTURE))

    def next_section_id(self) -> int:
        return CounterRepository().next_value(SECTION_COUNTER)

    def new_section(self, section_id: int, **values: Any) -> ProfileItemRecord:
        return ProfileItemRecord(
            STRUCTURE, f"section#{section_id:010d}", kind="section", section_id=section_id, **values
        )

    def new_field(self, field_id: str, **values: Any) -> ProfileItemRecord:
        return ProfileItemRecord(
            STRUCTURE, f"field#{field_id}", kind="field", field_id=field_id, **values
        )

    def commit(
        self,
        saves: Iterable[ProfileItemRecord] = (),
        moves: Iterable[ProfileItemRecord] = (),
        deletes: Iterable[ProfileItemRecord] = (),
        audit: Sequence[Any] = (),
    ) -> None:
        """Write records whole (`saves`), their new `position` only (`moves`), and deletions.

        One transaction, each item conditioned on the version read, with `audit` (the change's
        entries); past DynamoDB's 100 items (a section with more than 98 fields to shift) it
        goes on in further transactions, the entries in the first.
        """

        riders = outbox.records(audit, utc_now())
        operations: list[tuple[str, Any]] = [
            *(("rider", r) for r in riders),
            *(("save", r) for r in saves),
            *(("move", r) for r in moves),
            *(("delete", r) for r in deletes),
        ]
        connection = ProfileItemRecord._get_connection().connection
        for start in range(0, len(operations), TRANSACTION_ITEMS):
            chunk = operations[start : start + TRANSACTION_ITEMS]

            def fill(transaction: TransactWrite, chunk: list = chunk) -> None:
                for operation, record in chunk:
                    if operation in ("save", "rider"):
                        transaction.save(record)
                    elif operation == "move":
                        transaction.update(
                            record, actions=[ProfileItemRecord.position.set(record.position)]
                        )
                    else:
                        transaction.delete(record)

            try:
                transact(connection, fill)
            except TransactWriteError as error:
                if error_code(error) == "TransactionCanceledException" and not (
                    is_unavailable(error)
                ):
                    raise StaleStructure() from error
                raise
