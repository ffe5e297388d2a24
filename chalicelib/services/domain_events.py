"""Domain events: what happened, told once to whoever cares (notifications, feeds, …).

Creating a post or a comment publishes an event here, whatever created it (mail today, any other
path tomorrow); subscribers register in `default_handlers()`, not in the code that creates.
Delivery is at least once: a mail whose import is retried after a crash may publish again, so
handlers are idempotent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chalicelib.logs import get_logger

log = get_logger("events")


@dataclass(frozen=True)
class PostCreated:
    post_id: str
    group_id: str
    author_id: str


@dataclass(frozen=True)
class CommentCreated:
    comment_id: int
    post_id: str
    group_id: str
    author_id: str
    is_approved: bool


Handler = Callable[[Any], None]


class DomainEvents:
    def __init__(self, handlers: Sequence[Handler] = ()) -> None:
        self.handlers = list(handlers)

    @classmethod
    def default(cls) -> DomainEvents:
        return cls(default_handlers())

    def publish(self, event: Any) -> None:
        for handler in self.handlers:
            try:
                handler(event)
            except Exception:
                # What was created stays created; a failing subscriber is logged, not fatal.
                log.exception("event handler failed", extra={"event": type(event).__name__})


def default_handlers() -> list[Handler]:
    from chalicelib.services.notify import notify_subscribers

    return [notify_subscribers]
