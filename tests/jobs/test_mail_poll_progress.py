"""`poll-mail` tells each mailbox's line as soon as that mailbox is done, not at the end."""

from __future__ import annotations

from chalicelib import deps
from chalicelib.jobs.base import Deadline
from chalicelib.jobs.mail_poll import MailPoll, poll_all_in_process


class TwoMailboxes:
    """A directory whose mailboxes were disabled after listing (each poll answers at once)."""

    def __init__(self, told: list[str]) -> None:
        self.told = told
        self.asked: list[tuple[str, int]] = []

    def enabled_mailbox_keys(self):
        yield "post#a"
        yield "post#b"

    def mailbox(self, key: str):
        # How many lines had been told when this mailbox's poll started.
        self.asked.append((key, len(self.told)))
        return None


def test_each_mailbox_line_is_told_before_the_next_mailbox_is_polled():
    told: list[str] = []
    source = TwoMailboxes(told)
    parts = MailPoll(source, deps.mailbox_settings_service(), deps.mail(), deps.mail_ingestor)
    report = poll_all_in_process(Deadline.unbounded(), parts=parts, on_line=told.append)
    assert told == report.lines == ["post#a: not enabled", "post#b: not enabled"]
    assert source.asked == [("post#a", 0), ("post#b", 1)]
