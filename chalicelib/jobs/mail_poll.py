"""Mail-in (issue 4): the schedule dispatches one poll per enabled mailbox; each poll imports mail.

Until the mail-in issue lands there are no mailboxes to poll: the wiring is real, the work empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chalicelib.jobs.base import Deadline


@dataclass
class PollReport:
    lines: list[str] = field(default_factory=list)


def poll_all_in_process(deadline: Deadline) -> PollReport:
    """Poll every enabled mailbox in this process (CLI, `make run`)."""
    return PollReport()
