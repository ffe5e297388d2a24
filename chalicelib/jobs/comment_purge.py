"""The monthly purge of comments deleted more than a calendar month ago (issue 5)."""

from __future__ import annotations

from chalicelib.jobs.base import Deadline


def purge_old_deleted_comments(deadline: Deadline) -> int:
    """Purge across every group; answers the number purged. Filled in by the moderation issue."""
    return 0
