"""In-memory stand-ins for the mailbox store and the secrets cipher, held to the real ones by
tests/store/test_mailbox_store_contract.py (the same scenarios against moto and against these).

The fake's records are plain objects with `MailboxRecord`'s attribute names and defaults (the
PynamoDB model's attribute access would cost the simulated day's million polls minutes), read out
as the store's own `mailbox_of` makes them frozen mailboxes; what a save and a poll write are the
store's own `edited_values` and `polled_values`, and the due index's keys its `due_index_values`,
so the due order is the store's.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.mailboxes import Mailbox, MailboxEdit, PollOutcome
from chalicelib.store.base import sort_moment
from chalicelib.store.mailboxes import (
    MailboxRecord,
    due_index_values,
    edited_values,
    mailbox_of,
    polled_values,
)

# Every attribute of the store's record, with its default (None for those without one).
_FIELDS = {
    name: (attribute.default() if callable(attribute.default) else attribute.default)
    for name, attribute in MailboxRecord.get_attributes().items()
}


class FakeMailboxRecord:
    """A mailbox item as a read answers it: `MailboxRecord`'s attributes, nothing else."""

    __slots__ = tuple(_FIELDS)

    def __init__(self, scope: str, **values: Any) -> None:
        for name, default in _FIELDS.items():
            setattr(self, name, values.get(name, default))
        self.scope = scope


def _read(record: FakeMailboxRecord) -> Mailbox:
    """The mailbox as a read from DynamoDB answers it (a frozen copy)."""
    return mailbox_of(record)


def _write(record: FakeMailboxRecord, values: Mapping[str, object]) -> None:
    for name, value in values.items():
        setattr(record, name, value)


class FakeMailboxRepository:
    """store/mailboxes.py `MailboxRepository` in memory; `announcements` are the outbox items its
    writes carried, `reads` counts the due index items read (a Query's items)."""

    def __init__(self) -> None:
        self._records: dict[str, FakeMailboxRecord] = {}
        # (due_key, scope) of every enabled mailbox, sorted: the due index.
        self._due: list[tuple[str, str]] = []
        self.announcements: list[Any] = []
        self.audit: list[Any] = []
        self.reads = 0

    # --- the due index ---------------------------------------------------------------------------

    def _unindex(self, record: FakeMailboxRecord) -> None:
        if record.due_key:
            position = bisect.bisect_left(self._due, (record.due_key, record.scope))
            if position < len(self._due) and self._due[position] == (
                record.due_key,
                record.scope,
            ):
                del self._due[position]

    def _index(self, record: FakeMailboxRecord) -> None:
        if record.due_key and record.enabled_kind:
            bisect.insort(self._due, (record.due_key, record.scope))

    def _set_due(self, record: FakeMailboxRecord, when: datetime) -> None:
        self._unindex(record)
        values = due_index_values(record.scope, when)
        record.next_poll_on = when
        record.due_shard, record.due_key = values["due_shard"], values["due_key"]
        self._index(record)

    # --- the repository --------------------------------------------------------------------------

    def prepare(self) -> None:
        pass

    def get(self, scope: str) -> Mailbox | None:
        found = self._records.get(scope)
        return _read(found) if found is not None else None

    def save_settings(
        self, scope: str, edit: MailboxEdit, audit: Any = (), read: Any = None
    ) -> Mailbox:
        record = self._records.get(scope) or FakeMailboxRecord(scope)
        _write(record, edited_values(edit))
        record.empty_polls, record.poll_failures, record.failing = 0, 0, None
        self._unindex(record)
        # Enabled and never polled (push only): enabled, out of the due index, as the store.
        record.enabled_kind = edit.kind if edit.is_enabled else None
        if edit.is_enabled and edit.next_poll_on is not None:
            self._records[scope] = record
            self._set_due(record, edit.next_poll_on)
        else:
            record.next_poll_on = record.due_shard = record.due_key = None
        self._records[scope] = record
        return _read(record)

    def poll_due_at(
        self, scope: str, when: datetime, *, not_since: datetime, audit: Any = ()
    ) -> tuple[Mailbox | None, bool]:
        record = self._records.get(scope)
        if record is None or not record.enabled_kind:
            return None, False
        if not record.server_name:  # push only: never made due
            return _read(record), False
        if record.poll_now_on is not None and record.poll_now_on > not_since:
            return _read(record), False
        self._set_due(record, when)
        record.empty_polls = 0
        record.poll_now_on = when
        return _read(record), True

    def record_poll(self, scope: str, poll: PollOutcome, announcements: Sequence[Any] = ()) -> bool:
        record = self._records.get(scope)
        if record is None or not record.enabled_kind:
            if record is not None:
                if poll.error is None:
                    self.record_last_processed(scope, poll.on)
                else:
                    self.record_poll_failed(scope, poll.on, poll.error)
            return False
        self._set_due(record, poll.next_poll_on)
        _write(record, polled_values(poll))
        for item in announcements:
            (self.audit if isinstance(item, AuditEntry) else self.announcements).append(item)
        return True

    def record_last_processed(self, scope: str, when: datetime) -> bool:
        record = self._records.get(scope)
        if record is None:
            return False
        record.last_processed = when
        record.last_error = record.last_error_on = None
        return True

    def record_poll_failed(self, scope: str, when: datetime, message: str) -> bool:
        record = self._records.get(scope)
        if record is None:
            return False
        record.last_error, record.last_error_on = message, when
        return True

    def enabled(self, kind: str) -> Iterator[Mailbox]:
        for scope in sorted(self._records):
            record = self._records[scope]
            if record.enabled_kind == kind:
                yield _read(record)

    def due_scopes(self, horizon: datetime) -> Iterator[str]:
        upper = f"{sort_moment(horizon)}#~"
        end = bisect.bisect_right(self._due, (upper, "\uffff"))
        found = [scope for _, scope in self._due[:end]]
        self.reads += len(found)
        return iter(found)

    def count_enabled(self) -> int:
        return len(self._due)

    def count_failing(self) -> int:
        return sum(1 for r in self._records.values() if r.enabled_kind and r.failing)


class FakeCipher:
    """KMS as `chalicelib.secrets` uses it, without the warm container's memory: `decrypts`
    counts the calls a container without that memory would make."""

    def __init__(self) -> None:
        self.decrypts = 0

    def encrypt(self, plaintext: str, context: Mapping[str, str]) -> bytes:
        scope = dict(context).get("agora:scope", "")
        return f"{scope}\x00{plaintext}".encode()

    def decrypt(self, ciphertext: bytes, context: Mapping[str, str]) -> str:
        self.decrypts += 1
        scope, _, plaintext = bytes(ciphertext).decode().partition("\x00")
        if scope != dict(context).get("agora:scope", ""):
            raise ValueError("InvalidCiphertextException: the context does not match")
        return plaintext


class FakeLeases:
    """store/mail.py's leases in memory: a conditional put with an expiry."""

    def __init__(self) -> None:
        self.held: dict[str, tuple[str, datetime]] = {}

    def acquire_lease(self, mailbox: str, owner: str, now: datetime, until: datetime) -> bool:
        held = self.held.get(mailbox)
        if held is not None and held[0] != owner and held[1] >= now:
            return False
        self.held[mailbox] = (owner, until)
        return True

    def release_lease(self, mailbox: str, owner: str) -> None:
        held = self.held.get(mailbox)
        if held is not None and held[0] == owner:
            del self.held[mailbox]
