"""Mailboxes: the email-to-post settings of a group (scope = group id) and the system-wide
email-to-comment settings (scope `system`), in table `mailboxes`; the sparse `enabled-mailboxes`
index holds only the enabled ones (`poll-mail` polls them all, no Scan). A read answers the
frozen `Mailbox` of domain/mailboxes.py.

The rhythm of polls (services/poll_schedule.py) is kept on the mailbox item:
- `next_poll_on` (when it is due), `empty_polls` and `poll_failures` (how many polls in a row
  found nothing, or failed at the mailbox's own server);
- `due_shard` (`due#00` … `due#15`, a hash of the scope) and `due_key` (`<next_poll_on as
  sort_moment>#<scope>`): the keys of the sparse, keys-only index `due-mailboxes`, present only
  while the mailbox is enabled. The 5-minute dispatch Queries each shard for `due_key <=` its
  horizon, so it reads about as many items as are due, and 100,000 mailboxes spread over 16
  partitions rather than one;
- `failing` (`failing`, only while enabled and `poll_failures` > 0): the hash of the sparse,
  keys-only index `failing-mailboxes`, whose count feeds the share-failing alarm.
An enabled mailbox written before these existed has none of them: `migrate` gives it `due_shard`
and `due_key` (due now), `empty_polls` and `poll_failures` 0 (`due_index_values` says how).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import fields
from datetime import datetime

from pynamodb.attributes import (
    BinaryAttribute,
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.expressions.update import Action
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from chalicelib.domain.announcements import Announcement
from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.mailboxes import Mailbox, MailboxEdit, PollOutcome
from chalicelib.store import outbox
from chalicelib.store.base import (
    UtcAttribute,
    conditionally,
    frozen,
    index_meta,
    register,
    sort_moment,
    table_meta,
)


class EnabledMailboxIndex(GlobalSecondaryIndex):
    Meta = index_meta("enabled-mailboxes", AllProjection())
    enabled_kind = UnicodeAttribute(hash_key=True)
    scope = UnicodeAttribute(range_key=True)


# The due index's partitions: 16 keep 100,000 mailboxes (a few hundred due a minute) far below a
# partition's limits, and cost a dispatch 16 small Queries.
DUE_SHARDS = 16
FAILING = "failing"


def due_shard(scope: str) -> str:
    """The `due-mailboxes` partition of a mailbox: a stable hash of its scope."""
    return f"due#{zlib.crc32(scope.encode('utf-8')) % DUE_SHARDS:02d}"


def due_key(scope: str, next_poll_on: datetime) -> str:
    """The `due-mailboxes` sort key: due time order, unique per mailbox."""
    return f"{sort_moment(next_poll_on)}#{scope}"


def due_index_values(scope: str, next_poll_on: datetime) -> dict[str, str]:
    """The attributes that put an enabled mailbox in the due index (for `migrate` too)."""
    return {"due_shard": due_shard(scope), "due_key": due_key(scope, next_poll_on)}


class DueMailboxIndex(GlobalSecondaryIndex):
    Meta = index_meta("due-mailboxes", KeysOnlyProjection())
    due_shard = UnicodeAttribute(hash_key=True)
    due_key = UnicodeAttribute(range_key=True)


class FailingMailboxIndex(GlobalSecondaryIndex):
    Meta = index_meta("failing-mailboxes", KeysOnlyProjection())
    failing = UnicodeAttribute(hash_key=True)
    scope = UnicodeAttribute(range_key=True)


@register
class MailboxRecord(Model):
    Meta = table_meta("mailboxes")

    scope = UnicodeAttribute(hash_key=True)  # group id, or `system`
    kind = UnicodeAttribute()  # emailToPost | emailToComment
    server_name = UnicodeAttribute(default="")
    server_port = NumberAttribute(default=995)
    server_username = UnicodeAttribute(default="")
    # KMS ciphertext of the POP3 password.
    password = BinaryAttribute(null=True, legacy_encoding=False)
    is_enabled = BooleanAttribute(default=False)
    is_ssl = BooleanAttribute(default=True)
    delete_processed = BooleanAttribute(default=False)
    last_processed = UtcAttribute(null=True)
    # The last poll that could not reach the mailbox, in plain words; a good poll removes both.
    last_error = UnicodeAttribute(null=True)
    last_error_on = UtcAttribute(null=True)
    editor_id = UnicodeAttribute(null=True)
    modified_on = UtcAttribute(null=True)
    # The kind while enabled, absent otherwise: the `enabled-mailboxes` index is sparse.
    enabled_kind = UnicodeAttribute(null=True)
    # The address members write to ("" or absent: none).
    email_address = UnicodeAttribute(null=True)
    # The rhythm of polls (module docstring): absent on items written before it.
    next_poll_on = UtcAttribute(null=True)
    empty_polls = NumberAttribute(null=True)
    poll_failures = NumberAttribute(null=True)
    # Polls in a row cut short by their run's end (absent: none); every recorded poll removes it.
    polls_cut_short = NumberAttribute(null=True)
    due_shard = UnicodeAttribute(null=True)
    due_key = UnicodeAttribute(null=True)
    failing = UnicodeAttribute(null=True)
    # When "poll now" last made the mailbox due: the next one waits a minute (CONTRACT §5).
    poll_now_on = UtcAttribute(null=True)

    enabled = EnabledMailboxIndex()
    due = DueMailboxIndex()
    failing_index = FailingMailboxIndex()

    def as_mailbox(self) -> Mailbox:
        return mailbox_of(self)


def mailbox_of(record: MailboxRecord) -> Mailbox:
    """The mailbox as the rules hold it (domain/mailboxes.py), its password as its ciphertext."""
    return frozen(
        record,
        Mailbox,
        server_port=int(record.server_port),
        is_enabled=bool(record.is_enabled),
        is_ssl=bool(record.is_ssl),
        delete_processed=bool(record.delete_processed),
        has_password=bool(record.password),
        password="",
        password_ciphertext=bytes(record.password) if record.password else None,
        email_address=record.email_address or "",
        empty_polls=int(record.empty_polls or 0),
        poll_failures=int(record.poll_failures or 0),
        polls_cut_short=int(record.polls_cut_short or 0),
    )


def edited_values(edit: MailboxEdit) -> dict[str, object]:
    """The attributes a settings save writes: the edit's, but a password or address of None
    (kept as stored), and its next poll (the due index's, `save_settings`)."""
    values = {f.name: getattr(edit, f.name) for f in fields(edit) if f.name != "next_poll_on"}
    return {
        name: value
        for name, value in values.items()
        if not (name in ("password", "email_address") and value is None)
    }


def polled_values(poll: PollOutcome) -> Values:
    """The attributes one poll's outcome writes beside its due time (None: removed): a good poll
    (`error` None) sets `last_processed` and clears the last error, a failed one notes it."""
    when, error = poll.on, poll.error
    values: Values = {
        "empty_polls": poll.after.empty_polls,
        "poll_failures": poll.after.failures,
        "failing": FAILING if poll.after.failures else None,
        "polls_cut_short": None,  # a poll recorded ends the streak of polls cut short
    }
    if error is None:
        return {**values, "last_processed": when, "last_error": None, "last_error_on": None}
    return {**values, "last_error": error, "last_error_on": when}


# Attribute values a write sets, None for those it removes.
Values = dict[str, object]
# What a write carries into its transaction: domain events and audit entries.
Riders = Sequence[Announcement | AuditEntry]


class MailboxRepository:
    def prepare(self) -> None:
        """Create the table's client now, in this thread, before worker threads use it."""
        _ = MailboxRecord._get_connection().connection.client

    def get(self, scope: str) -> Mailbox | None:
        try:
            return MailboxRecord.get(scope).as_mailbox()
        except MailboxRecord.DoesNotExist:
            return None

    def save_settings(
        self, scope: str, edit: MailboxEdit, audit: Riders = (), read: Mailbox | None = None
    ) -> Mailbox:
        """Write the settings an administrator edits; `last_processed` (the poller's) is kept.

        An enabled mailbox is due at the edit's `next_poll_on` with its streaks reset; a disabled one
        leaves the due and failing indexes. `audit` (its entries) go in the same transaction,
        which answers no item: the mailbox answered is then `read` (as the caller read it) with
        the update applied.
        """
        record = MailboxRecord(scope)
        values: Values = {
            **edited_values(edit),
            "empty_polls": 0,
            "poll_failures": 0,
            "failing": None,
        }
        next_poll_on = edit.next_poll_on if edit.is_enabled else None
        # Enabled and never polled (push only, CONTRACT §13): enabled, out of the due index.
        values["enabled_kind"] = edit.kind if edit.is_enabled else None
        if next_poll_on is not None:
            actions = [*_actions(values), *_due_actions(scope, next_poll_on)]
        else:
            off = {"next_poll_on": None, "due_shard": None, "due_key": None}
            actions = _actions({**values, **off})
        if not audit:
            record.update(actions=actions)
            return record.as_mailbox()
        outbox.update_with(record, actions, audit)
        return _applied(read, scope, values, next_poll_on)

    def poll_due_at(
        self, scope: str, when: datetime, *, not_since: datetime, audit: Sequence[AuditEntry] = ()
    ) -> tuple[Mailbox | None, bool]:
        """Make an enabled mailbox due at `when` ("poll now"), its empty streak reset, unless
        "poll now" already did after `not_since`: (the mailbox, True) when written, (the mailbox
        as stored, False) when too soon, (None, False) when it is not enabled. One conditional
        write, so two requests at once make it due once; `audit` (the change's entries) in the
        same transaction, after which the mailbox is read (a transaction answers no item)."""
        record = MailboxRecord(scope)
        actions = [
            *_due_actions(scope, when),
            MailboxRecord.empty_polls.set(0),
            MailboxRecord.poll_now_on.set(when),
        ]
        # A push-only connector (no POP3 server) is never made due.
        condition = (MailboxRecord.enabled_kind.exists() & (MailboxRecord.server_name != "")) & (
            MailboxRecord.poll_now_on.does_not_exist() | (MailboxRecord.poll_now_on <= not_since)
        )
        if not audit:
            done = conditionally(lambda: record.update(actions=actions, condition=condition))
        else:
            done = outbox.update_with(record, actions, audit, condition)
        if done:
            return (self.get(scope) if audit else record.as_mailbox()), True
        stored = self._enabled(scope)
        return stored, False

    def _enabled(self, scope: str) -> Mailbox | None:
        try:
            record = MailboxRecord.get(scope)
        except MailboxRecord.DoesNotExist:
            return None
        return record.as_mailbox() if record.enabled_kind else None

    def record_poll(self, scope: str, poll: PollOutcome, announcements: Riders = ()) -> bool:
        """One poll's outcome and the mailbox's next poll, in one write (`polled_values`);
        `announcements` (domain events, audit entries) go to the outbox in the same transaction.

        Only while the mailbox is enabled (a mailbox disabled meanwhile keeps out of the due
        index): False, and only the outcome is noted, when it is not.
        """
        actions = [*_due_actions(scope, poll.next_poll_on), *_actions(polled_values(poll))]
        condition = MailboxRecord.enabled_kind.exists()
        record = MailboxRecord(scope)
        if not announcements:
            written = conditionally(lambda: record.update(actions=actions, condition=condition))
        else:
            written = outbox.update_with(record, actions, announcements, condition)
        if not written:
            if poll.error is None:
                self.record_last_processed(scope, poll.on)
            else:
                self.record_poll_failed(scope, poll.on, poll.error)
        return written

    def record_last_processed(self, scope: str, when: datetime) -> bool:
        """Set `last_processed` of an existing mailbox and clear its last error (the same
        UpdateItem); False when it has no settings."""
        return self._note(
            scope, {"last_processed": when, "last_error": None, "last_error_on": None}
        )

    def record_poll_failed(self, scope: str, when: datetime, message: str) -> bool:
        """Note the poll at `when` that could not reach the mailbox; False without settings."""
        return self._note(scope, {"last_error": message, "last_error_on": when})

    def record_cut_short(self, scope: str, polls: int) -> bool:
        """Note that the last `polls` polls in a row were cut short by their run's end; False
        without settings."""
        return self._note(scope, {"polls_cut_short": polls})

    @staticmethod
    def _note(scope: str, values: Values) -> bool:
        return conditionally(
            lambda: MailboxRecord(scope).update(
                actions=_actions(values), condition=MailboxRecord.scope.exists()
            )
        )

    def enabled(self, kind: str) -> Iterator[Mailbox]:
        """Every enabled mailbox of a kind, paged through the sparse index."""
        return (record.as_mailbox() for record in MailboxRecord.enabled.query(kind))

    def due_scopes(self, horizon: datetime) -> Iterator[str]:
        """The scopes of the enabled mailboxes due at or before `horizon`: one Query per shard
        of the keys-only due index, reading only the due items (no Scan)."""
        # `~` sorts after every character of a scope: every mailbox due at `horizon` itself.
        upper = f"{sort_moment(horizon)}#~"
        for shard in range(DUE_SHARDS):
            for key in MailboxRecord.due.query(
                f"due#{shard:02d}", range_key_condition=DueMailboxIndex.due_key <= upper
            ):
                yield key.scope

    def count_enabled(self) -> int:
        """Enabled mailboxes (the due index's items, counted shard by shard: keys only)."""
        return sum(MailboxRecord.due.count(f"due#{shard:02d}") for shard in range(DUE_SHARDS))

    def count_failing(self) -> int:
        """Enabled mailboxes whose last poll failed at their own server (a sparse index)."""
        return int(MailboxRecord.failing_index.count(FAILING))


def _applied(
    read: Mailbox | None, scope: str, values: Values, next_poll_on: datetime | None
) -> Mailbox:
    """`read` (or a new mailbox) as `save_settings`'s update leaves it."""
    record = MailboxRecord(scope)
    if read is not None:
        for name in _KEPT:
            setattr(record, name, getattr(read, name))
        record.password = read.password_ciphertext
    for name, value in values.items():
        setattr(record, name, value)
    record.next_poll_on = next_poll_on
    return record.as_mailbox()


# What the record and the mailbox both hold under one name (the record's `password` is the
# mailbox's `password_ciphertext`).
_KEPT = ({f.name for f in fields(Mailbox)} & set(MailboxRecord.get_attributes())) - {"password"}


def _actions(values: Values) -> list[Action]:
    """Set each attribute to its value, or remove it where the value is None."""
    attributes = MailboxRecord.get_attributes()
    return [
        attributes[name].remove() if value is None else attributes[name].set(value)
        for name, value in values.items()
    ]


def _due_actions(scope: str, next_poll_on: datetime) -> list[Action]:
    values = due_index_values(scope, next_poll_on)
    return [
        MailboxRecord.next_poll_on.set(next_poll_on),
        MailboxRecord.due_shard.set(values["due_shard"]),
        MailboxRecord.due_key.set(values["due_key"]),
    ]
