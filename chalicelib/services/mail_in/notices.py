"""The sender learns why (CONTRACT §9): one notice per rejected mail of a proven sender, at most one
a sender a day, recorded with the mail's log entry and sent through the outbox.

Who is told (`NoticeDecider`, run by the mail-in for each rejected mail, polled or pushed):
- the reason is one a sender is told (services/mail_in/rejections.py has words for it): spoofed
  mail, spam and mail that could not be read are never answered;
- the mail is no automatic mail: no auto-reply or bounce (those are ignored before any rejection),
  no `Auto-Submitted` other than `no`, no `Precedence` bulk/list/junk, no `List-Id`, no empty
  `Return-Path`;
- its address is not suppressed (a bounce or a complaint: services/suppressions.py);
- its sender is proven: under `verify` a DKIM signature aligned with its `From` verifies (the
  planner's verdict when it asked the verifier, a member's mail; else the same check, and the same
  replay rule, run here); under `header` the trusted server's topmost
  `Authentication-Results` says `dmarc=pass` (and the mail reads one way, and was sent to this
  mailbox: the planner's replay rule again); under `off` anyone;
- the sender's notice of the (UTC) day is free: a conditional put claims it for this log entry
  (store/mail.py `NoticeClaims`), so two workers racing with two mails of one sender tell it once.
  A retry of the same mail finds its own claim and goes on.

Exactly once: the claim comes first, then the `RejectionNoticeDue` event goes to the outbox with
the mail's other rejection event, then the log entry is written with `noticeSent` true (the
outbox is written before the entry: a crash between them retries the mail, which finds its claim,
leaves it as it is, and writes the event again). The drain (`RejectionNotices`) marks the claim as sending before it
sends, so an event told twice sends one email; a send that fails unmarks it and is retried. An
event told once its claim is gone (expired: store/mail.py NOTICE_KEPT outlives every redrive, so
only a clock or a store restored from long ago gets there) is not sent, and is `not_sent`.
A notice that cannot go after all (its address suppressed since, no group, SES refusing) writes
the entry's `noticeSent` back to false and counts `RejectionNoticeNotSent` by reason: the
administrator reads the log, the operator the metric. The drain may come before the entry is
written (the outbox goes first), or between a crashed poll and its retry: the refusal is kept on an
item of its own that the poll's told write of the entry checks (store/mail.py
`NoticeClaims.not_sent`, `_put_told`), so the log is right in any order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeAlias

from chalicelib import metrics
from chalicelib.domain.announcements import RejectionNoticeDue
from chalicelib.domain.letters import MessageUnbuildable
from chalicelib.domain.mailboxes import Finish, MailStatus
from chalicelib.logs import get_logger
from chalicelib.mail.parse import MailParseError, dmarc_result, header_block, mail_bytes, parse_mail
from chalicelib.services.mail_in.planner import inbound_address, sent_elsewhere
from chalicelib.services.mail_in.rejections import rejection_letter, words_for

if TYPE_CHECKING:
    from chalicelib.domain.announcements import Recorded
    from chalicelib.domain.groups import Group
    from chalicelib.domain.mailboxes import LogEntry, Mailbox
    from chalicelib.domain.ports.notify import Identities, Mailer
    from chalicelib.domain.ports.people import GroupReader
    from chalicelib.mail.parse import ParsedMail
    from chalicelib.services.mail_in.planner import SenderVerifier

log = get_logger("mail")

# The notices due with a mail's rejection (none, or one).
Dues: TypeAlias = Sequence[RejectionNoticeDue]

# The Reason of the metric RejectionNoticeNotSent: the drain's four, and the decider's DNS failure.
NOT_SENT_REASONS = ("suppressed", "no-group", "refused", "expired", "unchecked")
_HEADER_WINDOW = 65536


class NoticeClaims(Protocol):
    """store/mail.py `NoticeClaims`."""

    def holder(self, address: str, day: str) -> str | None: ...
    def claim(self, address: str, day: str, mailbox: str, entry_id: str, now: datetime) -> bool: ...
    def begin_sending(self, address: str, day: str, entry_id: str, now: datetime) -> bool: ...
    def release(self, address: str, day: str) -> None: ...
    def sent(self, address: str, day: str, message_id: str) -> None: ...
    def not_sent(self, mailbox: str, entry_id: str, now: datetime) -> bool: ...


def automatic(parsed: ParsedMail) -> bool:
    """An auto-reply, a bounce or list mail (RFC 3834 §2: never answered automatically), as the
    parser read its headers (mail/headers.py `facts_of`): `Auto-Submitted` other than `no`,
    `Precedence` bulk, list or junk, an empty `Return-Path` and the rest of its rules, and a
    `List-Id`."""
    return parsed.is_auto_reply or parsed.is_bounce or parsed.list_id is not None


class NoticeDecider:
    """Whether a rejected mail's sender is told why; claims the day's notice when so."""

    def __init__(
        self,
        *,
        claims: NoticeClaims,
        suppressed: Callable[[str], bool],
        group_of: Callable[[str], Group | None],
        clock: Callable[[], datetime],
        authserv_id: str | None = None,
        verifier: SenderVerifier | None = None,
        inbound_domain: str = "",
    ) -> None:
        self.claims = claims
        self.suppressed = suppressed
        # The planner's per-poll read of a group (MailPlanner.group): the mailbox's group is
        # read once for the mail's plan and its notice, not once each.
        self.group_of = group_of
        self.clock = clock
        # The mode (AGORA_MAIL_AUTH) as the planner is given it: `header` names the trusted
        # server, `verify` a verifier, `off` neither.
        self.authserv_id = authserv_id
        self.verifier = verifier
        self.inbound_domain = inbound_domain.strip().lower()

    def decide(
        self,
        mailbox: Mailbox,
        parsed: ParsedMail,
        raw: bytes,
        entry: LogEntry,
        reason: str,
        sender_proven: bool | None = None,
    ) -> RejectionNoticeDue | None:
        """The notice due for this rejected mail (its day's claim taken), or None.
        `sender_proven`: the planner's verifier's word on the sender, when it asked (under
        `verify`, a member's mail): the signature is not checked twice."""
        address = (parsed.from_address or "").strip().lower()
        if not address or words_for(reason, address) is None or automatic(parsed):
            return None
        if self.suppressed(address):
            return None
        now = self.clock()
        day = now.date().isoformat()
        holder = self.claims.holder(address, day)
        if holder is not None and holder != entry.entry_id:
            return None  # told today already (checked before any DNS look-up)
        if not self.proven(mailbox, parsed, raw, sender_proven):
            return None
        if not self.claims.claim(address, day, mailbox.key, entry.entry_id, now):
            return None
        log.info("rejection notice due", extra={"mailbox": mailbox.key, "entry": entry.entry_id})
        return RejectionNoticeDue(
            mailbox=mailbox.key,
            group_id=mailbox.group_id,
            log_entry_id=entry.entry_id,
            to=address,
            subject=entry.subject or parsed.subject or "",
            message_id=entry.message_id or None,
            reason=reason,
            day=day,
        )

    def proven(
        self, mailbox: Mailbox, parsed: ParsedMail, raw: bytes, verified: bool | None = None
    ) -> bool:
        """The mail comes from its `From` address to this mailbox, as far as the mode can tell:
        under either mode, a mail sent to other recipients and replayed here is not (the
        planner's replay rule, `sent_elsewhere`). `verified`: the planner's verdict under
        `verify`, made with the same replay rule (None: check here)."""
        if not self.authserv_id and self.verifier is None:
            return True
        if verified is not None and self.verifier is not None and not self.authserv_id:
            return verified
        elsewhere = sent_elsewhere(
            mailbox, parsed, inbound_address(mailbox, self.inbound_domain, self.group_of)
        )
        if self.authserv_id:
            if parsed.reading_problem or elsewhere:
                return False
            return dmarc_result(parsed, self.authserv_id) == "pass"  # as the planner reads it
        assert self.verifier is not None
        domain = (parsed.from_address or "").rpartition("@")[2]
        try:
            verdict = self.verifier.verify(
                raw, domain, last_attempt=False, sent_elsewhere=elsewhere
            )
        except Exception:  # a DNS failure: not proven now, and the mail is rejected anyway
            # The sender goes untold: the operator's metric counts it beside the drain's.
            metrics.emit("RejectionNoticeNotSent", 1, Reason="unchecked")
            log.warning("rejection notice: sender not checked", extra={"mailbox": mailbox.key})
            return False
        return bool(verdict.verified and not verdict.spoofed)


def due_notice(
    notices: NoticeDecider | None,
    mailbox: Mailbox,
    parsed: ParsedMail,
    raw: bytes,
    outcome: Finish,
    sender_proven: bool | None = None,
) -> tuple[Finish, RejectionNoticeDue | None]:
    """A mail's outcome as its entry is written (`noticeSent` true when a notice is due) and the
    notice due to its sender, for the ingestor (services/mail_in/ingest.py); `sender_proven`,
    the planner's verdict on the sender when it asked the verifier (`Plan.sender_proven`)."""
    if notices is None or outcome.status != MailStatus.REJECTED:
        return outcome, None
    notice = notices.decide(mailbox, parsed, raw, outcome.entry, outcome.reason, sender_proven)
    if notice is None:
        return outcome, None
    return replace(outcome, entry=replace(outcome.entry, notice_sent=True)), notice


def unread_notice(
    notices: NoticeDecider | None,
    mailbox: Mailbox,
    raw: bytes,
    entry: LogEntry,
    reason: str,
    *,
    whole: bool = True,
) -> Dues:
    """The notice due for a rejected mail whose body is not read (a mail too large to take):
    its sender and the rest are read from its header block alone; the DKIM check (under
    `verify`) reads the whole mail as it must. `whole` False: `raw` is the header block alone (a
    polled mail, never downloaded), so under `verify` its sender cannot be proven, and no DNS
    look-up is spent on it."""
    if notices is None or not raw:
        return []
    if not whole and notices.verifier is not None and not notices.authserv_id:
        return []
    head = header_block(mail_bytes(raw)[:_HEADER_WINDOW])  # as the parser and dkimpy split it
    try:
        parsed = parse_mail(head + b"\r\n\r\n")
    except MailParseError:
        return []
    notice = notices.decide(mailbox, parsed, raw, entry, reason)
    return [notice] if notice is not None else []


class RejectionNotices:
    """Domain event handler: `RejectionNoticeDue` → the notice, sent once."""

    def __init__(
        self,
        claims: NoticeClaims,
        groups: GroupReader,
        mail: Mailer,
        identities: Identities,
        clock: Callable[[], datetime],
    ) -> None:
        self.claims = claims
        self.groups = groups
        self.mail = mail
        self.identities = identities
        self.clock = clock

    def __call__(self, item: Recorded) -> None:
        if isinstance(item.announcement, RejectionNoticeDue):
            self.tell(item.announcement)

    def tell(self, event: RejectionNoticeDue) -> bool:
        """Send the notice unless it went already; one that cannot go (its address suppressed
        since, no group to send it as, SES refusing) is `not_sent`."""
        from chalicelib.mail.outgoing import AddressSuppressed, MessageRejected  # the drain's

        facts = {"mailbox": event.mailbox, "entry": event.log_entry_id}
        if self.mail.is_suppressed(event.to):
            return self.not_sent(event, "suppressed", "the address is suppressed")
        group, where = self._where(event)
        if group is None:
            return self.not_sent(event, "no-group", "no group to send it as")
        if not self.claims.begin_sending(event.to, event.day, event.log_entry_id, self.clock()):
            if self.claims.holder(event.to, event.day) == event.log_entry_id:
                return False  # sent (or being sent) by an earlier delivery of this event
            # No claim of this entry's: told again after the claim expired (a redrive later than
            # store/mail.py NOTICE_KEPT). Whether an earlier delivery sent it is unknown: it is
            # not sent now, and the log and the operator's metric say so.
            return self.not_sent(event, "expired", "its claim of the day is gone (expired)")
        try:
            letter = rejection_letter(event, where, self.identities.of(group))
            message_id = self.mail.send(group, letter)
        except (MessageUnbuildable, MessageRejected, AddressSuppressed) as error:
            # For good (SES refuses this recipient or sender): never retried, so a stranger's
            # address can never hold up the drain's other events.
            return self.not_sent(event, "refused", f"refused ({type(error).__name__}: {error})")
        except Exception:
            self.claims.release(event.to, event.day)
            raise
        self.claims.sent(event.to, event.day, message_id)
        log.info("rejection notice sent", extra=facts)
        return True

    def not_sent(self, event: RejectionNoticeDue, reason: str, why: str) -> bool:
        """A notice that will not go: its entry's `noticeSent` says false again (what the
        administrator reads in the mail log), and the operator's metric counts it by reason."""
        facts = {"mailbox": event.mailbox, "entry": event.log_entry_id, "why": why}
        metrics.emit("RejectionNoticeNotSent", 1, Reason=reason)
        if self.claims.not_sent(event.mailbox, event.log_entry_id, self.clock()):
            log.warning("rejection notice not sent", extra=facts)
        else:
            # Drained before the mail's entry was written: the refusal is kept, and the entry,
            # when the poll writes it, says false all the same.
            log.warning("rejection notice not sent; noted for its log entry to come", extra=facts)
        return False

    def _where(self, event: RejectionNoticeDue) -> tuple[Group | None, str]:
        """(the group whose identity the notice goes under, the mail's destination in words)."""
        group = self.groups.get(event.group_id) if event.group_id else None
        if group is not None:
            return group, f"the group {group.name}"
        root_id = self.groups.root_id()
        root = self.groups.get(root_id) if root_id else None
        if event.group_id:
            return root, "a group that no longer exists"
        return root, "the community's comment address"
