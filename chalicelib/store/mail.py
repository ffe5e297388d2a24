"""Mail-in state: one item per mail handled (its log entry and its outcome), markers for the POP3
UIDLs already handled, and the lease that keeps two workers off one mailbox.

Table `mail`, hash `mailbox` (e.g. `post#<groupId>`, `comment#system`), range `sk`:
- `entry#<entry id>`: the mail's log entry; the entry id derives from (mailbox, Message-ID or
  content hash), so a mail has one entry however often it is seen. The sparse local index
  `received` orders entries by `received_key` (newest first for the log endpoints).
  The sparse global index `by-status` lists a mailbox's entries of one status, newest first:
  its hash `status_mailbox` is `<mailbox>#<listed status>` (the status the mail log shows:
  `domain.mailboxes.listed`), its range the same `received_key`; set on every write of an entry.
- hash `notice#<sender address>`, range `day#<YYYY-MM-DD>`: the one notice of that UTC day to a
  rejected mail's sender (CONTRACT §9), claimed by a conditional put for one entry before that
  entry is written, marked `sending_on` while the drain sends it (so a repeated event sends
  nothing twice) and `notice_message_id` once sent; it expires (`expires`, TTL) after
  NOTICE_KEPT, once no redrive of the outbox can tell its event again.
  A notice the drain could not send (the address suppressed since, no group, SES refusing)
  says `notice_sent` false on its entry.
- `notice-refused#<entry id>`: the drain could not send that entry's notice (`NoticeClaims.
  not_sent`); keys, `entry_id` and a TTL (NOTICE_KEPT): no log index lists it, no read takes it
  for an entry, and no write of the entry replaces it. The poll writes an entry told a notice in
  one transaction that checks it is absent (`_put_told`), else writes the entry saying false:
  the drain may come before the entry is written (the outbox goes first), or between a crashed
  poll's count of the mail and its retry's (which puts the entry whole), and the entry says
  false all the same. The last release's drain noted the false at the entry's key instead
  (keys, `notice_sent` false, a TTL: `_written` skips it); the told write's condition on the
  entry still honours such a note.
- `uidl#<account>#<uidl>`: this message on the server is handled (its entry id and final status),
  so a kept mail is skipped without downloading it again. `<account>` hashes server, port and
  user name: RFC 1939 makes a UIDL unique only within one maildrop, so a connector pointed at
  another account must not take that account's mail for handled.

Markers and entries are read and written in batches (BatchGetItem, BatchWriteItem): a poll costs a
few requests per chunk of mails, not per mail. An entry told a notice (at most one a sender a day)
is written alone, in its transaction (`_put_told`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Unpack

from pynamodb.attributes import BooleanAttribute, NumberAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.exceptions import TransactWriteError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, LocalSecondaryIndex
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.aws import cancellation_codes, error_code
from chalicelib.domain.mailboxes import (
    VIA_POP3,
    Finish,
    LogEntry,
    Quarantine,
    Skip,
    Step,
    listed,
    played,
)
from chalicelib.domain.ports.mail import EntryHeaders, MailLog, MailLogPages, Marker
from chalicelib.store.base import (
    UtcAttribute,
    conditionally,
    frozen,
    index_meta,
    index_start_key,
    moment_key,
    query_page,
    read_through,
    register,
    remember,
    table_meta,
    transact,
)

ENTRY = "entry#"


class EntryValues(EntryHeaders, total=False):
    """An entry's headers and, seeding the log (tests, the console), what a poll left on it."""

    status: str | None
    reason: str | None
    post_id: str | None
    attempts: int
    notice_sent: bool


UIDL = "uidl#"


def status_partition(mailbox: str, status: str) -> str:
    """The `by-status` hash of a mailbox's entries listed as `status`."""
    return f"{mailbox}#{listed(status)}"


class ReceivedIndex(LocalSecondaryIndex):
    Meta = index_meta("received", AllProjection())
    mailbox = UnicodeAttribute(hash_key=True)
    received_key = UnicodeAttribute(range_key=True)


class StatusIndex(GlobalSecondaryIndex):
    Meta = index_meta("by-status", AllProjection())
    status_mailbox = UnicodeAttribute(hash_key=True)
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
    status_mailbox = UnicodeAttribute(null=True)  # entries only: `status_partition`
    via = UnicodeAttribute(null=True)  # pop3 | push; absent (written before push): pop3
    notice_sent = BooleanAttribute(null=True)  # set only when True (CONTRACT §9)

    # A sender's notice of a day (`notice#<address>`, `day#<YYYY-MM-DD>`): which entry claimed it.
    sending_on = UtcAttribute(null=True)
    notice_message_id = UnicodeAttribute(null=True)
    expires = TTLAttribute(null=True)

    received = ReceivedIndex()
    by_status = StatusIndex()


@register
class MailboxLeaseRecord(Model):
    Meta = table_meta("mailbox-leases")

    mailbox = UnicodeAttribute(hash_key=True)
    owner = UnicodeAttribute()
    expires_on = UtcAttribute()


def _written(item: MailRecord) -> bool:
    """An entry written by mail in, not the last release's drain's note of a notice not sent,
    written at the key of an entry to come: that note has no place in the log (`received_key`)."""
    return item.received_key is not None


def _entry(item: MailRecord) -> LogEntry:
    """An entry item as the rules hold it."""
    return frozen(
        item,
        LogEntry,
        entry_id=item.entry_id or item.sk[len(ENTRY) :],
        attempts=int(item.attempts or 0),
        comment_id=None if item.comment_id is None else int(item.comment_id),
        via=item.via or VIA_POP3,
        notice_sent=bool(item.notice_sent),
    )


def _item(entry: LogEntry) -> MailRecord:
    """The item an entry is stored as, with its index keys (`received`, `by-status`)."""
    values = asdict(entry)
    if not values["notice_sent"]:
        del values["notice_sent"]  # absent reads False: entries stay as they were
    item = MailRecord(
        values.pop("mailbox"),
        ENTRY + entry.entry_id,
        received_key=moment_key(entry.received_on, entry.entry_id),
        **values,
    )
    if entry.status:
        item.status_mailbox = status_partition(entry.mailbox, entry.status)
    return item


def _place(entry: LogEntry) -> MailRecord:
    """The keys of an entry's place in the log (its receipt time never changes): where a page
    that ends on it goes on."""
    return MailRecord(
        entry.mailbox,
        ENTRY + entry.entry_id,
        received_key=moment_key(entry.received_on, entry.entry_id),
    )


NOTICE = "notice#"
NOTICE_DAY = "day#"
# Longer than any event of the outbox can be told again: the drain's dead letters are kept 14
# days (infra/build.py), and `redrive-outbox` tells their records again. A notice's event that
# finds no claim (services/mail_in/notices.py) was then never sent, and says so.
NOTICE_KEPT = timedelta(days=15)


# `<mailbox>`, `notice-refused#<entry id>`: the drain could not send the entry's notice.
REFUSED = "notice-refused#"


def _notice_key(address: str, day: str) -> tuple[str, str]:
    return NOTICE + address.strip().lower(), NOTICE_DAY + day


class NoticeClaims:
    """At most one notice a sender a day (CONTRACT §9): services/mail_in/notices.py."""

    def holder(self, address: str, day: str) -> str | None:
        """The entry that claimed the sender's notice of `day`, or None."""
        try:
            item = MailRecord.get(*_notice_key(address, day), consistent_read=True)
        except MailRecord.DoesNotExist:
            return None
        return item.entry_id

    def claim(self, address: str, day: str, mailbox: str, entry_id: str, now: datetime) -> bool:
        """Take the sender's notice of `day` for this entry (a conditional put: two workers
        racing, one wins); True too when this entry holds it already (a retry of the mail),
        which leaves the claim as it is: a put would drop the drain's mark that the notice is
        being sent or went (`sending_on`), and the retry's event would send it again."""
        hash_key, range_key = _notice_key(address, day)
        record = MailRecord(
            hash_key,
            range_key,
            entry_id=entry_id,
            received_on=now,
            expires=now + NOTICE_KEPT,
        )
        if conditionally(lambda: record.save(condition=MailRecord.sk.does_not_exist())):
            return True
        return self.holder(address, day) == entry_id

    def begin_sending(self, address: str, day: str, entry_id: str, now: datetime) -> bool:
        """Mark the claimed notice as being sent (once: a repeated event finds it marked)."""
        record = MailRecord(*_notice_key(address, day))
        return conditionally(
            lambda: record.update(
                actions=[MailRecord.sending_on.set(now)],
                condition=(MailRecord.entry_id == entry_id)
                & MailRecord.sending_on.does_not_exist(),
            )
        )

    def release(self, address: str, day: str) -> None:
        """The send failed: the next delivery of the event may try again."""
        record = MailRecord(*_notice_key(address, day))
        # Only a claim still stored: an update of a claim expired since would make a bare item
        # (no `expires`) that no TTL ever removes.
        conditionally(
            lambda: record.update(
                actions=[MailRecord.sending_on.remove()], condition=MailRecord.sk.exists()
            )
        )

    def sent(self, address: str, day: str, message_id: str) -> None:
        record = MailRecord(*_notice_key(address, day))
        conditionally(
            lambda: record.update(
                actions=[MailRecord.notice_message_id.set(message_id)],
                condition=MailRecord.sk.exists(),
            )
        )

    def not_sent(self, mailbox: str, entry_id: str, now: datetime) -> bool:
        """The drain could not send the notice an entry is written with (`noticeSent` true).
        The refusal is kept on an item of its own (`REFUSED`), which no write of the entry
        replaces and every told write checks (`_put_told`); then the entry, when written, says
        false. True when the entry was written (and now says false); False when it is not yet
        (the poll writes its outbox first): it will say false when it is. The refusal expires
        with the claims, once no redrive of the outbox can tell its event again."""
        refused = MailRecord(
            mailbox, REFUSED + entry_id, entry_id=entry_id, expires=now + NOTICE_KEPT
        )
        refused.save()
        return conditionally(
            lambda: MailRecord(mailbox, ENTRY + entry_id).update(
                actions=[MailRecord.notice_sent.set(False)],
                condition=MailRecord.received_key.exists(),
            )
        )


def lost_condition(error: TransactWriteError) -> bool:
    """A transaction cancelled because a condition of its own did not hold (nothing else)."""
    codes = [code for code in cancellation_codes(error) if code]
    return (
        error_code(error) == "TransactionCanceledException"
        and bool(codes)
        and all(code == "ConditionalCheckFailed" for code in codes)
    )


def _put_told(item: MailRecord) -> None:
    """Write an entry told a notice (`notice_sent` true) unless the notice did not go: the drain
    refused it (`NoticeClaims.not_sent`: before this write, or since an earlier one, whatever
    the poll wrote in between), or the last release's drain noted so at the entry's key (an
    item saying `notice_sent` false). Then it is written saying false. One transaction: the
    refusal's absence checked, the entry put on its condition; a put either way (it replaces
    the whole item, an old note's TTL with it)."""
    told = MailRecord.notice_sent.does_not_exist() | (MailRecord.notice_sent == True)  # noqa: E712
    refused = REFUSED + str(item.entry_id)

    def fill(write: TransactWrite) -> None:
        write.condition_check(MailRecord, item.mailbox, refused, MailRecord.sk.does_not_exist())
        write.save(item, condition=told)

    try:
        transact(MailRecord._get_connection().connection, fill)
    except TransactWriteError as error:
        if not lost_condition(error):
            raise
        item.notice_sent = False
        item.save()


# Where a page ended: the `offset` of the next page names it (chalicelib.store.base).
POSITION = "mail-position"


class MailRepository:
    def prepare(self) -> None:
        """Create the table's client now, in this thread, before worker threads use it."""
        _ = MailRecord._get_connection().connection.client

    def position(self, mailbox: str, entry_id: str) -> LogEntry | None:
        """The log entry an `offset` names, for its place in the log (its receipt time, which
        never changes): from the warm container's memory when a page ended there lately."""
        return read_through(POSITION, (mailbox, entry_id), lambda: self.entry(mailbox, entry_id))

    def entry(self, mailbox: str, entry_id: str) -> LogEntry | None:
        try:
            item = MailRecord.get(mailbox, ENTRY + entry_id, consistent_read=True)
        except MailRecord.DoesNotExist:
            return None
        return _entry(item) if _written(item) else None

    # --- the log's steps (domain/mailboxes.py): what happened to a mail ------------------------

    def record(self, mailbox: str, account: str, steps: Sequence[Step]) -> dict[str, LogEntry]:
        """Write entries and markers as the steps leave them, in one batch (in order: an entry
        before the marker that points at it); answers the entries as they were written."""
        left: dict[str, LogEntry] = {}
        # One put per item (a batch refuses the same key twice): an entry counted and settled in
        # the same call is written once, in its final state; a marker as its step made it.
        items: dict[tuple[str, str], MailRecord | str] = {}
        for step, entry in played(steps):
            left[entry.entry_id] = entry
            if not isinstance(step, Skip):
                items.setdefault((entry.mailbox, ENTRY + entry.entry_id), entry.entry_id)
            # A pushed mail (no UIDL) has no copy on a server to mark.
            if isinstance(step, Finish | Quarantine | Skip) and step.uidl:
                marker = self.marker(mailbox, account, step.uidl, entry)
                items.setdefault((marker.mailbox, marker.sk), marker)
        written = [_item(left[item]) if isinstance(item, str) else item for item in items.values()]
        # An entry told a notice goes first (entries before their markers), on its own: the
        # drain may have refused its notice already.
        for item in written:
            if item.notice_sent:
                _put_told(item)
        self._put_all([item for item in written if not item.notice_sent])
        return left

    def keep_comment_id(self, entry: LogEntry, comment_id: int, post_id: str) -> LogEntry:
        return self.save_entry(replace(entry, comment_id=comment_id, post_id=post_id))

    # --- entries as they are (seeding: tests, the benchmark, the console) -----------------------

    def save_entry(self, entry: LogEntry) -> LogEntry:
        _item(entry).save()
        return entry

    def new_entry(
        self, mailbox: str, entry_id: str, received_on: datetime, **values: Unpack[EntryValues]
    ) -> LogEntry:
        """An entry not stored yet."""
        return LogEntry(mailbox, entry_id, received_on, **values)

    def entries(self, mailbox: str, entry_ids: list[str]) -> dict[str, LogEntry]:
        """Log entries by id, read in batches (BatchGetItem, 100 keys a request)."""
        if not entry_ids:
            return {}
        keys = [(mailbox, ENTRY + entry_id) for entry_id in dict.fromkeys(entry_ids)]
        items = MailRecord.batch_get(keys, consistent_read=True)
        found = (_entry(item) for item in items if _written(item))
        return {entry.entry_id: entry for entry in found}

    def handled_uidls(self, mailbox: str, account: str, uidls: list[str]) -> dict[str, Marker]:
        """Which of these UIDLs of this account are handled (BatchGetItem, 100 keys a request)."""
        if not uidls:
            return {}
        prefix = f"{UIDL}{account}#"
        keys = [(mailbox, prefix + uidl) for uidl in dict.fromkeys(uidls)]
        return {
            record.sk[len(prefix) :]: Marker(str(record.entry_id), record.status)
            for record in MailRecord.batch_get(keys, consistent_read=True)
        }

    @staticmethod
    def marker(mailbox: str, account: str, uidl: str, entry: LogEntry) -> MailRecord:
        """The (unsaved) marker saying this message is handled by `entry`."""
        return MailRecord(
            mailbox, f"{UIDL}{account}#{uidl}", entry_id=entry.entry_id, status=entry.status
        )

    def write_all(self, entries: Sequence[LogEntry]) -> None:
        """Entries as they are, in batches (seeding)."""
        self._put_all([_item(entry) for entry in entries])

    @staticmethod
    def _put_all(items: list[MailRecord]) -> None:
        """Unconditional puts in batches of 25 (BatchWriteItem), in the given order: put entries
        before the markers that point at them."""
        if not items:
            return
        with MailRecord.batch_write() as batch:
            for item in items:
                batch.save(item)

    def page_newest_first(
        self, mailbox: str, *, limit: int, after: LogEntry | None, status: str | None = None
    ) -> list[LogEntry]:
        """A page of the log, or of its entries listed as `status`: one Query either way."""
        place = _place(after) if after is not None else None
        if status is None:
            items = query_page(
                MailRecord.received, mailbox, limit=limit, forward=False, after=place
            )
        else:
            partition = status_partition(mailbox, status)
            # The offset's entry may be listed under another status by now: the page still
            # starts right after its place (its receipt time) in this list (CONTRACT §7).
            start = (
                index_start_key(place, MailRecord.by_status, {"status_mailbox": partition})
                if place
                else None
            )
            items = query_page(
                MailRecord.by_status, partition, limit=limit, forward=False, start_key=start
            )
        entries = [_entry(item) for item in items]
        remember(POSITION, {(mailbox, e.entry_id): e for e in entries[-1:]})
        return entries

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


if TYPE_CHECKING:
    # The type checker holds this repository to the log mail in asks for.
    _AS_MAIL_LOG: MailLog = MailRepository()
    _AS_LOG_PAGES: MailLogPages = MailRepository()
