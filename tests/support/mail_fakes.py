"""Fakes for mail in: an in-memory mail log (the same steps as store/mail.py, for fast tests and
the contract test run on both), and wrappers around the real collaborators that make the process
"die" at a chosen step of a poll (crash-safety tests), passed through the ingestor's constructor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Unpack

from chalicelib.domain.letters import Identity, Letter
from chalicelib.domain.mailboxes import Finish, LogEntry, Quarantine, Reserve, Skip, Step, played
from chalicelib.domain.ports.mail import EntryHeaders, Marker
from chalicelib.domain.ports.notify import NewAlert, SubscriptionChange
from chalicelib.domain.users import User
from chalicelib.services.mailboxes import Mailbox
from tests.support.fakes import (
    FakeGroupRepository,
    FakeNotificationRepository,
    FakeUserRepository,
)


def fake_server_mailbox(scope: str) -> Mailbox:
    """The group `scope`'s email-to-post mailbox, as a poll whose maildrop is a fake (FakePop3,
    FakeMaildrop) is given it: its server is never reached."""
    return Mailbox(
        scope=scope,
        kind="emailToPost",
        server_name="pop.example.org",
        server_port=110,
        server_username="garden",
        password="secret",
        is_ssl=False,
        delete_processed=True,
    )


# --- the mail log --------------------------------------------------------------------------------


class FakeMailLog:
    """The mail log in memory; `writes` counts the batches written (one per `record`)."""

    def __init__(self) -> None:
        self.stored: dict[tuple[str, str], LogEntry] = {}
        self.markers: dict[tuple[str, str, str], Marker] = {}
        self.writes = 0

    def prepare(self) -> None:
        return None

    def entry(self, mailbox: str, entry_id: str) -> LogEntry | None:
        return self.stored.get((mailbox, entry_id))

    def entries(self, mailbox: str, entry_ids: list[str]) -> dict[str, LogEntry]:
        found = {entry_id: self.entry(mailbox, entry_id) for entry_id in entry_ids}
        return {entry_id: entry for entry_id, entry in found.items() if entry is not None}

    def handled_uidls(self, mailbox: str, account: str, uidls: list[str]) -> dict[str, Marker]:
        return {
            uidl: self.markers[(mailbox, account, uidl)]
            for uidl in uidls
            if (mailbox, account, uidl) in self.markers
        }

    def new_entry(
        self, mailbox: str, entry_id: str, received_on: datetime, **heard: Unpack[EntryHeaders]
    ) -> LogEntry:
        """`heard`: the message id, sender and subject the mail says."""
        return LogEntry(mailbox, entry_id, received_on, **heard)

    def record(self, mailbox: str, account: str, steps: Sequence[Step]) -> dict[str, LogEntry]:
        left: dict[str, LogEntry] = {}
        for step, entry in played(steps):
            left[entry.entry_id] = entry
            if not isinstance(step, Skip):
                self.stored[(entry.mailbox, entry.entry_id)] = entry
            if isinstance(step, Finish | Quarantine | Skip) and step.uidl:
                marker = Marker(entry.entry_id, entry.status)
                self.markers[(mailbox, account, step.uidl)] = marker
        self.writes += 1
        return left

    def keep_comment_id(self, entry: LogEntry, comment_id: int, post_id: str) -> LogEntry:
        kept = replace(entry, comment_id=comment_id, post_id=post_id)
        self.stored[(kept.mailbox, kept.entry_id)] = kept
        return kept


# --- a process that dies at a chosen step -------------------------------------------------------

CRASH_STEPS = (
    "downloaded",
    "entry_reserved",
    "planning",
    "record_stored",
    "outcome_stored",
    "deleted",
)


class Crash(BaseException):
    """The process dies (a Lambda timeout, not an exception: nothing may catch it)."""


class CrashAt:
    """Overrides for `deps.mail_ingestor` that kill the poll once, right after (or, for
    `planning`, right before) the step named; the real collaborators do the work."""

    def __init__(self, step: str) -> None:
        assert step in CRASH_STEPS, step
        self.step = step
        self.armed = True

    def reached(self, step: str) -> None:
        if self.armed and step == self.step:
            self.armed = False
            raise Crash(step)

    def overrides(self) -> dict[str, Any]:
        from chalicelib import deps
        from chalicelib.mail.pop3 import open_pop3

        real = deps.mail_ingestor()
        log = _CrashingLog(real.mail, self)
        planner = deps.mail_ingestor(
            mail=log,
            posts=CrashingWrites(real.planner.posts, self),
            comments=CrashingWrites(real.planner.comments, self),
        ).planner
        return {
            "open_mailbox": lambda mailbox: _CrashingServer(open_pop3(mailbox), self),
            "mail": log,
            "planner": PlannerDying(planner, lambda subject: self.reached("planning")),
        }


class _Delegate:
    def __init__(self, real: Any, crash: CrashAt) -> None:
        self._real = real
        self._crash = crash

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _CrashingServer(_Delegate):
    def retrieve(self, number: int, max_bytes: int | None = None) -> bytes:
        raw = self._real.retrieve(number, max_bytes)
        self._crash.reached("downloaded")
        return bytes(raw)

    def delete(self, number: int) -> None:
        self._real.delete(number)
        self._crash.reached("deleted")


class _CrashingLog(_Delegate):
    def record(self, mailbox: str, account: str, steps: Sequence[Step]) -> dict[str, LogEntry]:
        left: dict[str, LogEntry] = self._real.record(mailbox, account, steps)
        if any(isinstance(step, Reserve) for step in steps):
            self._crash.reached("entry_reserved")
        if any(isinstance(step, Finish) for step in steps):
            self._crash.reached("outcome_stored")
        return left


class CrashingWrites(_Delegate):
    """Posts or comments whose insert is stored, then the process dies (`record_stored`)."""

    def insert(self, **values: Any) -> Any:
        stored = self._real.insert(**values)
        self._crash.reached("record_stored")
        return stored


class PlannerDying:
    """The real planner, which first calls `dies(subject)` for every mail it plans."""

    def __init__(self, real: Any, dies: Callable[[str], None]) -> None:
        self.real = real
        self.dies = dies

    def begin_poll(self) -> None:
        self.real.begin_poll()

    def take(self, mailbox: Any, mail: Any, **options: Any) -> Any:
        self.dies(mail.mail.subject)
        return self.real.take(mailbox, mail, **options)


# --- the rest of what mail in reads and writes, in memory ---------------------------------------


class FakePop3:
    """A maildrop in memory, as `Pop3Mailbox` answers: numbers from 1, UIDLs stable, deletions
    committed only by `quit` (RFC 1939 §6). `drop_on` breaks the session when a number is read."""

    def __init__(self, messages: dict[str, bytes], *, drop_on: set[int] | None = None) -> None:
        self.messages = messages  # uidl -> raw, in delivery order (the maildrop's own)
        self.drop_on = set(drop_on or ())
        self.is_usable = True
        self._numbers = dict(enumerate(self.messages, start=1))
        self._deleted: set[str] = set()

    def listing(self) -> dict[int, int]:
        return {number: len(self.messages[uidl]) for number, uidl in self._numbers.items()}

    def uidls(self) -> dict[int, str]:
        return dict(self._numbers)

    def retrieve(self, number: int, max_bytes: int | None = None) -> bytes:
        from chalicelib.mail.pop3 import MailboxError

        if number in self.drop_on:
            self.drop_on.discard(number)
            self.is_usable = False
            raise MailboxError(f"RETR {number} failed: connection reset", broken=True)
        return self.messages[self._numbers[number]]

    def head(self, number: int, max_bytes: int) -> bytes:
        """TOP n 0: the header block and its blank line."""
        raw = self.messages[self._numbers[number]]
        cut = min((at for at in (raw.find(b"\r\n\r\n"), raw.find(b"\n\n")) if at >= 0), default=-1)
        return raw if cut < 0 else raw[:cut] + b"\r\n\r\n"

    def delete(self, number: int) -> None:
        self._deleted.add(self._numbers[number])

    def quit(self) -> None:
        from chalicelib.mail.pop3 import MailboxError

        if not self.is_usable:
            raise MailboxError("the session broke; deletions were not committed")
        for uidl in self._deleted:
            self.messages.pop(uidl, None)
        self.close()

    def close(self) -> None:
        self.is_usable = False
        self._deleted.clear()


class FakeMaildrop:
    """What `open_mailbox` opens: a new `FakePop3` session on the same messages each time."""

    def __init__(self, *raws: bytes, drop_on: set[int] | None = None) -> None:
        self.messages = {f"uid-{index}": raw for index, raw in enumerate(raws, start=1)}
        self.drop_on = set(drop_on or ())
        self.sessions = 0

    def deliver(self, raw: bytes) -> None:
        self.messages[f"uid-{len(self.messages) + 1}-{self.sessions}"] = raw

    def __call__(self, mailbox: Any) -> FakePop3:
        self.sessions += 1
        session = FakePop3(self.messages, drop_on=self.drop_on)
        self.drop_on = set()
        return session


@dataclass
class FakeRow:
    """A post or comment as the fakes keep it."""

    values: dict[str, Any]
    announcements: list[Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None


class FakeMailPosts:
    def __init__(self) -> None:
        self.rows: dict[str, FakeRow] = {}
        # Each group's posts, as the store's group index finds them (a simulated day posts
        # thousands: a look through every post per mail would make it quadratic).
        self.in_group: dict[str, list[FakeRow]] = {}

    def _keep(self, row: FakeRow) -> FakeRow:
        self.rows[row.id] = row
        self.in_group.setdefault(row.group_id, []).append(row)
        return row

    def add(self, **values: Any) -> FakeRow:
        return self._keep(FakeRow({"is_deleted": False, **values}, []))

    def get(self, post_id: str) -> FakeRow | None:
        return self.rows.get(post_id)

    def _group(self, group_id: str) -> list[FakeRow]:
        # A test may empty `rows` (a table not read again): the index follows it.
        return [r for r in self.in_group.get(group_id, ()) if self.rows.get(r.id) is r]

    def by_slug(self, group_id: str, slug: str) -> FakeRow | None:
        return next((r for r in self._group(group_id) if r.slug == slug), None)

    def slugs(self, group_id: str) -> list[str]:
        return [r.slug for r in self._group(group_id)]

    def insert(self, *, announcements: Sequence[object] = (), **values: Any) -> bool:
        if values["id"] in self.rows:
            return False  # the conditional put: nothing is written
        self._keep(FakeRow(values, list(announcements)))
        return True


# What the comment store fills in when a write leaves it out (store/comments.py).
COMMENT_DEFAULTS = {"is_deleted": False, "parent_comment_id": 0}


class FakeMailComments:
    def __init__(self) -> None:
        self.rows: dict[int, FakeRow] = {}

    def add(self, **values: Any) -> FakeRow:
        row = FakeRow({**COMMENT_DEFAULTS, **values}, [])
        self.rows[int(values["id"])] = row
        return row

    def get(self, comment_id: int) -> FakeRow | None:
        return self.rows.get(int(comment_id))

    def insert(self, *, announcements: Sequence[object] = (), **values: Any) -> bool:
        if int(values["id"]) in self.rows:
            return False
        self.rows[int(values["id"])] = FakeRow({**COMMENT_DEFAULTS, **values}, list(announcements))
        return True


class FakeCounters:
    def __init__(self, start: int = 100) -> None:
        self.values: dict[str, int] = {}
        self.start = start

    def next_value(self, name: str) -> int:
        self.values[name] = self.values.get(name, self.start) + 1
        return self.values[name]


class FakeOutbox:
    def __init__(self) -> None:
        self.announcements: list[object] = []

    def save(self, announcements: Sequence[object]) -> None:
        self.announcements.extend(announcements)


def add_user(
    users: FakeUserRepository, user_id: str, memberships: dict[str, str], email: str = ""
) -> Any:
    """A user of the fakes' community: alias and email (unless given) derived from the id."""
    email = email or f"{user_id}@example.org"
    values = {
        "id": user_id,
        "alias": user_id.title(),
        "email": email,
        "email_lower": email,
        "slug": user_id,
        "memberships": memberships,
    }
    return users.save(User(**values))


class FakeMailGroups(FakeGroupRepository):
    """The rule tests' groups, found by slug too (permalinks name them so)."""

    def by_slug(self, slug: str) -> Any:
        return next((g for g in self._groups.values() if g.slug == slug), None)


# --- what notifications read and write, in memory -----------------------------------------------


class FakeSubscriptions(FakeNotificationRepository):
    """The subscriptions fake the contract test holds to the store's keys
    (tests/store/test_content_contract.py), with `subscribe` in a rule test's words and a count
    of the subscriber lists read (one Query each on DynamoDB)."""

    def __init__(self) -> None:
        super().__init__()
        self.queries = 0

    def subscribe(
        self, user_id: str, target: tuple[str, str, int], group_id: str | None = None, **flags: Any
    ) -> None:
        """`target`: (kind, target id, notification id), with the post's `group_id` for a post;
        `flags`: email, screen, red."""
        kind, target_id, number = target
        change = SubscriptionChange(
            kind,
            target_id,
            number,
            group_id,
            modified_on=datetime(2026, 1, 1, tzinfo=UTC),
            email_alert_id=flags.get("email", 0),
            show_screen_alert=flags.get("screen", False),
            show_red_label=flags.get("red", False),
        )
        self.save_subscription(user_id, change)

    def subscribers(self, kind: str, target_id: str, notification_id: int) -> list[Any]:
        self.queries += 1
        return super().subscribers(kind, target_id, notification_id)


class FakeAlerts:
    def __init__(self) -> None:
        self.stored: dict[tuple[str, str], dict[str, Any]] = {}

    def add(self, alert: NewAlert) -> bool:
        """Stored once per (user, alert): False when it is there already."""
        values = alert.fields()
        return self.stored.setdefault((alert.user_id, alert.alert_id), values) is values


class FakeDigests:
    def __init__(self) -> None:
        self.queued: dict[tuple[str, str], dict[str, Any]] = {}
        self.claimed: dict[tuple[str, str], str | None] = {}

    def queue(self, user_id: str, occurrence_id: str, item: dict[str, Any], now: datetime) -> bool:
        if (user_id, occurrence_id) in self.queued:
            return False
        self.queued[(user_id, occurrence_id)] = item
        return True

    def claim_instant(self, user_id: str, occurrence_id: str, now: datetime) -> bool:
        if (user_id, occurrence_id) in self.claimed:
            return False
        self.claimed[(user_id, occurrence_id)] = None
        return True

    def release_instant(self, user_id: str, occurrence_id: str) -> None:
        self.claimed.pop((user_id, occurrence_id), None)

    def record_instant(self, user_id: str, occurrence_id: str, message_id: str) -> bool:
        if (user_id, occurrence_id) not in self.claimed:
            return False
        self.claimed[(user_id, occurrence_id)] = message_id
        return True


class FakeMailer:
    """Outgoing mail: what was sent, to whom; suppressed addresses; a failure on demand."""

    def __init__(self, *, suppressed: Sequence[str] = (), failing: Sequence[str] = ()) -> None:
        self.suppressed = set(suppressed)
        self.failing = set(failing)
        self.sent: list[tuple[str, str]] = []  # (address, subject)

    def is_suppressed(self, address: str) -> bool:
        return address in self.suppressed

    def send(self, group: Any, letter: Letter) -> str:
        if letter.to[1] in self.failing:
            raise RuntimeError("SES refused")
        self.sent.append((letter.to[1], letter.subject))
        return f"ses-{len(self.sent)}"


class NamedIdentities:
    """Each group's sending identity as an unsaved group email has it: the group's name."""

    def of(self, group: Any) -> Identity:
        return Identity(group.name, "", "")

    def reply_address(self) -> str:
        return ""


class FakeFanout:
    def __init__(self) -> None:
        self.bodies: list[str] = []

    def send(self, bodies: list[str]) -> None:
        self.bodies.extend(bodies)
