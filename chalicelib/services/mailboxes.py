"""Email-to-post (per group) and email-to-comment (system-wide) mailbox settings.

The API edits them; the mail-in job reads them through `MailboxDirectory`: which are due, each
one with its password, and what its poll found (`record_poll`, which decides the next poll by
services/poll_schedule.py). Passwords are stored only as KMS ciphertexts bound to their mailbox.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol, TypedDict

from chalicelib.auth import Caller
from chalicelib.domain.announcements import Announcement, MailboxFailing
from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.groups import Group
from chalicelib.domain.mailboxes import (
    COMMENT_KEY,
    EMAIL_TO_COMMENT,
    EMAIL_TO_POST,
    POST_KEY_PREFIX,
    SYSTEM_SCOPE,
    Mailbox,
    MailboxEdit,
    PollOutcome,
    PollState,
    mailbox_key,
)
from chalicelib.errors import Conflict, TooManyRequests, ValidationFailed
from chalicelib.schemas.common import AccessWarning
from chalicelib.schemas.connectors import (
    POP3S_PORT,
    EmailToCommentOut,
    EmailToPostOut,
    MailboxPollError,
    MailboxSettingsUpdate,
)
from chalicelib.services import mailbox_audit, poll_schedule
from chalicelib.services.inbound import check_push_only
from chalicelib.services.links import group_ref

if TYPE_CHECKING:
    from chalicelib.mail.hosts import HostPolicy
    from chalicelib.store.mailboxes import MailboxRepository


def poll_now_too_soon(next_poll_on: datetime | None, now: datetime, wait: int) -> str:
    """Poll now's answer within a minute of the last: when the mailbox is really due (a poll
    since the last Poll now, which found nothing or failed, set a later time)."""
    if next_poll_on is None or next_poll_on <= now:
        return (
            "This mailbox was asked to poll less than a minute ago and is due now: the next "
            "round of polls reads it."
        )
    return (
        "This mailbox was asked to poll less than a minute ago and has been polled since; it is "
        f"next due at {next_poll_on:%H:%M:%S} UTC. Poll now can ask again in {wait} seconds."
    )


class Cipher(Protocol):
    """Secrets at rest, bound to where they are stored: chalicelib/secrets.py (KMS) in deps.py."""

    def encrypt(self, plaintext: str, context: Mapping[str, str]) -> bytes: ...

    def decrypt(self, ciphertext: bytes, context: Mapping[str, str]) -> str: ...


# "Poll now" makes a mailbox due at most this often (CONTRACT §5: 429 with Retry-After).
POLL_NOW_EVERY = timedelta(minutes=1)


def _context(scope: str) -> dict[str, str]:
    # Binds each ciphertext to its mailbox: copied to another item it does not decrypt.
    return {"agora:table": "mailboxes", "agora:scope": scope}


class _Shown(TypedDict):
    """A mailbox's settings as its answer shows them (`EmailToPostOut`, `EmailToCommentOut`)."""

    server_name: str
    server_port: int
    server_username: str
    server_password: str
    is_enabled: bool
    isSSL: bool  # the spec spells it so (the field's alias)
    delete_processed: bool
    last_processed: datetime | None
    last_error: MailboxPollError | None
    email_address: str
    next_poll_on: datetime | None


class MailboxSettingsService:
    def __init__(
        self,
        mailboxes: MailboxRepository,
        cipher: Cipher,
        clock: Callable[[], datetime],
        hosts: HostPolicy | None = None,
        max_wait: timedelta = timedelta(minutes=15),
        inbound_domain: str = "",
    ) -> None:
        self.mailboxes = mailboxes
        self.cipher = cipher
        self.clock = clock
        # Which POP3 hosts may be named (CONTRACT §8); None: any (a job that only reads).
        self.hosts = hosts
        # AGORA_MAIL_POLL_MAX_MINUTES: the longest wait between polls that find nothing.
        self.max_wait = max_wait
        # AGORA_MAIL_INBOUND_DOMAIN (CONTRACT §13): "" when Agora receives no mail by push.
        self.inbound_domain = inbound_domain

    # --- the API ---------------------------------------------------------------------------------

    def email_to_post(self, group: Group) -> EmailToPostOut:
        record = self.mailboxes.get(group.id)
        return self._post_out(group, record, self._password(record))

    def update_email_to_post(
        self, group: Group, update: MailboxSettingsUpdate, editor_id: str
    ) -> EmailToPostOut:
        record, password = self._save(group.id, EMAIL_TO_POST, update, editor_id)
        return self._post_out(group, record, password)

    def inbound_address(self, group: Group) -> str | None:
        """Where the group's mail arrives by push (CONTRACT §13); None without an inbound domain."""
        return f"{group.slug}@{self.inbound_domain}" if self.inbound_domain else None

    def _post_out(self, group: Group, record: Mailbox | None, password: str) -> EmailToPostOut:
        return EmailToPostOut(
            group=group_ref(group),
            inbound_address=self.inbound_address(group),
            **self._fields(record, password),
        )

    def email_to_comment(self, caller: Caller) -> EmailToCommentOut:
        record = self.mailboxes.get(SYSTEM_SCOPE)
        if caller.is_root_admin:
            return EmailToCommentOut(**self._fields(record, self._password(record)))
        # Group administrators may see how the system mailbox is set up, not its password (§5).
        warning = AccessWarning(
            key="serverPassword",
            code="ACCESS_DENIED",
            message="Only a root group administrator may read the email-to-comment password.",
        )
        return EmailToCommentOut(**self._fields(record, ""), access_warnings=[warning])

    def update_email_to_comment(
        self, update: MailboxSettingsUpdate, editor_id: str
    ) -> EmailToCommentOut:
        record, password = self._save(SYSTEM_SCOPE, EMAIL_TO_COMMENT, update, editor_id)
        return EmailToCommentOut(**self._fields(record, password))

    def poll_email_to_post(self, group: Group) -> EmailToPostOut:
        """ "Poll now": the group's mailbox is due at once (409 `isEnabled` when disabled)."""
        record = self._poll_now(group.id)
        return self._post_out(group, record, self._password(record))

    def poll_email_to_comment(self) -> EmailToCommentOut:
        record = self._poll_now(SYSTEM_SCOPE)
        return EmailToCommentOut(**self._fields(record, self._password(record)))

    def _poll_now(self, scope: str) -> Mailbox:
        """At most once a minute a mailbox (CONTRACT §5): else any host an administrator names
        could be made a target of Agora's connections as often as they ask, failure back-off or
        not."""
        now = self.clock()
        asked = mailbox_audit.poll_asked(scope, now)
        record, made_due = self.mailboxes.poll_due_at(
            scope, now, not_since=now - POLL_NOW_EVERY, audit=asked
        )
        if record is None:
            raise Conflict(
                "isEnabled", False, "The mailbox is disabled: enable it to have it polled."
            )
        if not made_due and not record.server_name:
            raise Conflict(
                "serverName",
                "",
                "This connector receives its mail by push: it has no POP3 mailbox to poll.",
            )
        if not made_due:
            left = (record.poll_now_on or now) + POLL_NOW_EVERY - now
            wait = max(1, math.ceil(left.total_seconds()))
            raise TooManyRequests(poll_now_too_soon(record.next_poll_on, now, wait), wait)
        return record

    # --- mail-in ---------------------------------------------------------------------------------

    def enabled_mailboxes(self) -> Iterator[Mailbox]:
        """Every enabled mailbox: each group's email-to-post, then the system's email-to-comment.

        Read from a sparse index holding only enabled mailboxes (paged by DynamoDB; no Scan).
        """
        for kind in (EMAIL_TO_POST, EMAIL_TO_COMMENT):
            yield from self.mailboxes.enabled(kind)

    def mailbox(self, scope: str) -> Mailbox | None:
        return self.mailboxes.get(scope)

    def mailbox_and_password(self, scope: str) -> tuple[Mailbox, str] | None:
        """The mailbox and its decrypted password, from one read of its record (a poll's)."""
        record = self.mailboxes.get(scope)
        if record is None:
            return None
        return record, self._password(record)

    def decrypted_password(self, scope: str) -> str:
        """The POP3 password of a mailbox in plain text ("" when none is stored)."""
        return self._password(self.mailboxes.get(scope))

    def record_last_processed(self, scope: str, when: datetime) -> bool:
        """Note that the mailbox was polled at `when` (and clear its last error); False when the
        mailbox has no settings."""
        return self.mailboxes.record_last_processed(scope, when)

    def record_poll_failed(self, scope: str, when: datetime, message: str) -> bool:
        """Note that the poll at `when` could not reach the mailbox, and why (plain words)."""
        return self.mailboxes.record_poll_failed(scope, when, message)

    def due_scopes(self, now: datetime) -> Iterator[str]:
        """The enabled mailboxes a dispatch at `now` sends to be polled (the due index)."""
        return self.mailboxes.due_scopes(poll_schedule.dispatch_horizon(now))

    def fleet(self) -> tuple[int, int]:
        """(enabled mailboxes, those failing at their own server), for the fleet's alarm."""
        return self.mailboxes.count_enabled(), self.mailboxes.count_failing()

    def record_poll(
        self,
        mailbox: Mailbox,
        when: datetime,
        *,
        found_mail: bool,
        failure: PollFailure | None,
        left_by_stop: bool = False,
    ) -> PollState:
        """What a poll found, and so when the mailbox is polled next, in one write; the third
        failure in a row writes the administrators' email (a domain event) with it. Mail that
        Agora's own stop left on the server (`left_by_stop`) keeps the mailbox due."""
        before = mailbox.poll_state
        announcements: list[Announcement | AuditEntry] = []
        if failure is not None:
            after = poll_schedule.after_failure(before, when)
            if poll_schedule.tells_administrators(before, after):
                announcements.append(
                    MailboxFailing(
                        mailbox=mailbox.key,
                        group_id=mailbox.group_id,
                        reason=failure.reason,
                        message=failure.message,
                        failures=after.failures,
                        next_poll_on=(after.next_poll_on or when).isoformat(),
                    )
                )
                announcements += mailbox_audit.failure_emailed(mailbox, failure.message, when)
        elif left_by_stop:
            after = poll_schedule.after_stop_left_mail(when)
        elif found_mail:
            after = poll_schedule.after_mail(when)
        else:
            after = poll_schedule.after_empty(before, when, self.max_wait)
        error = failure.message if failure is not None else None
        self.mailboxes.record_poll(mailbox.scope, PollOutcome(when, after, error), announcements)
        return after

    def record_cut_short(self, mailbox: Mailbox, when: datetime) -> PollState | None:
        """A poll its run's end cut short: the streak noted, the mailbox left due; the
        CUT_SHORT_LIMIT-th in a row is recorded as its timeout (`record_poll`: lastError, the
        back-off, the administrators' email at the third failure), and that state answered."""
        polls = mailbox.polls_cut_short + 1
        if polls < poll_schedule.CUT_SHORT_LIMIT:
            self.mailboxes.record_cut_short(mailbox.scope, polls)
            return None
        message = (
            f"{POLL_FAILURES['timeout']} (its last {polls} polls ran out of time before the "
            "server had answered them)"
        )
        failure = PollFailure("timeout", message)
        return self.record_poll(mailbox, when, found_mail=False, failure=failure)

    # --- helpers ---------------------------------------------------------------------------------

    def _save(
        self, scope: str, kind: str, update: MailboxSettingsUpdate, editor_id: str
    ) -> tuple[Mailbox, str]:
        stored = self.mailboxes.get(scope)  # read once: the push-only check and the save's
        if update.push_only:
            check_push_only(self.inbound_domain, kind, update, stored)
        elif self.hosts is not None:
            from chalicelib.mail.hosts import HostRefused

            try:
                self.hosts.check_name(update.server_name, update.port)
            except HostRefused as refused:
                raise ValidationFailed.one("serverName", update.server_name, str(refused)) from None
        new_password = update.new_password
        has_password = new_password is not None or (stored is not None and stored.has_password)
        if update.is_enabled and not update.push_only and not has_password:
            raise ValidationFailed.one(
                "serverPassword",
                "",
                "an enabled connector needs the POP3 account's password",
            )
        ciphertext = None
        if new_password is not None:
            ciphertext = self.cipher.encrypt(new_password, _context(scope))
        now = self.clock()
        values = MailboxEdit(
            kind=kind,
            server_name=update.server_name,
            server_port=update.port,
            server_username=update.server_username,
            password=ciphertext,
            is_enabled=update.is_enabled,
            is_ssl=update.is_ssl,
            delete_processed=update.delete_processed,
            editor_id=editor_id,
            modified_on=now,
            email_address=update.email_address,  # None (omitted): the stored address is kept
            # A push-only connector is never polled: enabled, and out of the due index.
            next_poll_on=poll_schedule.after_saved(
                now, update.is_enabled and not update.push_only
            ).next_poll_on,
        )
        record = self.mailboxes.save_settings(
            scope,
            values,
            audit=mailbox_audit.settings_saved(scope, stored, values, now),
            read=stored,
        )
        password = new_password if new_password is not None else self._password(record)
        return record, password

    def _password(self, record: Mailbox | None) -> str:
        if record is None or not record.password_ciphertext:
            return ""
        return self.cipher.decrypt(record.password_ciphertext, _context(record.scope))

    @staticmethod
    def _fields(record: Mailbox | None, password: str) -> _Shown:
        if record is None:
            # Never saved: a disabled connector with POP3-over-SSL defaults.
            return {
                "server_name": "",
                "server_port": POP3S_PORT,
                "server_username": "",
                "server_password": "",
                "is_enabled": False,
                "isSSL": True,
                "delete_processed": False,
                "last_processed": None,
                "last_error": None,
                "email_address": "",
                "next_poll_on": None,
            }
        enabled = record.is_enabled
        return {
            "server_name": record.server_name,
            "server_port": record.server_port,
            "server_username": record.server_username,
            "server_password": password,
            "is_enabled": enabled,
            "isSSL": record.is_ssl,
            "delete_processed": record.delete_processed,
            "last_processed": record.last_processed,
            "last_error": (
                MailboxPollError(on=record.last_error_on, message=record.last_error)
                if record.last_error and record.last_error_on
                else None
            ),
            "email_address": record.email_address,
            # An enabled mailbox written before polls had a time is due at once (the next
            # dispatch polls it): shown so until its first poll gives it one.
            # A push-only connector (no POP3 server) is never polled.
            "next_poll_on": (
                (record.next_poll_on or record.modified_on)
                if enabled and record.server_name
                else None
            ),
        }


# --- the mail-in job's view ----------------------------------------------------------------------


def scope_of_key(key: str) -> str | None:
    if key == COMMENT_KEY:
        return SYSTEM_SCOPE
    if key.startswith(POST_KEY_PREFIX) and len(key) > len(POST_KEY_PREFIX):
        return key[len(POST_KEY_PREFIX) :]
    return None


class MailboxDirectory:
    """Mailboxes by mail-in key, as `chalicelib.jobs.mail_poll` polls them."""

    def __init__(self, settings: MailboxSettingsService) -> None:
        self.settings = settings

    def enabled_mailbox_keys(self) -> Iterator[str]:
        for mailbox in self.settings.enabled_mailboxes():
            if mailbox.server_name:  # a push-only connector has nothing to poll
                yield mailbox_key(mailbox.scope)

    def due_mailbox_keys(self, now: datetime) -> Iterator[str]:
        """The mailboxes a dispatch at `now` polls (the due index, shard by shard)."""
        for scope in self.settings.due_scopes(now):
            yield mailbox_key(scope)

    def mailbox(self, key: str) -> Mailbox | None:
        """The mailbox with its decrypted password (one read); None unless enabled."""
        scope = scope_of_key(key)
        read = self.settings.mailbox_and_password(scope) if scope is not None else None
        if read is None:
            return None
        found, password = read
        if not found.is_enabled or not password:
            return None
        return replace(found, password=password)

    def record_last_processed(self, key: str, when: datetime) -> None:
        scope = scope_of_key(key)
        if scope is not None:
            self.settings.record_last_processed(scope, when)

    def record_poll_failed(self, key: str, when: datetime, message: str) -> None:
        scope = scope_of_key(key)
        if scope is not None:
            self.settings.record_poll_failed(scope, when, message)


# What an administrator reads in lastError, by MailboxError.reason: what happened and what to check.
POLL_FAILURES = {
    "connection": "Could not connect to the mail server: check the server name and port.",
    "tls": "The secure (SSL/TLS) connection to the mail server failed: check isSSL, the port, "
    "and that the server's certificate is valid for its name.",
    "login": "The mail server refused the user name or password.",
    "timeout": "The mail server did not answer in time.",
    "dns": "The mail server's name could not be found: check the server name.",
    "refused": "Agora does not connect to this server's address (a private, loopback, "
    "link-local or cloud metadata address): use the server's public name.",
    "other": "The mailbox could not be read.",
}
# What to do about each, for the administrators' email after the third failure in a row.
POLL_FAILURE_FIXES = {
    "connection": "Check the server name and port in the mailbox's settings, and that the "
    "server is up.",
    "tls": "Check isSSL and the port (995 for POP3 over SSL), and that the server's "
    "certificate is valid for its name.",
    "login": "Enter the mailbox's user name and password again in its settings (the password "
    "may have changed at the provider).",
    "timeout": "Check that the server is up and reachable from the internet.",
    "dns": "Check the server name in the mailbox's settings.",
    "refused": "Use the server's public name in the mailbox's settings.",
    "other": "Check the mailbox's settings; its lastError says what the server answered.",
}


@dataclass(frozen=True)
class PollFailure:
    """A poll the mailbox's own server or settings defeated: `reason` one of
    chalicelib.mail.pop3.FAILURE_REASONS, `message` the plain words of its lastError."""

    reason: str
    message: str


def poll_failure(error: BaseException, mailbox: Mailbox | None) -> tuple[str, str]:
    """(reason, message) of a failed poll: the reason one of FAILURE_REASONS, the message plain
    words for lastError with the server's own words after them, never the password."""
    from chalicelib.mail.pop3 import MailboxError, SessionLost

    if not isinstance(error, MailboxError | SessionLost):
        # Not the mailbox's fault (a database or AWS failure): the operator's log has it.
        return "other", "The poll failed inside Agora, not at the mail server; it is retried."
    reason = error.reason if error.reason in POLL_FAILURES else "other"
    detail = str(error)
    # A password of a few characters would blank out ordinary words, and says nothing alone.
    if mailbox is not None and len(mailbox.password) >= 4:
        detail = detail.replace(mailbox.password, "********")
    return reason, f"{POLL_FAILURES[reason]} ({detail[:500]})"


def mailbox_failure(error: BaseException, mailbox: Mailbox | None) -> PollFailure | None:
    """The failure as the mailbox's own (backed off, never retried at once), or None when the
    platform failed (AWS refusing or throttling: retried through the queue)."""
    from chalicelib.mail.pop3 import MailboxError, SessionLost

    if not isinstance(error, MailboxError | SessionLost):
        return None
    reason, message = poll_failure(error, mailbox)
    return PollFailure(reason, message)
