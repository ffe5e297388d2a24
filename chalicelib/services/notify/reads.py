"""What the notifications of one batch of events read once (services/notify/delivery.py, jobs/outbox.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

ValueT = TypeVar("ValueT")


class BatchReads:
    """What the notifications of one batch of events (a drain of outbox records) read once.

    A poll that posts a hundred mails into one group records a hundred events about the same
    group and author: their subscribers are read for the first and reused for the rest, and the
    drain reads the batch's posts in one BatchGetItem and hands them in here (issue 14's budget
    of DynamoDB requests per mail). Made by the drain (jobs/outbox.py) and given to the
    `NotifyService` of that batch; it lives as long as the batch, so a subscription changed
    during a batch counts from the next one on. Thread-safe.
    """

    def __init__(self, posts: Mapping[str, Any] | None = None) -> None:
        self._posts = dict(posts or {})
        self._read: dict[tuple[object, ...], Any] = {}
        self._lock = threading.Lock()

    def post(self, post_id: str) -> Any:
        """The post as the drain read it, else None (read it from the table)."""
        return self._posts.get(post_id)

    def once(self, key: tuple[object, ...], read: Callable[[], ValueT]) -> ValueT:
        # Reading under the lock: two workers asking for the same key read it once, not twice.
        with self._lock:
            if key not in self._read:
                self._read[key] = read()
            value: ValueT = self._read[key]
            return value
