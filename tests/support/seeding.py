"""Bulk data written straight through the repositories (no API, no fixture loader): many events or
mail-log entries in a few requests, for the tests that page through them and for the bench."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from chalicelib.domain.mailboxes import LogEntry


def numbered_event(index: int) -> str:
    return f"Event {index}"


def seed_events(
    group_id: str,
    starts: Sequence[datetime],
    *,
    authors: Sequence[str],
    editors: Sequence[str] | None = None,
    written_on: datetime,
    title: Callable[[int], str] = numbered_event,
    search_text: Callable[[int], str] | None = None,
    **details: Any,
) -> list[int]:
    """One hour-long event per start, ids from the real counter in one request, stored with the
    repository's bulk path. Event `index` is by `authors[index % len(authors)]` (and edited by
    `editors`' likewise, the author by default); its search text is its title in lower case unless
    `search_text` says otherwise; `details` are further fields of every event (content, ...)."""
    from chalicelib.store.events import EventRecord, EventRepository

    repository = EventRepository()
    ids = repository.reserve_ids(len(starts))
    editors = editors or authors
    records = [
        EventRecord(
            id=ids[index],
            group_id=group_id,
            author_id=authors[index % len(authors)],
            editor_id=editors[index % len(editors)],
            created_on=written_on,
            modified_on=written_on,
            all_day=False,
            start_date=start,
            end_date=start + timedelta(hours=1),
            title=title(index),
            search_text=(search_text or title)(index).lower(),
            **details,
        )
        for index, start in enumerate(starts)
    ]
    repository.put_many(records)
    return [int(record.id) for record in records]


def seed_mail_log(
    group_id: str, post_ids: Sequence[str], count: int, *, newest: datetime, domain: str
) -> list[str]:
    """`count` posted mails in the group's mailbox log, newest first a minute apart from
    `newest`, each naming one of `post_ids` in turn; answers the entry ids in that order. Stored
    as `save_entry` stores each, in batches (`write_all`) rather than a request each."""
    from chalicelib.services.mailboxes import mailbox_key
    from chalicelib.store.mail import MailRepository

    mail = MailRepository()
    entries = []
    records = []
    for index in range(count):
        entry_id = str(uuid.uuid4())
        records.append(
            mail.new_entry(
                mailbox_key(group_id),
                entry_id,
                newest - timedelta(minutes=index),
                message_id=f"<{index}@{domain}>",
                sender="someone@example.org",
                subject=f"Mail {index}",
                status="posted",
                post_id=post_ids[index % len(post_ids)],
            )
        )
        entries.append(entry_id)
    mail.write_all(records)
    return entries


def seed_mail_log_statuses(
    mailbox: str, count: int, statuses: Sequence[str], *, newest: datetime
) -> tuple[list[LogEntry], dict[str, str]]:
    """`count` log entries of `mailbox`, a second apart from `newest`, their statuses taken from
    `statuses` in turn; answers the records written and entry id → stored status."""
    from chalicelib.store.mail import MailRepository

    mail = MailRepository()
    records = []
    written: dict[str, str] = {}
    for index in range(count):
        entry_id = str(uuid.uuid4())
        status = statuses[index % len(statuses)]
        records.append(
            mail.new_entry(
                mailbox,
                entry_id,
                newest - timedelta(seconds=index),
                message_id=f"{index}@example.org",
                sender="someone@example.org",
                subject=f"Mail {index}",
                status=status,
                reason="test",
            )
        )
        written[entry_id] = status
    mail.write_all(records)
    return records, written
