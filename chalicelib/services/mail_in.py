"""Mail in (CONTRACT §9): a mailbox's mail becomes posts or comments, exactly once.

The order of steps is what makes a crash between any two of them harmless:

1. list the mailbox and drop the messages whose UIDL marker (scoped to server, port and account)
   says they are handled; only the rest counts against the per-poll cap;
2. download (sequentially: one POP3 session) and parse; nothing stored yet, so a crash means
   the next poll downloads it again;
3. count the attempt on the mail's log entry, keyed by (mailbox, Message-ID or content hash),
   BEFORE planning or importing: a mail that kills the process (a Lambda timeout) is counted
   like one that raises, and is quarantined after `max_attempts`;
4. plan (pure rules, `chalicelib.services.mail_rules`) and store the post or comment with a
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
"""

from __future__ import annotations

import contextvars
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chalicelib.auth import Caller
from chalicelib.logs import get_logger
from chalicelib.services import mail_rules
from chalicelib.services.domain_events import CommentCreated, MailRejected, PostCreated
from chalicelib.services.links import slugify
from chalicelib.services.mail_rules import Plan
from chalicelib.services.mailboxes import Mailbox

if TYPE_CHECKING:
    from chalicelib.mail.hosts import HostPolicy

log = get_logger("mail")

# Mail ids derive from this namespace, so that the same mail always maps to the same records.
MAIL_NAMESPACE = uuid.UUID("1b2f6c3e-58a4-4f0d-9c47-0a9e1f3b7d21")
FINAL = {"posted", "commented", "ignored", "rejected", "quarantined"}
MAX_MAIL_BYTES = 10 * 1024 * 1024
COMMENT_COUNTER = "comments"
# Mails downloaded before they are stored together (batch reads and writes per chunk).
CHUNK = 25
# A session that keeps breaking is given up after this many reconnections in one poll.
MAX_RECONNECTS = 3
MAX_SUBJECT_CHARS = 500
MAX_REASON_CHARS = 1000

__all__ = ["Checkpoints", "Mailbox", "MailIngestor", "Plan", "PollResult"]


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
                "posted",
                "commented",
                "ignored",
                "rejected",
                "failed",
                "skipped",
                "deleted",
                "left",
            )
        )
        return f"{self.mailbox}: {counts}" + (f" (error: {self.error})" if self.error else "")

    def count(self, status: str) -> None:
        name = {"quarantined": "failed"}.get(status, status)
        if hasattr(self, name) and name not in ("seen", "deleted", "left", "mailbox", "error"):
            setattr(self, name, getattr(self, name) + 1)


class Checkpoints:
    """Named points between the steps above. Tests pass one that fails at a chosen step
    (`mail` is the ParsedMail being handled, where there is one)."""

    def reached(self, step: str, mail: Any = None) -> None:
        return None


def open_pop3(mailbox: Mailbox, hosts: HostPolicy | None = None) -> Any:
    """The default `open_mailbox`: a POP3 session, logged in, on a host the policy allows
    (AGORA_MAIL_ALLOW_PRIVATE_HOSTS's, unless one is given)."""
    from chalicelib.mail.hosts import HostPolicy
    from chalicelib.mail.pop3 import Pop3Mailbox
    from chalicelib.settings import get_settings

    return Pop3Mailbox(
        mailbox.server_name,
        mailbox.server_port,
        mailbox.server_username,
        mailbox.password,
        is_ssl=mailbox.is_ssl,
        hosts=hosts or HostPolicy(get_settings().mail_allow_private_hosts),
    )


@dataclass
class _Mail:
    """One downloaded message on its way through a chunk."""

    uidl: str
    raw: bytes
    parsed: Any = None
    entry_id: str = ""
    entry: Any = None
    received_on: datetime | None = None
    status: str = ""  # the outcome of this poll: posted, …, failed, quarantined, skipped
    deletable: bool = False
    outcome: list[Any] = field(default_factory=list)  # final entry and marker, to be written


@dataclass
class _Chunk:
    mails: list[_Mail] = field(default_factory=list)


class _Session:
    """The POP3 session of one poll, addressed by UIDL, reconnecting when it breaks.

    Message numbers change between sessions (RFC 1939 §7); UIDLs do not, so everything above
    speaks UIDLs. Deletions marked before a reconnection are rolled back by the server; their
    markers make the next poll delete them.
    """

    def __init__(self, opener: Callable[[Mailbox], Any], mailbox: Mailbox) -> None:
        self.opener = opener
        self.mailbox = mailbox
        self.reconnects = 0
        self.server: Any = None
        self.numbers: dict[str, int] = {}
        self.sizes: dict[str, int] = {}
        self.order: list[str] = []
        self._open()

    def _open(self) -> None:
        self.server = self.opener(self.mailbox)
        sizes = self.server.listing()
        uidls = self.server.uidls()
        self.numbers, self.sizes, self.order = {}, {}, []
        for number in sorted(sizes):
            uidl = uidls.get(number, f"#{number}")
            if uidl in self.numbers:  # a server repeating a UIDL: the later copy waits
                continue
            self.numbers[uidl] = number
            self.sizes[uidl] = sizes[number]
            self.order.append(uidl)

    def ensure_usable(self) -> None:
        if getattr(self.server, "is_usable", True):
            return
        from chalicelib.mail.pop3 import MailboxError

        if self.reconnects >= MAX_RECONNECTS:
            raise MailboxError(f"the connection broke {self.reconnects + 1} times; giving up")
        self.reconnects += 1
        self.close()
        self._open()

    def retrieve(self, uidl: str, max_bytes: int) -> bytes | None:
        """The message, or None when it is gone from the server since the listing."""
        self.ensure_usable()
        number = self.numbers.get(uidl)
        if number is None:
            return None
        return bytes(self.server.retrieve(number, max_bytes))

    def delete(self, uidl: str) -> bool:
        self.ensure_usable()
        number = self.numbers.get(uidl)
        if number is None:
            return False
        self.server.delete(number)
        return True

    def quit(self) -> None:
        self.server.quit()

    def close(self) -> None:
        try:
            self.server.close()
        except Exception:  # closing a broken connection may fail again; it is gone either way
            pass


class MailIngestor:
    def __init__(
        self,
        *,
        users: Any,
        groups: Any,
        posts: Any,
        comments: Any,
        counters: Any,
        mail: Any,
        outbox: Any,
        clock: Callable[[], datetime],
        base_url: str,
        authserv_id: str | None = None,
        verifier: Any = None,
        checkpoints: Checkpoints | None = None,
        open_mailbox: Callable[[Mailbox], Any] = open_pop3,
        max_messages: int = 200,
        max_bytes: int = MAX_MAIL_BYTES,
        max_attempts: int = 3,
        workers: int = 4,
    ) -> None:
        self.users = users
        self.groups = groups
        self.posts = posts
        self.comments = comments
        self.counters = counters
        self.mail = mail
        # Rejections go to the outbox before their entry (a post or comment goes with its write,
        # in the store's transaction): services/domain_events.py.
        self.outbox = outbox
        self.clock = clock
        self.base_url = base_url.rstrip("/")
        self.authserv_id = authserv_id
        # AGORA_MAIL_AUTH=verify: a chalicelib.mail.authentication.SenderVerifier (one per poll).
        self.verifier = verifier
        self.checkpoints = checkpoints or Checkpoints()
        self.open_mailbox = open_mailbox
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.max_attempts = max_attempts
        self.workers = max(1, workers)
        # Senders, groups and slugs repeat within a mailbox: each is read once per poll.
        self._authors: dict[str, Any] = {}
        self._groups: dict[str, Any] = {}
        self._slugs: dict[str, set[str]] = {}
        self._slug_lock = threading.Lock()
        self._lookup_lock = threading.Lock()

    # --- one mailbox -------------------------------------------------------------------------

    def poll(self, mailbox: Mailbox, expired: Callable[[], bool]) -> PollResult:
        result = PollResult(mailbox=mailbox.key)
        self._authors.clear()
        self._groups.clear()
        self._slugs.clear()
        session = _Session(self.open_mailbox, mailbox)
        try:
            self._poll(session, mailbox, expired, result)
            session.quit()
        except BaseException:
            session.close()  # no QUIT: the server rolls back this session's deletions
            raise
        return result

    def _poll(
        self,
        session: _Session,
        mailbox: Mailbox,
        expired: Callable[[], bool],
        result: PollResult,
    ) -> None:
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
        todo = pending[: self.max_messages]
        result.left = len(pending) - len(todo)
        self.mail.prepare()
        position = 0
        while position < len(todo):
            chunk = _Chunk()
            while position < len(todo) and len(chunk.mails) < CHUNK and not expired():
                uidl = todo[position]
                position += 1
                result.seen += 1
                downloaded = self._download(session, mailbox, uidl, result)
                if downloaded is not None:
                    chunk.mails.append(downloaded)
            self._import_chunk(mailbox, chunk, result)
            for mail in chunk.mails:
                if mailbox.delete_processed and mail.deletable and session.delete(mail.uidl):
                    self.checkpoints.reached("deleted", mail.parsed)
                    result.deleted += 1
            if expired():
                result.left += len(todo) - position
                break

    def _deletable(self, mailbox_key: str, marker: Any) -> bool:
        if marker.status is not None:
            return bool(marker.status != "quarantined")
        entry = self.mail.entry(mailbox_key, marker.entry_id)  # a marker from before statuses
        return entry is None or entry.status != "quarantined"

    # --- download ----------------------------------------------------------------------------

    def _download(
        self, session: _Session, mailbox: Mailbox, uidl: str, result: PollResult
    ) -> _Mail | None:
        from chalicelib.mail.pop3 import MailboxError, MessageTooLarge

        size = session.sizes.get(uidl, 0)
        by_uidl = self._entry_id(mailbox.key, f"uidl:{mailbox.account}:{uidl}")
        if size > self.max_bytes:
            reason = f"larger than {self.max_bytes} bytes ({size}); not downloaded"
            status = self._finish_plain(mailbox, by_uidl, uidl, "rejected", reason)
            result.count(status)
            if mailbox.delete_processed and session.delete(uidl):
                result.deleted += 1
            return None
        try:
            raw = session.retrieve(uidl, self.max_bytes)
        except MessageTooLarge:
            reason = f"larger than {self.max_bytes} bytes; the rest was not read"
            status = self._finish_plain(mailbox, by_uidl, uidl, "rejected", reason)
            result.count(status)
            if mailbox.delete_processed and session.delete(uidl):
                result.deleted += 1
            return None
        except MailboxError as error:
            # Maybe transient (a timeout, a dropped connection): counted, retried, quarantined
            # after max_attempts. A broken session is reopened by the next session call.
            log.warning("mail download failed", extra={"mailbox": mailbox.key, "error": str(error)})
            status = self._count_failure(mailbox, by_uidl, uidl, f"download failed: {error}")
            result.count(status)
            return None
        if raw is None:
            return None
        self.checkpoints.reached("downloaded")
        return _Mail(uidl=uidl, raw=raw)

    # --- a chunk of downloaded mail ----------------------------------------------------------

    def _import_chunk(self, mailbox: Mailbox, chunk: _Chunk, result: PollResult) -> None:
        from chalicelib.mail.parse import MailParseError, content_hash, headers_of, parse_mail

        readable: list[_Mail] = []
        finished: list[Any] = []  # entries and markers written in one batch
        for mail in chunk.mails:
            mail.received_on = self.clock()
            try:
                mail.parsed = parse_mail(mail.raw)
            except MailParseError as error:
                mail.entry_id = self._entry_id(mailbox.key, f"sha256:{content_hash(mail.raw)}")
                mail.status = "rejected"
                # Its headers were often fine: the entry keeps them, so it can be found.
                headers = headers_of(mail.raw)
                mail.entry = self.mail.new_entry(
                    mailbox.key,
                    mail.entry_id,
                    mail.received_on,
                    status="rejected",
                    reason=_plain(f"cannot be read: {error}"),
                    message_id=_clean(headers.message_id, 500),
                    sender=_clean(headers.from_address, 500),
                    subject=_clean(headers.subject, MAX_SUBJECT_CHARS),
                )
                finished += [
                    mail.entry,
                    self.mail.marker(mailbox.key, mailbox.account, mail.uidl, mail.entry),
                ]
                mail.deletable = True
                continue
            mail.entry_id = self._entry_id(mailbox.key, mail.parsed.dedup_key)
            readable.append(mail)

        known = self.mail.entries(mailbox.key, [mail.entry_id for mail in readable])
        fresh: list[_Mail] = []
        suspects: list[_Mail] = []
        duplicates: list[_Mail] = []
        first_of: dict[str, _Mail] = {}
        for mail in readable:
            if mail.entry_id in first_of:
                duplicates.append(mail)  # the same mail twice in one chunk: after the first
                continue
            first_of[mail.entry_id] = mail
            entry = known.get(mail.entry_id)
            mail.entry = entry
            if entry is not None and entry.status in FINAL:
                # The same mail again (same Message-ID, or same content): handled already.
                mail.status = "skipped"
                mail.deletable = entry.status != "quarantined"
                finished.append(self.mail.marker(mailbox.key, mailbox.account, mail.uidl, entry))
            elif entry is not None and int(entry.attempts or 0) >= self.max_attempts:
                # Its attempts ran out without an outcome: the process died on it each time.
                entry.status = "quarantined"
                entry.reason = _plain(
                    f"the import was interrupted {int(entry.attempts)} times (the process "
                    "stopped while handling it); no more retries (kept on the server)"
                )
                mail.status = "quarantined"
                finished += [
                    entry,
                    self.mail.marker(mailbox.key, mailbox.account, mail.uidl, entry),
                ]
            elif entry is not None:
                suspects.append(mail)
            else:
                mail.entry = self.mail.new_entry(
                    mailbox.key,
                    mail.entry_id,
                    mail.received_on,
                    message_id=_clean(mail.parsed.message_id, 500),
                    sender=_clean(mail.parsed.from_address, 500),
                    subject=_clean(mail.parsed.subject, MAX_SUBJECT_CHARS),
                    status="processing",
                    attempts=1,
                )
                fresh.append(mail)
        # Attempts of fresh mail are counted (with the finished entries) before any work; the
        # unreadable mails among them are announced first.
        self._announce_rejected(mailbox, [m.entry for m in chunk.mails if m.status == "rejected"])
        self.mail.write_all([*(m.entry for m in fresh), *finished])
        self.checkpoints.reached("entry_reserved")

        # Fresh mail first (concurrently), its outcomes written in one batch; then the suspects
        # one at a time, fewest attempts first, each outcome written at once: a mail that kills
        # the process runs last and alone, so the rest keeps flowing.
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
        self._write_outcomes(mailbox, fresh)
        for mail in sorted(suspects, key=lambda suspect: int(suspect.entry.attempts or 0)):
            mail.entry.attempts = int(mail.entry.attempts or 0) + 1
            mail.entry.status = "processing"
            self.mail.save_entry(mail.entry)
            self.checkpoints.reached("entry_reserved", mail.parsed)
            self._work(mailbox, mail)
            self._write_outcomes(mailbox, [mail])

        for mail in duplicates:
            first = first_of[mail.entry_id]
            mail.status = "skipped"
            if first.status in FINAL:
                mail.deletable = first.status != "quarantined"
                self.mail.write_all(
                    [self.mail.marker(mailbox.key, mailbox.account, mail.uidl, first.entry)]
                )
        for mail in chunk.mails:
            result.count(mail.status)

    def _write_outcomes(self, mailbox: Mailbox, mails: list[_Mail]) -> None:
        written = [mail for mail in mails if mail.outcome]
        if not written:
            return
        self._announce_rejected(
            mailbox, [mail.entry for mail in written if mail.entry.status == "rejected"]
        )
        self.mail.write_all([record for mail in written for record in mail.outcome])
        for mail in written:
            mail.outcome = []
        self.checkpoints.reached("outcome_stored")

    # --- one mail ----------------------------------------------------------------------------

    def _work(self, mailbox: Mailbox, mail: _Mail) -> None:
        """Plan and store one mail whose attempt is counted; failures become its entry."""
        entry = mail.entry
        try:
            self.checkpoints.reached("planning", mail.parsed)
            last_attempt = int(entry.attempts or 0) >= self.max_attempts
            plan = self.plan(mailbox, mail.parsed, raw=mail.raw, last_attempt=last_attempt)
            status = self._store(mailbox, mail, plan)
        except Exception as error:  # one bad mail must not stop the mailbox
            log.exception("mail failed", extra={"mailbox": mailbox.key, "attempt": entry.attempts})
            mail.status = self._failed(mailbox, entry, mail.uidl, error)
            mail.deletable = False
            return
        mail.status = status
        mail.deletable = True
        log.info(
            "mail handled",
            extra={"mailbox": mailbox.key, "status": status, "reason": entry.reason},
        )

    def _store(self, mailbox: Mailbox, mail: _Mail, plan: Plan) -> str:
        """Store the post or comment with its event (a conditional put: a retry finds it there),
        and leave the final entry and marker in `mail.outcome` for a batch write."""
        entry = mail.entry
        notes = "; ".join(plan.notes)
        if plan.status == "posted":
            entry.post_id = entry.post_id or self._entry_id(mailbox.key, f"post:{entry.entry_id}")
            # Its event goes in the same transaction (a retry that finds the post there finds
            # the event recorded with it).
            self.posts.insert(
                events=[
                    PostCreated(
                        post_id=entry.post_id, group_id=plan.group.id, author_id=plan.author.id
                    )
                ],
                **self._post_values(entry.post_id, plan, mail.received_on),
            )
            self.checkpoints.reached("record_stored", mail.parsed)
            entry.reason = _plain(notes or "posted")
        elif plan.status == "commented":
            if not entry.comment_id:
                # The id is kept on the entry before the comment is stored: a retry after a
                # crash reuses it, so the conditional put finds the comment already there.
                entry.comment_id = self.counters.next_value(COMMENT_COUNTER)
                entry.post_id = plan.post.id
                self.mail.save_entry(entry)
            self.comments.insert(
                events=[
                    CommentCreated(
                        comment_id=int(entry.comment_id),
                        post_id=plan.post.id,
                        group_id=plan.group.id,
                        author_id=plan.author.id,
                        is_approved=plan.is_approved,
                    )
                ],
                **self._comment_values(int(entry.comment_id), plan, mail.received_on),
            )
            self.checkpoints.reached("record_stored", mail.parsed)
            state = "approved" if plan.is_approved else "awaiting approval"
            entry.reason = _plain(state + (f"; {notes}" if notes else ""))
        else:
            entry.reason = _plain(plan.reason)
        entry.status = plan.status
        mail.outcome = [entry, self.mail.marker(mailbox.key, mailbox.account, mail.uidl, entry)]
        return plan.status

    def _announce_rejected(self, mailbox: Mailbox, entries: list[Any]) -> None:
        """Record the rejections in the outbox before their entries are stored: a crash between
        the two retries the mail, which announces it again (at least once, never lost)."""
        if not entries:
            return
        self.outbox.save(
            [
                MailRejected(
                    mailbox=mailbox.key,
                    group_id=mailbox.group_id,
                    log_entry_id=str(entry.entry_id),
                    message_id=entry.message_id or None,
                    reason=str(entry.reason or ""),
                )
                for entry in entries
            ]
        )

    def _finish_plain(
        self, mailbox: Mailbox, entry_id: str, uidl: str, status: str, reason: str
    ) -> str:
        entry = self.mail.entry(mailbox.key, entry_id) or self.mail.new_entry(
            mailbox.key, entry_id, self.clock()
        )
        entry.status, entry.reason = status, _plain(reason)
        if status == "rejected":
            self._announce_rejected(mailbox, [entry])
        self.mail.write_all([entry, self.mail.marker(mailbox.key, mailbox.account, uidl, entry)])
        log.info("mail handled", extra={"mailbox": mailbox.key, "status": status, "reason": reason})
        return status

    def _count_failure(self, mailbox: Mailbox, entry_id: str, uidl: str, detail: str) -> str:
        entry = self.mail.entry(mailbox.key, entry_id) or self.mail.new_entry(
            mailbox.key, entry_id, self.clock(), attempts=0
        )
        entry.attempts = int(entry.attempts or 0) + 1
        return self._settle_failure(mailbox, entry, uidl, detail)

    def _failed(self, mailbox: Mailbox, entry: Any, uidl: str, error: Exception) -> str:
        # The attempt was counted before the work.
        return self._settle_failure(mailbox, entry, uidl, _plain_error(error))

    def _settle_failure(self, mailbox: Mailbox, entry: Any, uidl: str, detail: str) -> str:
        attempts = int(entry.attempts or 0)
        if attempts >= self.max_attempts:
            entry.status = "quarantined"
            entry.reason = _plain(
                f"failed {attempts} times, no more retries (kept on the server): {detail}"
            )
            self.mail.write_all(
                [entry, self.mail.marker(mailbox.key, mailbox.account, uidl, entry)]
            )
            return "quarantined"
        entry.status = "failed"
        entry.reason = _plain(
            f"attempt {attempts} of {self.max_attempts} failed, will retry: {detail}"
        )
        self.mail.save_entry(entry)
        return "failed"

    @staticmethod
    def _entry_id(mailbox_key: str, dedup_key: str) -> str:
        return str(uuid.uuid5(MAIL_NAMESPACE, f"{mailbox_key}\n{dedup_key}"))

    # --- the rules (pure ones in mail_rules; here what needs looking up) --------------------

    def plan(
        self, mailbox: Mailbox, parsed: Any, *, raw: bytes = b"", last_attempt: bool = False
    ) -> Plan:
        verdict = mail_rules.screen(parsed, self.authserv_id)
        if verdict is not None:
            return verdict
        author = self._author(parsed.from_address)
        if author is None:
            return mail_rules.unknown_sender(parsed)
        # Only a member's mail is worth DNS look-ups; a temporary DNS failure raises, so the
        # mail is `failed` and retried by the next poll (chalicelib.mail.authentication).
        sender = None
        if self.verifier is not None:
            domain = parsed.from_address.rpartition("@")[2]
            sender = self.verifier.verify(raw, domain, last_attempt=last_attempt)
            if sender.spoofed:
                return Plan("rejected", sender.reason)
        caller = Caller.of(author, self.groups.root_id())
        if mailbox.is_post:
            group = self._group(mailbox.group_id) if mailbox.group_id else None
            plan = mail_rules.plan_post(parsed, author, caller, group)
        else:
            target = self.find_permalink(parsed.subject)
            plan = mail_rules.plan_comment(parsed, author, caller, target)
        if sender is not None and plan.status in ("posted", "commented"):
            plan.notes.insert(0, sender.reason)
        return plan

    def _author(self, address: str) -> Any:
        # Under the lock: the poll's workers asking for the same sender read it once, not once
        # each (issue 14's request budget, which the outbox drain shares).
        with self._lookup_lock:
            if address not in self._authors:
                self._authors[address] = self.users.by_email(address)
            return self._authors[address]

    def _group(self, group_id: str) -> Any:
        with self._lookup_lock:
            if group_id not in self._groups:
                self._groups[group_id] = self.groups.get(group_id)
            return self._groups[group_id]

    def find_permalink(self, subject: str) -> tuple[Any, Any, int] | None:
        """The (group, post, parent comment id) of the first permalink in the subject that names
        an existing post (and comment)."""
        for link in mail_rules.permalink_candidates(subject, self.base_url):
            group = self.groups.by_slug(link.group_slug)
            post = self.posts.by_slug(group.id, link.post_slug) if group else None
            if post is None:
                continue
            if link.comment_id is None:
                return group, post, 0
            comment = self.comments.get(link.comment_id)
            if comment is not None and comment.post_id == post.id and not comment.is_deleted:
                return group, post, int(comment.id)
        return None

    # --- records -----------------------------------------------------------------------------

    def _post_values(self, post_id: str, plan: Plan, created_on: datetime | None) -> dict:
        slug = self._free_slug(plan.group.id, slugify(plan.title, "post"), post_id)
        return {
            "id": post_id,
            "group_id": plan.group.id,
            "author_id": plan.author.id,
            "title": plan.title,
            "slug": slug,
            "content": plan.content,
            "created_on": created_on or self.clock(),
            "source": "email",
        }

    def _free_slug(self, group_id: str, slug: str, post_id: str) -> str:
        """`slug`, or `slug-<id prefix>` when the group has it: the group's slugs are read once
        per poll (posts only come in through its own mailbox, polled under a lease)."""
        with self._slug_lock:
            if group_id not in self._slugs:
                self._slugs[group_id] = set(self.posts.slugs(group_id))
            taken = self._slugs[group_id]
            chosen = slug if slug not in taken else f"{slug}-{post_id[:8]}"
            taken.add(chosen)
            return chosen

    def _comment_values(self, comment_id: int, plan: Plan, created_on: datetime | None) -> dict:
        now = created_on or self.clock()
        return {
            "id": comment_id,
            "post_id": plan.post.id,
            "group_id": plan.group.id,
            "author_id": plan.author.id,
            "author_alias": plan.author.alias,
            "content": plan.content,
            "created_on": now,
            "parent_comment_id": plan.parent_comment_id,
            "is_approved": plan.is_approved,
            "approved_on": now if plan.is_approved else None,
            "source": "email",
        }


def _clean(value: str | None, limit: int) -> str | None:
    from chalicelib.mail.parse import clean_line

    return clean_line(value)[:limit] if value else None


def _plain(reason: str) -> str:
    from chalicelib.mail.parse import clean_line

    return clean_line(reason)[:MAX_REASON_CHARS]


def _plain_error(error: BaseException) -> str:
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
