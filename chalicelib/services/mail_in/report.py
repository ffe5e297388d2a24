"""What a poll tells: its counts (the CLI's line, the job's log and metrics) and the plain words
its mail log entries may hold (no control characters, no library internals)."""

from __future__ import annotations

from dataclasses import dataclass

from chalicelib.domain.mail_status import OUTCOMES, MailStatus

MAX_REASON_CHARS = 1000


@dataclass
class PollResult:
    mailbox: str
    seen: int = 0
    posted: int = 0
    commented: int = 0
    ignored: int = 0
    rejected: int = 0
    failed: int = 0
    skipped: int = 0
    deleted: int = 0
    left: int = 0
    error: str | None = None

    def line(self) -> str:
        counts = ", ".join(
            f"{name} {getattr(self, name)}"
            for name in (
                "seen",
                *OUTCOMES,
                "skipped",
                "deleted",
                "left",
            )
        )
        return f"{self.mailbox}: {counts}" + (f" (error: {self.error})" if self.error else "")

    def count(self, status: str) -> None:
        name = MailStatus.FAILED if status == MailStatus.QUARANTINED else status
        if hasattr(self, name) and name not in ("seen", "deleted", "left", "mailbox", "error"):
            setattr(self, name, getattr(self, name) + 1)


def clean_field(value: str | None, limit: int) -> str | None:
    from chalicelib.mail.parse import clean_line

    return clean_line(value)[:limit] if value else None


def plain(reason: str) -> str:
    from chalicelib.mail.parse import clean_line

    return clean_line(reason)[:MAX_REASON_CHARS]


def plain_error(error: BaseException) -> str:
    """What the log may say about an exception: plain words, never a library's internals (the
    details go to the function's own log for operators)."""
    from chalicelib.mail.authentication import DnsUnavailable
    from chalicelib.mail.pop3 import MailboxError

    if isinstance(error, MailboxError | DnsUnavailable):
        return str(error)
    if isinstance(error, TimeoutError):
        return "timed out"
    module = type(error).__module__ or ""
    if module.startswith(("pynamodb", "botocore")):
        return "the database did not accept or answer the write (see the job's log)"
    return "an internal error (see the job's log)"
