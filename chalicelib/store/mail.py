"""Mail-in state: one item per mail handled (its log entry and its outcome), markers for the POP3
UIDLs already handled, and the lease that keeps two workers off one mailbox.

Table `mail`, hash `mailbox` (e.g. `post#<groupId>`, `comment#system`), range `sk`:
- `entry#<entry id>`: the mail's log entry; the entry id derives from (mailbox, Message-ID or
  content hash), so a mail has one entry however often it is seen. The sparse local index
  `received` orders entries by `received_key` (newest first for the log endpoints).
- `uidl#<uidl>`: this message on the server is handled (its entry id), so a kept mail is skipped
  without downloading it again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, LocalSecondaryIndex
from pynamodb.models import Model

from chalicelib.store.base import (
    UtcAttribute,
    conditionally,
    index_meta,
    index_start_key,
    moment_key,
    query_page,
    register,
    table_meta,
)

ENTRY = "entry#"
UIDL = "uidl#"


class ReceivedIndex(LocalSecondaryIndex):
    Meta = index_meta("received", AllProjection())
    mailbox = UnicodeAttribute(hash_key=True)
    received_key = UnicodeAttribute(range_key=True)


@register
class MailRecord(Model):
    Meta = table_meta("mail")

    mailbox = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)

    # Log entries
    entry_id = UnicodeAttribute(null=True)
    received_key = UnicodeAttribute(null=True)  # received_on + entry id: unique, sortable
    received_on = UtcAttribute(null=True)
    message_id = UnicodeAttribute(null=True)
    sender = UnicodeAttribute(null=True)
    subject = UnicodeAttribute(null=True)
    status = UnicodeAttribute(null=True)  # processing|posted|commented|ignored|rejected|failed
    reason = UnicodeAttribute(null=True)
    attempts = NumberAttribute(default=0)
    post_id = UnicodeAttribute(null=True)
    comment_id = NumberAttribute(null=True)

    received = ReceivedIndex()


@register
class MailboxLeaseRecord(Model):
    Meta = table_meta("mailbox-leases")

    mailbox = UnicodeAttribute(hash_key=True)
    owner = UnicodeAttribute()
    expires_on = UtcAttribute()


class MailRepository:
    def entry(self, mailbox: str, entry_id: str) -> MailRecord | None:
        try:
            return MailRecord.get(mailbox, ENTRY + entry_id, consistent_read=True)
        except MailRecord.DoesNotExist:
            return None

    def save_entry(self, record: MailRecord) -> MailRecord:
        record.sk = ENTRY + str(record.entry_id)
        record.save()
        return record

    def new_entry(
        self, mailbox: str, entry_id: str, received_on: datetime, **values: Any
    ) -> MailRecord:
        return MailRecord(
            mailbox,
            ENTRY + entry_id,
            entry_id=entry_id,
            received_on=received_on,
            received_key=moment_key(received_on, entry_id),
            **values,
        )

    def handled_uidls(self, mailbox: str, uidls: list[str]) -> dict[str, str]:
        """Which of these UIDLs are handled: {uidl: entry id} (BatchGetItem, 100 keys a request)."""
        if not uidls:
            return {}
        keys = [(mailbox, UIDL + uidl) for uidl in uidls]
        return {
            record.sk[len(UIDL) :]: str(record.entry_id)
            for record in MailRecord.batch_get(keys, consistent_read=True)
        }

    def mark_uidl(self, mailbox: str, uidl: str, entry_id: str) -> None:
        MailRecord(mailbox, UIDL + uidl, entry_id=entry_id).save()

    def page_newest_first(
        self, mailbox: str, *, limit: int, after: MailRecord | None
    ) -> list[MailRecord]:
        return query_page(
            MailRecord.received,
            mailbox,
            limit=limit,
            forward=False,
            start_key=index_start_key(after, MailRecord.received) if after else None,
        )

    # --- leases -------------------------------------------------------------------------------

    def acquire_lease(self, mailbox: str, owner: str, now: datetime, until: datetime) -> bool:
        """Take the mailbox unless another owner holds an unexpired lease (conditional put)."""
        lease = MailboxLeaseRecord(mailbox, owner=owner, expires_on=until)
        return conditionally(
            lambda: lease.save(
                condition=MailboxLeaseRecord.mailbox.does_not_exist()
                | (MailboxLeaseRecord.expires_on < now)
                | (MailboxLeaseRecord.owner == owner)
            )
        )

    def release_lease(self, mailbox: str, owner: str) -> None:
        # Not ours any more (expired and taken over): nothing to release.
        conditionally(
            lambda: MailboxLeaseRecord(mailbox).delete(condition=MailboxLeaseRecord.owner == owner)
        )
