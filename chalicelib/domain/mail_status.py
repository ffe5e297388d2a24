"""What became of a mail: the statuses of mail log entries (stored, listed by, and in the API).

The values are stored in the mail log and shown by the API: never rename one.
"""

from __future__ import annotations

from enum import StrEnum


class MailStatus(StrEnum):
    PROCESSING = "processing"  # reserved: an import under way, or interrupted (retried)
    POSTED = "posted"
    COMMENTED = "commented"
    IGNORED = "ignored"
    REJECTED = "rejected"
    FAILED = "failed"  # for now: the next poll tries again
    QUARANTINED = "quarantined"  # failed for good: the mail stays on its server, never retried


# A mail whose status is one of these is settled: its server's copy may go.
FINAL = frozenset(
    {
        MailStatus.POSTED,
        MailStatus.COMMENTED,
        MailStatus.IGNORED,
        MailStatus.REJECTED,
        MailStatus.QUARANTINED,
    }
)

# What a poll counts and reports (its line, the MailHandled metric), in order; and what the API
# and the log's by-status index show.
OUTCOMES = (
    MailStatus.POSTED,
    MailStatus.COMMENTED,
    MailStatus.IGNORED,
    MailStatus.REJECTED,
    MailStatus.FAILED,
)

# An interrupted import is listed as failed (to be retried), a quarantined mail as failed (for
# good: its reason says so).
_LISTED: dict[str, MailStatus] = {
    MailStatus.PROCESSING: MailStatus.FAILED,
    MailStatus.QUARANTINED: MailStatus.FAILED,
}


def listed(status: str) -> str:
    """The status a stored one is counted, listed and shown under (an unknown one as it is)."""
    return str(_LISTED.get(status, status))
