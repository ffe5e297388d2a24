"""Mail in (CONTRACT §9): a mailbox's mail becomes posts or comments, exactly once.

The order of steps is what makes a crash between any two of them harmless:

1. list the mailbox and drop the messages whose UIDL marker (scoped to server, port and account)
   says they are handled; only the rest counts against the per-poll cap;
2. download (sequentially: one POP3 session) and parse; nothing stored yet, so a crash means
   the next poll downloads it again;
3. count the attempt on the mail's log entry, keyed by (mailbox, Message-ID or content hash),
   BEFORE planning or importing: a mail that kills the process (a Lambda timeout) is counted
   like one that raises, and is quarantined after `max_attempts`;
4. plan (pure rules, `chalicelib.services.mail_in.rules`) and store the post or comment with a
   conditional put (its id derives from the entry, so a retry finds it there);
5. write the final log entry and the UIDL marker (in batches: one BatchWriteItem for many mails);
   a crash before that leaves the entry `processing`, and the retry finds the post stored;
6. only then DELE (committed by QUIT; a crash before QUIT keeps the mail on the server, where
   the marker or the entry makes the next poll skip it).

One message never stops a mailbox: whatever goes wrong with it (a protocol error, a line of a
megabyte, binary junk, MIME nested 2,000 deep, an item too large, a timeout) becomes its log
entry, `rejected` with a plain reason when it will never work, `failed` and retried up to
`max_attempts` when it might, and the poll goes on, reconnecting if the session broke.

Speed: markers and entries are read in batches, fresh mails' attempts and outcomes are written
in batches, and mails are planned and stored concurrently (they are independent; POP3 stays sequential).
A mail whose attempt was counted by an earlier poll that never finished is a suspect: it is
handled on its own, so a mail that kills the process never takes the others down with it twice.

Who does what: the POP3 session of a poll is `chalicelib.mail.pop3.MailSession`; what a mail
becomes and what it stores, `planner.py` (the pure rules and the poll's counts in `rules.py`);
how a chunk of downloaded mail is sorted, here (last: the chunk is this flow's unit); the log's steps (`Reserve`, `Finish`, `Quarantine`, `Fail`, `Skip`,
domain/mailboxes.py) are written by the store, which answers the entries as they left them: this
module orders the steps and goes on with the entries answered (a mail's entry is never changed in
place).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from chalicelib.domain.announcements import MailRejected
from chalicelib.domain.mailboxes import (
    FINAL,
    VIA_PUSH,
    Fail,
    Finish,
    LogEntry,
    Mailbox,
    MailStatus,
    Quarantine,
    Reserve,
    Skip,
    Step,
)
from chalicelib.domain.ports.mail import MailLog, Marker, Outbox
from chalicelib.logs import get_logger
from chalicelib.mail.parse import MailParseError, content_hash, headers_of, parse_mail
from chalicelib.mail.pop3 import MailboxError, MailSession, MessageTooLarge, Pop3Server, open_pop3
from chalicelib.services.mail_in.notices import Dues, NoticeDecider, due_notice, unread_notice
from chalicelib.services.mail_in.planner import DownloadedMail, Planner, derived_id
from chalicelib.services.mail_in.rules import (
    Plan,
    PollResult,
    plain,
    plain_error,
)

if TYPE_CHECKING:
    from chalicelib.mail.parse import ParsedMail, ReadableHeaders

log = get_logger("mail")

MAX_MAIL_BYTES = 10 * 1024 * 1024
# Mails downloaded before they are stored together (batch reads and writes per chunk).
CHUNK = 25
MAX_SUBJECT_CHARS = 500

__all__ = ["Mailbox", "MailIngestor", "Plan", "PollResult", "open_pop3"]


class MailIngestor:
    def __init__(
        self,
        *,
        planner: Planner,
        mail: MailLog,
        outbox: Outbox,
        clock: Callable[[], datetime],
        open_mailbox: Callable[[Mailbox], Pop3Server] = open_pop3,
        max_messages: int = 200,
        max_bytes: int = MAX_MAIL_BYTES,
        max_attempts: int = 3,
        workers: int = 4,
        notices: NoticeDecider | None = None,
    ) -> None:
        # What a mail becomes, and storing it (services/mail_in/planner.py).
        self.planner = planner
        self.mail = mail
        # Rejections go to the outbox before their entry (a post or comment goes with its write,
        # in the store's transaction): domain/announcements.py.
        self.outbox = outbox
        self.notices = notices  # whether a rejected mail's sender is told why (None: never)
        self.clock = clock
        self.open_mailbox = open_mailbox
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.max_attempts = max_attempts
        self.workers = max(1, workers)

    # --- one mailbox -------------------------------------------------------------------------

    def poll(self, mailbox: Mailbox, expired: Callable[[], bool]) -> PollResult:
        result = PollResult(mailbox=mailbox.key)
        self.planner.begin_poll()
        session = MailSession(self.open_mailbox, mailbox)
        try:
            self._poll(session, mailbox, expired, result)
            session.quit()
        except BaseException:
            session.close()  # no QUIT: the server rolls back this session's deletions
            raise
        return result

    def _poll(
        self,
        session: MailSession,
        mailbox: Mailbox,
        expired: Callable[[], bool],
        result: PollResult,
    ) -> None:
        pending = self._skip_handled(session, mailbox, result)
        todo = pending[: self.max_messages]
        result.left = len(pending) - len(todo)
        position = 0
        while position < len(todo):
            chunk, position = self._download_chunk(
                session, mailbox, todo, position, expired, result
            )
            self._import_chunk(mailbox, chunk, result)
            for mail in chunk:
                if mailbox.delete_processed and mail.deletable and session.delete(mail.uidl):
                    result.deleted += 1
            if expired():
                result.left += len(todo) - position
                break

    def _skip_handled(
        self, session: MailSession, mailbox: Mailbox, result: PollResult
    ) -> list[str]:
        """The UIDLs not handled yet, in the server's order; the handled ones are counted as
        skipped (and deleted when the mailbox deletes what it handled)."""
        handled = self.mail.handled_uidls(mailbox.key, mailbox.account, list(session.order))
        pending = []
        for uidl in list(session.order):
            marker = handled.get(uidl)
            if marker is None:
                pending.append(uidl)
                continue
            result.seen += 1
            result.skipped += 1
            if mailbox.delete_processed and self._deletable(mailbox.key, marker):
                if session.delete(uidl):
                    result.deleted += 1
        return pending

    def _download_chunk(
        self,
        session: MailSession,
        mailbox: Mailbox,
        todo: Sequence[str],
        position: int,
        expired: Callable[[], bool],
        result: PollResult,
    ) -> tuple[list[DownloadedMail], int]:
        """Up to CHUNK mails downloaded from `position` on (fewer when time runs out), and the
        position after them."""
        chunk: list[DownloadedMail] = []
        while position < len(todo) and len(chunk) < CHUNK and not expired():
            uidl = todo[position]
            position += 1
            result.seen += 1
            downloaded = self._download(session, mailbox, uidl, result)
            if downloaded is not None:
                chunk.append(downloaded)
        return chunk, position

    def _deletable(self, mailbox_key: str, marker: Marker) -> bool:
        if marker.status is not None:
            return bool(marker.status != MailStatus.QUARANTINED)
        entry = self.mail.entry(mailbox_key, marker.entry_id)  # a marker from before statuses
        return entry is None or entry.status != MailStatus.QUARANTINED

    # --- one pushed mail (CONTRACT §13) ------------------------------------------------------

    def receive(
        self, mailbox: Mailbox, raw: bytes, received_on: datetime | None = None
    ) -> PollResult:
        """A mail pushed to the mailbox (SES receiving, make run's SMTP door): the same steps as
        a polled one (one reading, the sender checks, exactly once by its entry, the log with
        `via` push), with no server copy to mark or delete. Its counts say what it became: a
        `failed` one is for the pusher to deliver again (the next attempt finds its entry)."""
        result = PollResult(mailbox=mailbox.key, seen=1)
        self.planner.begin_poll()
        mail = DownloadedMail(
            uidl="", raw=raw, received_on=received_on or self.clock(), via=VIA_PUSH
        )
        if len(raw) > self.max_bytes:
            mail.entry_id = self._entry_id(mailbox.key, f"sha256:{content_hash(raw)}")
            known = self.mail.entry(mailbox.key, mail.entry_id)
            if known is not None and known.status in FINAL:  # delivered again: handled already
                result.skipped += 1
                return result
            reason = f"larger than {self.max_bytes} bytes ({len(raw)})"
            fresh = self._new_entry(mailbox, mail, headers_of(raw))
            due = unread_notice(self.notices, mailbox, raw, fresh, plain(reason))
            status = MailStatus.REJECTED
            result.count(self._finish_plain(mailbox, mail.entry_id, "", status, reason, fresh, due))
            return result
        self._import_chunk(mailbox, [mail], result)
        if mail.status == MailStatus.FAILED:
            result.error = "not handled now: to be delivered again"
        return result

    # --- download ----------------------------------------------------------------------------

    def _download(
        self, session: MailSession, mailbox: Mailbox, uidl: str, result: PollResult
    ) -> DownloadedMail | None:
        size = session.sizes.get(uidl, 0)
        if size > self.max_bytes:
            reason = f"larger than {self.max_bytes} bytes ({size}); not downloaded"
            self._reject_oversized(session, mailbox, uidl, reason, result)
            return None
        try:
            raw = session.retrieve(uidl, self.max_bytes)
        except MessageTooLarge:
            reason = f"larger than {self.max_bytes} bytes; the rest was not read"
            self._reject_oversized(session, mailbox, uidl, reason, result)
            return None
        except MailboxError as error:
            # Maybe transient (a timeout, a dropped connection): counted, retried, quarantined
            # after max_attempts. A broken session is reopened by the next session call.
            log.warning("mail download failed", extra={"mailbox": mailbox.key, "error": str(error)})
            by_uidl = self._entry_id(mailbox.key, f"uidl:{mailbox.account}:{uidl}")
            status = self._count_failure(mailbox, by_uidl, uidl, f"download failed: {error}")
            result.count(status)
            return None
        if raw is None:
            return None
        return DownloadedMail(uidl=uidl, raw=raw, received_on=self.clock())

    def _reject_oversized(
        self, session: MailSession, mailbox: Mailbox, uidl: str, reason: str, result: PollResult
    ) -> None:
        """A mail too large to take, whether its size said so or its download ran over: rejected
        for good (a retry would be as large) and deleted like a handled mail; its header block
        alone (TOP) fills its entry and tells its sender why, as a pushed mail's does."""
        mail = DownloadedMail(uidl=uidl, raw=session.head(uidl), received_on=self.clock())
        mail.entry_id = by_uidl = self._entry_id(mailbox.key, f"uidl:{mailbox.account}:{uidl}")
        fresh = self._new_entry(mailbox, mail, headers_of(mail.raw))
        due = unread_notice(self.notices, mailbox, mail.raw, fresh, plain(reason), whole=False)
        status = self._finish_plain(mailbox, by_uidl, uidl, MailStatus.REJECTED, reason, fresh, due)
        result.count(status)
        if mailbox.delete_processed and session.delete(uidl):
            result.deleted += 1

    # --- a chunk of downloaded mail ----------------------------------------------------------

    def _import_chunk(
        self, mailbox: Mailbox, chunk: list[DownloadedMail], result: PollResult
    ) -> None:
        readable, unreadable = self._read_chunk(mailbox, chunk)
        known = self.mail.entries(mailbox.key, [mail.entry_id for mail in readable])
        sorted_chunk = sort_chunk(readable, known, self.max_attempts)
        fresh = sorted_chunk.fresh
        for mail in fresh:
            mail.entry = self._new_entry(mailbox, mail, mail.mail)
        # Attempts of fresh mail are counted (with the settled entries) before any work; the
        # unreadable mails among them are announced first.
        self._announce_rejected(mailbox, [(step.entry, step.reason) for step in unreadable])
        self._record(
            mailbox,
            [*(Reserve(m.logged) for m in fresh), *unreadable, *sorted_chunk.settled],
            chunk,
        )

        # Fresh mail first (concurrently), its outcomes written in one batch; then the suspects
        # one at a time, fewest attempts first, each outcome written at once: a mail that kills
        # the process runs last and alone, so the rest keeps flowing.
        self._work_all(mailbox, fresh)
        self._write_outcomes(mailbox, fresh)
        for mail in sorted_chunk.suspects:
            self._record(mailbox, [Reserve(mail.logged)], [mail])
            self._work(mailbox, mail)
            self._write_outcomes(mailbox, [mail])

        for step in settle_repeats(sorted_chunk.repeats):
            self._record(mailbox, [step])
        for mail in chunk:
            result.count(mail.status)

    def _read_chunk(
        self, mailbox: Mailbox, chunk: Sequence[DownloadedMail]
    ) -> tuple[list[DownloadedMail], list[Finish]]:
        """(the mails that parse, their entry ids set; the rejections of those that do not)."""

        readable: list[DownloadedMail] = []
        unreadable: list[Finish] = []
        for mail in chunk:
            try:
                mail.parsed = parse_mail(mail.raw)
            except MailParseError as error:
                mail.entry_id = self._entry_id(mailbox.key, f"sha256:{content_hash(mail.raw)}")
                mail.status = MailStatus.REJECTED
                # Its headers were often fine: the entry keeps them, so it can be found.
                mail.entry = self._new_entry(mailbox, mail, headers_of(mail.raw))
                reason = plain(f"cannot be read: {error}")
                unreadable.append(Finish(mail.entry, mail.uidl, MailStatus.REJECTED, reason))
                mail.deletable = True
                continue
            mail.entry_id = self._entry_id(mailbox.key, mail.parsed.dedup_key)
            readable.append(mail)
        return readable, unreadable

    def _work_all(self, mailbox: Mailbox, fresh: Sequence[DownloadedMail]) -> None:
        if self.workers > 1 and len(fresh) > 1:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                # Each worker runs in a copy of this context (the poll's correlation id).
                futures = [
                    pool.submit(contextvars.copy_context().run, self._work, mailbox, mail)
                    for mail in fresh
                ]
                for future in futures:
                    future.result()  # re-raises what a worker raised, a simulated crash too
        else:
            for mail in fresh:
                self._work(mailbox, mail)

    def _new_entry(
        self, mailbox: Mailbox, mail: DownloadedMail, said: ParsedMail | ReadableHeaders
    ) -> LogEntry:
        """The mail's entry, with what its headers say, not stored yet: `parse_mail` and
        `headers_of` answer each of these as one clean line (mail/parse.py: no control character,
        line break or bidirectional override), so the entry only cuts them to its limits."""
        return LogEntry(
            mailbox.key,
            mail.entry_id,
            mail.received_on,
            message_id=_cut(said.message_id, 500),
            sender=_cut(said.from_address, 500),
            subject=_cut(said.subject, MAX_SUBJECT_CHARS),
            via=mail.via,
        )

    def _write_outcomes(self, mailbox: Mailbox, mails: Sequence[DownloadedMail]) -> None:
        written = [mail for mail in mails if mail.outcome]
        if not written:
            return
        self._announce_rejected(
            mailbox,
            [
                (step.entry, step.reason)
                for mail in written
                for step in mail.outcome
                if isinstance(step, Finish) and step.status == MailStatus.REJECTED
            ],
            [mail.notice for mail in written if mail.notice is not None],
        )
        self._record(mailbox, [step for mail in written for step in mail.outcome], written)
        for mail in written:
            mail.outcome = []

    # --- one mail ----------------------------------------------------------------------------

    def _record(
        self, mailbox: Mailbox, steps: Sequence[Step], mails: Sequence[DownloadedMail] = ()
    ) -> None:
        """Write the steps; `mails` (those the steps name among them) go on with their entries
        as the log answers them."""
        left = self.mail.record(mailbox.key, mailbox.account, steps)
        for mail in mails:
            if mail.entry is not None:
                mail.entry = left.get(mail.entry.entry_id, mail.entry)

    def _work(self, mailbox: Mailbox, mail: DownloadedMail) -> None:
        """Plan and store one mail whose attempt is counted; failures become its entry."""
        try:
            last_attempt = mail.logged.attempts >= self.max_attempts
            # A comment's id is kept on `mail.entry` first: a failure below is written with it.
            outcome = self.planner.take(mailbox, mail, last_attempt=last_attempt)
            if outcome.status == MailStatus.REJECTED:  # its sender may be told why
                outcome, mail.notice = due_notice(
                    self.notices, mailbox, mail.mail, mail.raw, outcome, mail.sender_proven
                )
        except Exception as error:  # one bad mail must not stop the mailbox
            attempt = mail.logged.attempts
            log.exception("mail failed", extra={"mailbox": mailbox.key, "attempt": attempt})
            mail.status = self._settle_failure(mailbox, mail, plain_error(error))
            mail.deletable = False
            return
        mail.outcome = [outcome]  # written with the chunk's other outcomes
        mail.status = outcome.status
        mail.deletable = True
        log.info(
            "mail handled",
            extra={"mailbox": mailbox.key, "status": outcome.status, "reason": outcome.reason},
        )

    def _announce_rejected(
        self, mailbox: Mailbox, rejected: Sequence[tuple[LogEntry, str]], due: Dues = ()
    ) -> None:
        """Record the rejections (and notices due) in the outbox before their entries are stored:
        a crash between the two retries the mail, which announces it again (never lost)."""
        if not rejected:
            return
        self.outbox.save(
            [*due]
            + [
                MailRejected(
                    mailbox=mailbox.key,
                    group_id=mailbox.group_id,
                    log_entry_id=str(entry.entry_id),
                    message_id=entry.message_id or None,
                    reason=reason,
                )
                for entry, reason in rejected
            ]
        )

    def _finish_plain(
        self,
        mailbox: Mailbox,
        entry_id: str,
        uidl: str,
        status: str,
        reason: str,
        fresh: LogEntry | None = None,
        due: Dues = (),
    ) -> str:
        """A final outcome with no reading of the mail (`fresh`: its entry if none; `due`: notice)."""
        entry = (
            self.mail.entry(mailbox.key, entry_id)
            or fresh
            or LogEntry(mailbox.key, entry_id, self.clock())
        )
        entry = replace(entry, notice_sent=True) if due else entry
        reason = plain(reason)
        if status == MailStatus.REJECTED:
            self._announce_rejected(mailbox, [(entry, reason)], due)
        self._record(mailbox, [Finish(entry, uidl, status, reason)])
        log.info("mail handled", extra={"mailbox": mailbox.key, "status": status, "reason": reason})
        return status

    def _count_failure(self, mailbox: Mailbox, entry_id: str, uidl: str, detail: str) -> str:
        """An attempt that failed before its mail could be read (a download): counted and
        settled in one write."""
        entry = self.mail.entry(mailbox.key, entry_id) or LogEntry(
            mailbox.key, entry_id, self.clock()
        )
        step = self._failure(entry, uidl, detail, entry.attempts + 1)
        self._record(mailbox, [Reserve(entry), step])
        return MailStatus.QUARANTINED if isinstance(step, Quarantine) else MailStatus.FAILED

    def _settle_failure(self, mailbox: Mailbox, mail: DownloadedMail, detail: str) -> str:
        """The counted attempt failed: retried by the next poll, or quarantined for good."""
        step = self._failure(mail.logged, mail.uidl, detail, mail.logged.attempts)
        self._record(mailbox, [step], [mail])
        return MailStatus.QUARANTINED if isinstance(step, Quarantine) else MailStatus.FAILED

    def _failure(self, entry: LogEntry, uidl: str, detail: str, attempts: int) -> Step:
        if attempts >= self.max_attempts:
            reason = f"failed {attempts} times, no more retries (kept on the server): {detail}"
            return Quarantine(entry, uidl, plain(reason))
        reason = f"attempt {attempts} of {self.max_attempts} failed, will retry: {detail}"
        return Fail(entry, plain(reason))

    @staticmethod
    def _entry_id(mailbox_key: str, dedup_key: str) -> str:
        return derived_id(mailbox_key, dedup_key)


def _cut(value: str | None, limit: int) -> str | None:
    return value[:limit] if value else None


# -----------------------------------------------------------------------------------------------
# A chunk of downloaded mail, sorted before any of it is imported (`_import_chunk`, above).
#
# Pure: what each mail's log entry says (none yet, handled, out of attempts, or interrupted)
# decides whether it is imported now, skipped, quarantined or handled alone as a suspect; a mail
# seen twice in one chunk follows the first. No I/O here: the ingestor reads the entries before and
# writes the steps after. Beside the flow that drives it, as the chunk is the unit of that flow.


# A mail already handled, found again: counted, not a status of its own.
SKIPPED = "skipped"

# What a readable mail's entry says, before this poll's attempt.
FRESH = "fresh"  # no entry: never seen
HANDLED = "handled"  # a final status: the same mail again
EXHAUSTED = "exhausted"  # attempts ran out without an outcome: the process died on it each time
SUSPECT = "suspect"  # an earlier attempt never finished: handled alone, after the rest


@dataclass
class SortedChunk:
    fresh: list[DownloadedMail] = field(default_factory=list)  # imported now, side by side
    suspects: list[DownloadedMail] = field(default_factory=list)  # one at a time, fewest first
    repeats: list[tuple[DownloadedMail, DownloadedMail]] = field(default_factory=list)
    settled: list[Step] = field(default_factory=list)  # skips and quarantines, written at once


def verdict(entry: LogEntry | None, max_attempts: int) -> str:
    """FRESH, HANDLED, EXHAUSTED or SUSPECT: what a mail's entry says of it."""
    if entry is None:
        return FRESH
    if entry.status in FINAL:
        return HANDLED
    if entry.attempts >= max_attempts:
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
            reason = interrupted_reason(mail.logged.attempts)
            chunk.settled.append(Quarantine(mail.logged, mail.uidl, reason))
    chunk.suspects.sort(key=lambda suspect: suspect.logged.attempts)
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
