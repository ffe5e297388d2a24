"""The memory of one call: within `one_call()` a record is read at most once (store/base.py).

Apart from base.py because the HTTP layer opens a call around every request before it knows
whether the request needs a table: importing this costs nothing, where base.py loads PynamoDB
(about 100 ms of a cold container's first request, a 401 or the OpenAPI document included).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# What the current call has read (None outside a call): kept until the call ends.
this_call_memory: ContextVar[dict[tuple[str, Hashable], Any] | None] = ContextVar(
    "agora_this_call", default=None
)


@contextmanager
def one_call() -> Iterator[None]:
    """Every record read inside is read at most once (one HTTP request, one job step)."""
    token = this_call_memory.set({})
    try:
        yield
    finally:
        this_call_memory.reset(token)
