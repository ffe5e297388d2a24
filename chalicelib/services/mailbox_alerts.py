"""The email that tells a mailbox's administrators it keeps failing (CONTRACT §9).

The poll that fails for the third time in a row writes a `MailboxFailing` domain event with the
mailbox's state (one transaction, once per streak: services/mailboxes.py); the outbox drain tells
this handler, which mails the administrators what failed and how to fix it, through the same
outgoing mail as notifications. A drain that runs the event again sends nothing twice: each
(administrator, event) is claimed before it is sent, like an instant notification.

Who is told: the administrator who saved the mailbox's settings, while they still administer its
group (for the email-to-comment mailbox, the root group), since memberships are kept on each user
and no index lists a group's administrators.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from chalicelib.auth import Caller, Need
from chalicelib.domain.announcements import MailboxFailing, Recorded
from chalicelib.domain.groups import Group
from chalicelib.domain.letters import Identity, Letter
from chalicelib.domain.mailboxes import Mailbox
from chalicelib.domain.ports.notify import Identities, Mailer
from chalicelib.domain.ports.people import GroupReader, UserReader
from chalicelib.domain.users import User
from chalicelib.logs import get_logger
from chalicelib.services.links import base_url
from chalicelib.services.mailboxes import POLL_FAILURE_FIXES

log = get_logger("mailbox_alerts")


class MailboxEditors(Protocol):
    """Who saved a mailbox's settings (store/mailboxes.py `MailboxRepository.get`)."""

    def get(self, scope: str) -> Mailbox | None: ...


class Claims(Protocol):
    """Once per (user, occurrence): store/notifications.py."""

    def claim_instant(self, user_id: str, occurrence_id: str, now: datetime) -> bool: ...
    def release_instant(self, user_id: str, occurrence_id: str) -> None: ...
    def record_instant(self, user_id: str, occurrence_id: str, message_id: str) -> bool:
        """False when the claim is gone (expired, or released): nothing is recorded."""
        ...


class MailboxFailingNotice:
    """Domain event handler: `MailboxFailing` → one email to each administrator, once."""

    def __init__(
        self,
        mailboxes: MailboxEditors,
        users: UserReader,
        groups: GroupReader,
        claims: Claims,
        mail: Mailer,
        identities: Identities,
        clock: Callable[[], datetime],
    ) -> None:
        self.mailboxes = mailboxes
        self.users = users
        self.groups = groups
        self.claims = claims
        self.mail = mail
        self.identities = identities
        self.clock = clock

    def __call__(self, item: Recorded) -> None:
        if isinstance(item.announcement, MailboxFailing):
            self.tell(item.id, item.announcement)

    def recipients(self, event: MailboxFailing) -> tuple[Group | None, list[User]]:
        """(the group whose administrators are told, those administrators)."""
        root_id = self.groups.root_id()
        group_id = event.group_id or root_id
        group = self.groups.get(group_id) if group_id else None
        if group is None:
            return None, []
        record = self.mailboxes.get(event.group_id or "system")
        editor_id = record.editor_id if record is not None else None
        editor = self.users.get(editor_id) if editor_id else None
        if editor is None or not editor.email:
            return group, []
        if not Caller.of(editor, root_id).has(Need.GROUP_ADMIN, group):
            return group, []
        return group, [editor]

    def tell(self, event_id: str, event: MailboxFailing) -> int:
        group, people = self.recipients(event)
        if group is None or not people:
            log.warning("a failing mailbox has no administrator to tell", extra=_facts(event))
            return 0
        sent = 0
        occurrence = f"mailbox-failing:{event_id}"
        for user in people:
            if self.mail.is_suppressed(user.email):
                continue
            if not self.claims.claim_instant(user.id, occurrence, self.clock()):
                continue  # told by an earlier run of this event
            try:
                letter = failing_letter(user, group, event, self.identities.of(group))
                message_id = self.mail.send(group, letter)
            except Exception:
                self.claims.release_instant(user.id, occurrence)
                raise
            if not self.claims.record_instant(user.id, occurrence, message_id):
                # The claim is gone (expired): the mail went all the same; nothing to undo.
                log.warning("mailbox failing told after its claim was gone", extra=_facts(event))
            sent += 1
        log.info("mailbox failing told", extra={**_facts(event), "emails": sent})
        return sent


def _facts(event: MailboxFailing) -> dict[str, object]:
    return {"mailbox": event.mailbox, "reason": event.reason, "failures": event.failures}


def failing_letter(user: User, group: Group, event: MailboxFailing, identity: Identity) -> Letter:
    """What failed, how to fix it, and when the next try is."""

    which = "email-to-comment" if event.group_id is None else "email-to-post"
    where = (
        f"{base_url()}/console/" if event.group_id is None else f"{base_url()}/console/#{group.id}"
    )
    fix = POLL_FAILURE_FIXES.get(event.reason, POLL_FAILURE_FIXES["other"])
    subject = f"The {which} mailbox of {group.name} cannot be read"
    lines = [
        f"The {which} mailbox of {group.name} could not be read {event.failures} times in a "
        "row, so mail sent to it is not posted.",
        f"What failed: {event.message}",
        f"How to fix it: {fix}",
        f"Agora tries again at {event.next_poll_on} and then less and less often (at most "
        'every 6 hours) until a poll succeeds; saving the settings or "Poll now" tries at '
        "once.",
        f"The mailbox's settings: {where}",
    ]
    text = "\n\n".join(lines) + "\n"
    body = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return Letter((user.alias, user.email), subject, text, body, identity=identity)
