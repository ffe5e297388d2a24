"""The `offset` a list page answers (CONTRACT §7)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
Offset = TypeVar("Offset")


def next_offset(
    records: Sequence[Item], requested: Offset | None, id_of: Callable[[Item], Offset]
) -> Offset | None:
    """The id of the last item returned (the request's offset when the page is empty).

    A filtered page reads a bounded number of items (store/base.py `query_page`): when it stopped
    before the list's end it answers the last item it read instead, so the next page goes on from
    there; a page may then hold fewer than `pageSize` items, or none, while more may follow.
    """
    read_up_to: Offset | None = getattr(records, "last_read_id", None)
    if read_up_to is not None:
        return read_up_to
    return id_of(records[-1]) if records else requested
