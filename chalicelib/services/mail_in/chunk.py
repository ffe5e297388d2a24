"""A chunk of downloaded mail, sorted before any of it is imported (services/mail_in/ingest.py).

Pure: what each mail's log entry says (none yet, handled, out of attempts, or interrupted)
decides whether it is imported now, skipped, quarantined or handled alone as a suspect; a mail
seen twice in one chunk follows the first. No I/O here: the ingestor reads the entries before and
writes the steps after.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from chalicelib.domain.mail_status import FINAL, MailStatus
from chalicelib.domain.ports.mail import LogEntry, Quarantine, Skip, Step
from chalicelib.services.mail_in.report import plain

if TYPE_CHECKING:
    from chalicelib.mail.parse import ParsedMail

# A mail already handled, found again: counted, not a status of its own.
SKIPPED = "skipped"

# What a readable mail's entry says, before this poll's attempt.
FRESH = "fresh"  # no entry: never seen
HANDLED = "handled"  # a final status: the same mail again
EXHAUSTED = "exhausted"  # attempts ran out without an outcome: the process died on it each time
SUSPECT = "suspect"  # an earlier attempt never finished: handled alone, after the rest


@dataclass
class DownloadedMail:
    """One downloaded message on its way through a chunk."""

    uidl: str
    raw: bytes
    received_on: datetime
    parsed: ParsedMail | None = None
    entry_id: str = ""
    entry: LogEntry | None = None
    status: str = ""  # the outcome of this poll: posted, …, failed, quarantined, skipped
    deletable: bool = False
    outcome: list[Step] = field(default_factory=list)  # its final steps, to be written

    @property
    def logged(self) -> LogEntry:
        assert self.entry is not None, "a mail's entry is known once its chunk is read"
        return self.entry

    @property
    def mail(self) -> ParsedMail:
        assert self.parsed is not None, "only readable mail is planned"
        return self.parsed


@dataclass
class SortedChunk:
    fresh: list[DownloadedMail] = field(default_factory=list)  # imported now, side by side
    suspects: list[DownloadedMail] = field(default_factory=list)  # one at a time, fewest first
    repeats: list[tuple[DownloadedMail, DownloadedMail]] = field(default_factory=list)
    settled: list[Step] = field(default_factory=list)  # skips and quarantines, written at once


def attempts_of(entry: LogEntry) -> int:
    return int(entry.attempts or 0)


def verdict(entry: LogEntry | None, max_attempts: int) -> str:
    """FRESH, HANDLED, EXHAUSTED or SUSPECT: what a mail's entry says of it."""
    if entry is None:
        return FRESH
    if entry.status in FINAL:
        return HANDLED
    if attempts_of(entry) >= max_attempts:
        return EXHAUSTED
    return SUSPECT


def interrupted_reason(attempts: int) -> str:
    return plain(
        f"the import was interrupted {attempts} times (the process "
        "stopped while handling it); no more retries (kept on the server)"
    )


def split_repeats(
    mails: Sequence[DownloadedMail],
) -> tuple[list[DownloadedMail], list[tuple[DownloadedMail, DownloadedMail]]]:
    """(the first mail of each entry, in order; each later one with the first of its entry)."""
    first_of: dict[str, DownloadedMail] = {}
    firsts: list[DownloadedMail] = []
    repeats: list[tuple[DownloadedMail, DownloadedMail]] = []
    for mail in mails:
        first = first_of.setdefault(mail.entry_id, mail)
        if first is mail:
            firsts.append(mail)
        else:
            repeats.append((mail, first))
    return firsts, repeats


def sort_chunk(
    readable: Sequence[DownloadedMail], known: Mapping[str, LogEntry], max_attempts: int
) -> SortedChunk:
    """The readable mails of a chunk (their entry ids set) by what their stored entries say.
    Each mail is given its entry (None: fresh); a skipped or quarantined one its status and
    whether it may be deleted."""
    firsts, repeats = split_repeats(readable)
    chunk = SortedChunk(repeats=repeats)
    for mail in firsts:
        entry = mail.entry = known.get(mail.entry_id)
        kind = verdict(entry, max_attempts)
        if kind == FRESH:
            chunk.fresh.append(mail)
        elif kind == SUSPECT:
            chunk.suspects.append(mail)
        elif kind == HANDLED:
            mail.status = SKIPPED
            mail.deletable = mail.logged.status != MailStatus.QUARANTINED
            chunk.settled.append(Skip(mail.logged, mail.uidl))
        else:
            mail.status = MailStatus.QUARANTINED
            reason = interrupted_reason(attempts_of(mail.logged))
            chunk.settled.append(Quarantine(mail.logged, mail.uidl, reason))
    chunk.suspects.sort(key=lambda suspect: attempts_of(suspect.logged))
    return chunk


def settle_repeats(repeats: Sequence[tuple[DownloadedMail, DownloadedMail]]) -> list[Skip]:
    """Mails seen again in the chunk that brought their first: skipped; those whose first was
    settled are marked handled under its entry (and deletable as it is)."""
    steps = []
    for mail, first in repeats:
        mail.status = SKIPPED
        if first.status in FINAL:
            mail.deletable = first.status != MailStatus.QUARANTINED
            steps.append(Skip(first.logged, mail.uidl))
    return steps
