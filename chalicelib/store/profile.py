"""The profile structure: its sections and fields, as items of one partition.

The structure is small administration data read whole (GET /profile is one Query of one key) and
changed a few records at a time: a write moves its neighbours' positions in the same transaction,
and every item carries a version, so two administrators editing at once cannot interleave (the
later transaction fails and is answered 409).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

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
from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.profile import ProfileField, ProfileItem, ProfileSection, StaleStructure
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
    field_id = nullable(UnicodeAttribute(null=True))
    name = UnicodeAttribute()
    position = NumberAttribute()
    # A section's own id; a field's section.
    section_id = NumberAttribute()
    default_visibility_id = nullable(NumberAttribute(null=True))
    type_id = nullable(NumberAttribute(null=True))
    parent_id = nullable(UnicodeAttribute(null=True))
    parent_selected_value_id = nullable(UnicodeAttribute(null=True))
    data = JSONAttribute(null=True)
    version = VersionAttribute()

    def as_item(self) -> ProfileItem:
        """The item as the rules hold it (domain/profile.py)."""
        version = None if self.version is None else int(self.version)
        if self.kind == "section":
            visibility = self.default_visibility_id
            return ProfileSection(
                section_id=int(self.section_id),
                name=self.name,
                position=int(self.position),
                default_visibility_id=None if visibility is None else int(visibility),
                version=version,
            )
        return ProfileField(
            field_id=self.field_id or "",
            name=self.name,
            position=int(self.position),
            section_id=int(self.section_id),
            type_id=int(self.type_id or 0),
            parent_id=self.parent_id,
            parent_selected_value_id=self.parent_selected_value_id,
            data=dict(self.data or {}),
            version=version,
        )

    @classmethod
    def of(cls, item: ProfileItem) -> ProfileItemRecord:
        """The stored item of `item`, at the version it was read at (its writes are conditioned
        on that version: PynamoDB's VersionAttribute)."""
        record = cls(
            STRUCTURE,
            item.item_key,
            kind=item.kind,
            name=item.name,
            position=item.position,
            section_id=item.section_id,
        )
        if item.version is not None:
            record.version = item.version
        if isinstance(item, ProfileSection):
            record.default_visibility_id = item.default_visibility_id
        else:
            record.field_id = item.field_id
            record.type_id = item.type_id
            record.parent_id = item.parent_id
            record.parent_selected_value_id = item.parent_selected_value_id
            record.data = item.data
        return record


Operation = Literal["rider", "save", "move", "delete"]


class ProfileRepository:
    def load(self) -> list[ProfileItem]:
        """Every section and field: one Query (DynamoDB pages it past 1 MB)."""
        return [item.as_item() for item in ProfileItemRecord.query(STRUCTURE)]

    def next_section_id(self) -> int:
        return CounterRepository().next_value(SECTION_COUNTER)

    def commit(
        self,
        saves: Iterable[ProfileItem] = (),
        moves: Iterable[ProfileItem] = (),
        deletes: Iterable[ProfileItem] = (),
        audit: Sequence[AuditEntry] = (),
    ) -> None:
        """Write records whole (`saves`), their new `position` only (`moves`), and deletions.

        One transaction, each item conditioned on the version read, with `audit` (the change's
        entries); past DynamoDB's 100 items (a section with more than 98 fields to shift) it
        goes on in further transactions, the entries in the first.
        """

        riders = outbox.records(audit, utc_now())
        operations: list[tuple[Operation, Model]] = [
            *(("rider", r) for r in riders),
            *(("save", ProfileItemRecord.of(r)) for r in saves),
            *(("move", ProfileItemRecord.of(r)) for r in moves),
            *(("delete", ProfileItemRecord.of(r)) for r in deletes),
        ]
        connection = ProfileItemRecord._get_connection().connection
        for start in range(0, len(operations), TRANSACTION_ITEMS):
            chunk = operations[start : start + TRANSACTION_ITEMS]

            def fill(
                transaction: TransactWrite, chunk: list[tuple[Operation, Model]] = chunk
            ) -> None:
                for operation, record in chunk:
                    if operation == "move" and isinstance(record, ProfileItemRecord):
                        moved = ProfileItemRecord.position.set(record.position)
                        transaction.update(record, actions=[moved])
                    elif operation == "delete":
                        transaction.delete(record)
                    else:
                        transaction.save(record)

            try:
                transact(connection, fill)
            except TransactWriteError as error:
                if error_code(error) == "TransactionCanceledException" and not (
                    is_unavailable(error)
                ):
                    raise StaleStructure() from error
                raise
