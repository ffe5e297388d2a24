"""The digests table in memory (store/notifications.py's `DigestRepository`), for `make simulate`'s
100,000 digests: the same keys, the same conditional writes, the same order of the pending index.
tests/store/test_digest_contract.py holds it to the PynamoDB repository's answers. Thread-safe:
a worker prepares several digests at once."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from chalicelib.store.base import moment_key
from chalicelib.store.notifications import DAY, INSTANT, ITEM, PENDING_SHARDS, pending_shard


class FakeDigestRecord:
    def __init__(self, user_id: str, sk: str, **values: Any) -> None:
        self.user_id = user_id
        self.sk = sk
        self.occurrence_id: str | None = None
        self.pending_key: str | None = None
        self.queued_on: datetime | None = None
        self.item: dict[str, Any] | None = None
        self.sent_on: datetime | None = None
        self.digest_day: str | None = None
        self.claimed_on: datetime | None = None
        self.item_count: int | None = None
        self.message_id: str | None = None
        self.__dict__.update(values)


class FakeDigestRepository:
    def __init__(self) -> None:
        self._items: dict[tuple[str, str], FakeDigestRecord] = {}
        # The local index by user: each user's items (what `pending-by-user` reads).
        self._by_user: dict[str, list[FakeDigestRecord]] = {}
        # Per shard, the pending index's entries: (pending key, user), sorted on read. Keys are
        # not unique: two users are told of the same occurrence at the same moment.
        self._pending: list[set[tuple[str, str]]] = [set() for _ in range(PENDING_SHARDS)]
        self._lock = threading.Lock()

    def _put_new(self, record: FakeDigestRecord) -> bool:
        key = (record.user_id, record.sk)
        if key in self._items:
            return False
        self._items[key] = record
        if record.sk.startswith(ITEM):
            self._by_user.setdefault(record.user_id, []).append(record)
        return True

    # --- digest items ----------------------------------------------------------------------------

    def queue(self, user_id: str, occurrence_id: str, item: dict[str, Any], now: datetime) -> bool:
        pending = moment_key(now, occurrence_id)
        record = FakeDigestRecord(
            user_id,
            ITEM + occurrence_id,
            occurrence_id=occurrence_id,
            pending_key=pending,
            queued_on=now,
            item=copy.deepcopy(item),
        )
        with self._lock:
            if not self._put_new(record):
                return False
            self._pending[int(pending_shard(user_id))].add((pending, user_id))
            return True

    def users_with_pending_items(self) -> Iterator[str]:
        for shard in range(PENDING_SHARDS):
            with self._lock:
                keys = sorted(self._pending[shard])
            seen: set[str] = set()
            for _, user_id in keys:
                if user_id not in seen:
                    seen.add(user_id)
                    yield user_id

    def pending_items(self, user_id: str, limit: int) -> list[Any]:
        with self._lock:
            found = [r for r in self._by_user.get(user_id, []) if r.pending_key is not None]
            found.sort(key=lambda r: str(r.pending_key))
            return [copy.copy(r) for r in found[:limit]]

    def take(self, record: Any, day: str, now: datetime) -> bool:
        with self._lock:
            stored = self._items.get((record.user_id, record.sk))
            if stored is None or stored.sent_on is not None:
                return False
            entry = (str(stored.pending_key), stored.user_id)
            self._pending[int(pending_shard(stored.user_id))].discard(entry)
            stored.sent_on, stored.digest_day, stored.pending_key = now, day, None
            return True

    def put_back(self, record: Any) -> bool:
        with self._lock:
            stored = self._items.get((record.user_id, record.sk))
            if stored is None:
                return False
            stored.sent_on = stored.digest_day = None
            assert stored.queued_on is not None
            stored.pending_key = moment_key(stored.queued_on, stored.occurrence_id)
            entry = (stored.pending_key, stored.user_id)
            self._pending[int(pending_shard(stored.user_id))].add(entry)
            return True

    # --- one digest per user per day -------------------------------------------------------------

    def claim_day(self, user_id: str, day: str, now: datetime) -> bool:
        with self._lock:
            return self._put_new(FakeDigestRecord(user_id, DAY + day, claimed_on=now))

    def release_day(self, user_id: str, day: str) -> None:
        with self._lock:
            self._items.pop((user_id, DAY + day), None)

    def finish_day(self, user_id: str, day: str, item_count: int, message_id: str) -> bool:
        with self._lock:
            stored = self._items.get((user_id, DAY + day))
            if stored is None:
                return False  # the claim is gone: nothing is written, as on DynamoDB
            stored.item_count, stored.message_id = item_count, message_id
            return True

    def day(self, user_id: str, day: str) -> Any:
        with self._lock:
            stored = self._items.get((user_id, DAY + day))
            return copy.copy(stored) if stored else None

    # --- instant emails --------------------------------------------------------------------------

    def claim_instant(self, user_id: str, occurrence_id: str, now: datetime) -> bool:
        with self._lock:
            return self._put_new(FakeDigestRecord(user_id, INSTANT + occurrence_id, claimed_on=now))

    def release_instant(self, user_id: str, occurrence_id: str) -> None:
        with self._lock:
            self._items.pop((user_id, INSTANT + occurrence_id), None)

    def record_instant(self, user_id: str, occurrence_id: str, message_id: str) -> bool:
        with self._lock:
            stored = self._items.get((user_id, INSTANT + occurrence_id))
            if stored is None:
                return False  # the claim is gone: nothing is written, as on DynamoDB
            stored.message_id = message_id
            return True


class FakeSlotClock:
    """The sending clock of store/sending.py (`SlotClock.take_slot`) in memory: the same
    answers (tests/store/test_slot_clock.py holds both to them), no request."""

    def __init__(self) -> None:
        self.free: dict[str, int] = {}
        self.held: dict[str, int] = {}
        self.refused = 0
        self._lock = threading.Lock()

    def take_slot(self, name: str, now: int, interval: int, *, first: bool) -> Any:
        from chalicelib.store.sending import Slot

        with self._lock:
            held = self.held.get(name, 0)
            if not first and held > now:
                self.refused += 1
                return Slot(False, held)
            slot = max(self.free.get(name, now), now)
            self.free[name] = slot + interval
            if first:
                self.held[name] = slot + interval
            return Slot(True, slot)
