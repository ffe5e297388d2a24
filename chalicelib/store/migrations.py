"""Migrations: every stored item brought to the shape the current code writes (`cli migrate`).

Code changes every week, data lives for years. A change of an item's shape (a new attribute, the
key attributes of a new index) ships with a migration here that brings the items written before
it, and the code reads both shapes meanwhile (expand, then contract: README "Upgrades").

A migration reads its table by pages (a Scan: this is never a request path), filtered to the items
still of the old shape where DynamoDB can tell, and fixes each page with conditional writes, so it
is idempotent and never undoes what a live writer did meanwhile. Its record is an item
`migration#<name>` in the `counters` table: done or not, the position to resume from (the last
page's LastEvaluatedKey) and what it has read and changed. The counters table is read only by key
(one item per id counter), so these items are invisible to every other reader, and no new table
has to be created, granted and backed up for a handful of items.

A run stops between pages when its deadline is near (a Lambda's time limit) and the next run goes
on from the recorded position; a migration once done is never run again. Names are forever: a new
migration gets a new name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pynamodb.attributes import BooleanAttribute, JSONAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from chalicelib.clock import utc_now
from chalicelib.domain import audit
from chalicelib.store import outbox
from chalicelib.store.base import UtcAttribute, conditionally, table_meta
from chalicelib.store.comments import CommentRepository
from chalicelib.store.groups import LISTED, GroupRecord, GroupRepository, name_key_of
from chalicelib.store.mail import ENTRY, MailRecord, status_partition
from chalicelib.store.mailboxes import MailboxRecord, due_index_values
from chalicelib.store.posts import PostRecord
from chalicelib.store.user_search import SearchIndex
from chalicelib.store.users import UserRecord

STATE_PREFIX = "migration#"
# Items a Scan request reads (before its filter): one page's work stays well inside a second.
PAGE_SIZE = 100


class MigrationStateRecord(Model):
    """What one migration has done, in the counters table (not registered: the table is
    CounterRecord's, created and declared once)."""

    Meta = table_meta("counters")

    name = UnicodeAttribute(hash_key=True)  # migration#<migration name>
    done = BooleanAttribute(default=False)
    # The LastEvaluatedKey of the last page handled, as DynamoDB gives it; None: from the start.
    position = JSONAttribute(null=True)
    examined = NumberAttribute(default=0)
    changed = NumberAttribute(default=0)
    started_on = UtcAttribute(null=True)
    finished_on = UtcAttribute(null=True)


@dataclass(frozen=True)
class Migration:
    """One change of shape. `old_shape` is the Scan filter of the items it still has to bring
    (None: every item is read); `bring` fixes one page of them and answers how many it changed."""

    name: str
    what: str
    model: type[Model]
    bring: Callable[[list[Any]], int]
    old_shape: Callable[[], Any] | None = None


@dataclass
class Outcome:
    """What one migration did in this run (and before it)."""

    name: str
    what: str
    examined: int = 0
    changed: int = 0
    done: bool = False
    already_done: bool = False

    def line(self) -> str:
        if self.already_done:
            return f"{self.name}: already done"
        counts = f"{self.examined} item(s) read, {self.changed} changed"
        if self.done:
            return f"{self.name}: done: {counts} ({self.what})"
        return f"{self.name}: {counts} so far; the next run goes on from there ({self.what})"


def state_of(name: str) -> MigrationStateRecord:
    try:
        return MigrationStateRecord.get(STATE_PREFIX + name, consistent_read=True)
    except MigrationStateRecord.DoesNotExist:
        return MigrationStateRecord(STATE_PREFIX + name)


def scan_page(
    migration: Migration, position: dict[str, Any] | None, page_size: int
) -> tuple[list[Any], dict[str, Any] | None]:
    """One Scan request from `position`: the items of the old shape it found, and where the next
    page starts (None: the table is read to its end)."""
    results = migration.model.scan(
        filter_condition=migration.old_shape() if migration.old_shape else None,
        page_size=page_size,
        last_evaluated_key=position,
        consistent_read=True,
    )
    raw = next(results.page_iter)  # exactly one request
    items = [migration.model.from_raw_data(item) for item in raw.get("Items", [])]
    return items, raw.get("LastEvaluatedKey")


def run(
    migrations: Sequence[Migration],
    expired: Callable[[], bool],
    page_size: int = PAGE_SIZE,
    on_page: Callable[[Outcome], None] | None = None,
    created_empty: Collection[str] = (),
) -> list[Outcome]:
    """Run each migration not done yet, in order, page by page, until all are done or `expired`
    says to stop (checked before every page). The record is written after each page: a run cut
    short anywhere reads at most that page again, and bringing an item twice changes nothing.

    `created_empty`: names of tables the caller has just created and that only the current code
    has written to since, so none of their items is of an older shape; a migration of such a
    table is recorded done, as having read nothing, without reading it."""
    outcomes = []
    for migration in migrations:
        state = state_of(migration.name)
        outcome = Outcome(migration.name, migration.what, int(state.examined), int(state.changed))
        if state.done:
            outcome.done = outcome.already_done = True
            outcomes.append(outcome)
            continue
        if expired():
            break  # this one and the rest wait for the next run, in order
        outcomes.append(outcome)
        state.started_on = state.started_on or datetime.now(UTC)
        if migration.model.Meta.table_name in created_empty:
            state.position, state.done, state.finished_on = None, True, datetime.now(UTC)
            state.save()
            outcome.done = True
            continue
        while True:
            items, position = scan_page(migration, state.position, page_size)
            changed = migration.bring(items) if items else 0
            state.examined = int(state.examined) + len(items)
            state.changed = int(state.changed) + changed
            state.position = position
            if position is None:
                state.done, state.finished_on = True, datetime.now(UTC)
            _save_state(state, migration)
            outcome.examined, outcome.changed = int(state.examined), int(state.changed)
            outcome.done = bool(state.done)
            if on_page is not None:
                on_page(outcome)
            if outcome.done or expired():
                break
        if not outcome.done:
            break  # the deadline: later migrations wait for the next run, in order
    return outcomes


def _save_state(state: MigrationStateRecord, migration: Migration) -> None:
    """The record of the page; the page that finishes a migration that changed items is
    recorded in the audit log in the same transaction (CONTRACT §12: `migrate`'s changes)."""

    finished = audit.entry(
        "migration.run",
        target=("migration", migration.name),
        group_id=None,
        before=None,
        after={"changed": int(state.changed)},
    )
    if state.done and int(state.changed):
        outbox.save_with(state, finished)
    else:
        state.save()


# --- the migrations, oldest first -------------------------------------------------------------


def _list_mail_entries_by_status(records: list[Any]) -> int:
    """Mail log entries written before the `by-status` index (37d7cdd) lack its hash key: set
    it, unless a writer changed the entry's status meanwhile (it set the key itself)."""

    def list_one(record: MailRecord) -> None:
        record.update(
            actions=[
                MailRecord.status_mailbox.set(status_partition(record.mailbox, record.status))
            ],
            condition=(MailRecord.status == record.status)
            & MailRecord.status_mailbox.does_not_exist(),
        )

    changed = 0
    for record in records:
        changed += conditionally(functools.partial(list_one, record))
    return changed


def _mail_entries_unlisted() -> Any:
    return (
        MailRecord.sk.startswith(ENTRY)
        & MailRecord.status.exists()
        & MailRecord.status_mailbox.does_not_exist()
    )


def _index_people(records: list[Any]) -> int:
    """Users written before the people search (1124b01) have no search items, and those indexed
    before its 4-character buckets (643b07e) lack those: write each user's items as the current
    code does (puts of the same items: idempotent; stale items were deleted by their writers)."""

    SearchIndex().replace([(None, user) for user in records])
    return len(records)


def _recount_comments(records: list[Any]) -> int:
    """Posts stored before `commentsCount` was kept on the post (72806cb) have none, and a
    comment written since then moved it from 0: set each post's count from its visible comments
    (one count Query), unless a comment write moved it meanwhile."""

    comments = CommentRepository()
    changed = 0
    for post in records:
        count = comments.count_visible(post.id)
        # A missing count reads as its default, 0: either is the one this read saw.
        stored = int(post.comments_count or 0)
        unchanged = PostRecord.comments_count == stored
        if stored == 0:
            unchanged = unchanged | PostRecord.comments_count.does_not_exist()
        changed += conditionally(
            functools.partial(
                post.update,
                actions=[PostRecord.comments_count.set(count)],
                condition=PostRecord.id.exists() & unchanged,
            )
        )
    return changed


def _schedule_mailboxes(records: list[Any]) -> int:
    """Enabled mailboxes saved before the due index (polls follow the mail) have none of its
    keys, so the schedule would never poll them again: each is due now, its streaks at 0, unless
    a writer scheduled or disabled it meanwhile."""

    now = utc_now()
    changed = 0
    for mailbox in records:
        keys = due_index_values(mailbox.scope, now)
        changed += conditionally(
            functools.partial(
                mailbox.update,
                actions=[
                    MailboxRecord.next_poll_on.set(now),
                    MailboxRecord.due_shard.set(keys["due_shard"]),
                    MailboxRecord.due_key.set(keys["due_key"]),
                    MailboxRecord.empty_polls.set(MailboxRecord.empty_polls | 0),
                    MailboxRecord.poll_failures.set(MailboxRecord.poll_failures | 0),
                ],
                condition=_mailboxes_unscheduled(),
            )
        )
    return changed


def _mailboxes_unscheduled() -> Any:
    return MailboxRecord.enabled_kind.exists() & MailboxRecord.due_key.does_not_exist()


def _list_groups_by_name(records: list[Any]) -> int:
    """Groups stored before the group list's by-name index have none of its keys, so the list
    would not show them: set them as every writer of a group now does, unless the group was
    renamed meanwhile (its writer set them)."""

    changed = 0
    for group in records:
        changed += conditionally(
            functools.partial(
                group.update,
                actions=[
                    GroupRecord.listing.set(LISTED),
                    GroupRecord.name_key.set(name_key_of(group.name, group.id)),
                ],
                condition=(GroupRecord.name == group.name) & GroupRecord.name_key.does_not_exist(),
            )
        )
    GroupRepository.forget_cache()
    return changed


def _groups_unlisted() -> Any:
    return GroupRecord.name_key.does_not_exist()


def migrations() -> list[Migration]:
    """Every migration, in the order they run (a new one goes at the end)."""

    return [
        Migration(
            "mail-log-status-index",
            "mail log entries listed by ?status=",
            MailRecord,
            _list_mail_entries_by_status,
            _mail_entries_unlisted,
        ),
        Migration(
            "people-search-index",
            "every user found by the people search",
            UserRecord,
            _index_people,
        ),
        Migration(
            "post-comments-count",
            "every post's commentsCount counted from its comments",
            PostRecord,
            _recount_comments,
        ),
        Migration(
            "mailbox-due-index",
            "every enabled mailbox scheduled",
            MailboxRecord,
            _schedule_mailboxes,
            _mailboxes_unscheduled,
        ),
        Migration(
            "group-name-index",
            "every group in the group list",
            GroupRecord,
            _list_groups_by_name,
            _groups_unlisted,
        ),
    ]
