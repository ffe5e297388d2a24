"""Mail in with fakes (no Dovecot, no moto): what a mail becomes, the log's steps in the order that
makes a crash harmless, retries and quarantine. tests/mail/test_ingest.py runs the same paths
once through a real POP3 server and DynamoDB."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from chalicelib.domain.announcements import CommentCreated, MailRejected, PostCreated
from chalicelib.domain.mailboxes import LogEntry
from chalicelib.services.mail_in.ingest import MailIngestor, PollResult
from chalicelib.services.mail_in.planner import MailPlanner
from chalicelib.services.mailboxes import Mailbox
from tests.mail.test_ingest import mail as raw_mail
from tests.support.fakes import FakeUserRepository
from tests.support.mail_fakes import (
    Crash,
    CrashAt,
    CrashingWrites,
    FakeCounters,
    FakeMailComments,
    FakeMaildrop,
    FakeMailGroups,
    FakeMailLog,
    FakeMailPosts,
    FakeOutbox,
    FakePop3,
    PlannerDying,
    add_user,
)

pytestmark = pytest.mark.fast

BASE = "https://community.example"
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
PERMISSIONS = {
    "post": ["member", "moderator", "administrator"],
    "comment": ["member", "moderator", "administrator"],
    "commentWithoutApproval": ["moderator", "administrator"],
}


def mail(
    sender: str = "ann@example.org", subject: str = "Seed swap", body: str = "x", **options: Any
) -> bytes:
    return raw_mail(sender, subject, body, **options)


class World:
    """A root group, a private garden, its members and a post with a comment, in fakes."""

    def __init__(self) -> None:
        self.root = SimpleNamespace(
            id="root", slug="root", parent_id=None, access="public", permissions=PERMISSIONS
        )
        self.garden = SimpleNamespace(
            id="g1", slug="garden", parent_id="root", access="private", permissions=PERMISSIONS
        )
        self.users = FakeUserRepository()
        add_user(self.users, "ann", {"g1": "member"})
        add_user(self.users, "mod", {"g1": "moderator"})
        add_user(self.users, "rita", {})
        self.groups = FakeMailGroups(self.root, self.garden)
        self.posts = FakeMailPosts()
        self.hello = self.posts.add(id="p1", group_id="g1", slug="hello", title="Hello")
        self.comments = FakeMailComments()
        self.first_comment = self.comments.add(id=7, post_id="p1")
        self.log = FakeMailLog()
        self.outbox = FakeOutbox()
        self.counters = FakeCounters()

    def planner(self, **options: Any) -> MailPlanner:
        values: dict[str, Any] = {
            "users": self.users,
            "groups": self.groups,
            "posts": self.posts,
            "comments": self.comments,
            "counters": self.counters,
            "mail": self.log,
            "clock": lambda: T0,
            "base_url": BASE,
        }
        return MailPlanner(**{**values, **options})

    def ingestor(self, maildrop: FakeMaildrop, **options: Any) -> MailIngestor:
        # The posts or comments a test gives are the planner's, which stores what a mail becomes.
        stores = {name: options.pop(name) for name in ("posts", "comments") if name in options}
        values: dict[str, Any] = {
            "planner": self.planner(**stores),
            "mail": self.log,
            "outbox": self.outbox,
            "clock": lambda: T0,
            "open_mailbox": maildrop,
            "workers": 1,
        }
        return MailIngestor(**{**values, **options})

    def poll(
        self, maildrop: FakeMaildrop, box: Mailbox | None = None, **options: Any
    ) -> PollResult:
        return self.ingestor(maildrop, **options).poll(box or posts_box(), lambda: False)

    def entries(self, box: Mailbox | None = None) -> dict[str | None, LogEntry]:
        """Stored log entries by subject."""
        key = (box or posts_box()).key
        return {e.subject: e for (mailbox, _), e in self.log.stored.items() if mailbox == key}


def posts_box(*, delete: bool = True) -> Mailbox:
    return box("g1", delete=delete)


def comments_box() -> Mailbox:
    return box("system")


def box(scope: str, *, delete: bool = True) -> Mailbox:
    """Email-to-post of the group `scope`, or email-to-comment when it is `system`."""
    return Mailbox(
        scope=scope,
        kind="emailToComment" if scope == "system" else "emailToPost",
        server_name="pop.example",
        server_port=110,
        server_username=f"{scope}-box",
        is_ssl=False,
        delete_processed=delete,
        password="secret",
    )


@pytest.fixture
def world() -> World:
    return World()


def plan_of(world: World, raw: bytes, box: Mailbox | None = None, **options: Any) -> Any:
    from chalicelib.mail.parse import parse_mail

    return world.planner(**options).plan(box or posts_box(), parse_mail(raw), raw=raw)


# --- planning: which group, post or comment a mail becomes, or why not ---------------------------


def test_a_members_mail_is_planned_as_a_post_in_the_mailboxs_group(world):
    plan = plan_of(world, mail(subject="Tomatoes"))
    assert (plan.status, plan.group.id, plan.author.id, plan.title) == (
        "posted",
        "g1",
        "ann",
        "Tomatoes",
    )


def test_an_unknown_sender_is_rejected_by_address(world):
    plan = plan_of(world, mail(sender="stranger@example.org"))
    assert (plan.status, plan.reason) == ("rejected", "unknown sender stranger@example.org")


def test_a_user_outside_the_group_may_not_post(world):
    plan = plan_of(world, mail(sender="rita@example.org"))
    assert plan.status == "rejected" and "may not post in group garden" in plan.reason


def test_the_group_of_a_mailbox_that_vanished_rejects_its_mail(world):
    del world.groups._groups["g1"]
    plan = plan_of(world, mail())
    assert (plan.status, plan.reason) == ("rejected", "the mailbox's group no longer exists")


@pytest.mark.parametrize(
    ("headers", "status", "reason_start"),
    [
        ({"Auto-Submitted": "auto-replied"}, "ignored", "auto-reply"),
        ({"X-Failed-Recipients": "a@b.example"}, "ignored", "bounce"),
        ({"X-Spam-Flag": "YES"}, "rejected", "marked as spam"),
        (
            {"Authentication-Results": "mx.community.example; dmarc=fail"},
            "rejected",
            "spoofed",
        ),
    ],
)
def test_mail_that_screens_out_never_reaches_the_lookups(world, headers, status, reason_start):
    plan = plan_of(world, mail(headers=headers), authserv_id="mx.community.example")
    assert plan.status == status and plan.reason.startswith(reason_start)


class Verifier:
    def __init__(self, spoofed: bool) -> None:
        self.spoofed = spoofed
        self.asked: list[str] = []

    def verify(
        self, raw: bytes, from_domain: str, *, last_attempt: bool, sent_elsewhere: str = ""
    ) -> Any:
        self.asked.append(from_domain)
        reason = "spoofed: DMARC reject" if self.spoofed else "DKIM pass (example.org)"
        return SimpleNamespace(spoofed=self.spoofed, reason=reason, verified=not self.spoofed)


def test_a_verified_spoof_is_rejected_with_the_verifiers_words(world):
    plan = plan_of(world, mail(), verifier=Verifier(spoofed=True))
    assert (plan.status, plan.reason) == ("rejected", "spoofed: DMARC reject")


def test_a_verified_sender_is_noted_first_on_the_post(world):
    plan = plan_of(world, mail(), verifier=Verifier(spoofed=False))
    assert plan.status == "posted" and plan.notes[0] == "DKIM pass (example.org)"


def test_only_a_members_mail_costs_dns_look_ups(world):
    verifier = Verifier(spoofed=False)
    plan = plan_of(world, mail(sender="stranger@example.org"), verifier=verifier)
    assert plan.status == "rejected" and verifier.asked == []


def test_a_permalink_to_a_post_makes_a_top_level_comment(world):
    plan = plan_of(world, mail(subject=f"Re: {BASE}/garden/hello"), comments_box())
    assert (plan.status, plan.post.id, plan.parent_comment_id) == ("commented", "p1", 0)


def test_a_permalink_to_a_comment_makes_a_reply_to_it(world):
    plan = plan_of(world, mail(subject=f"Re: {BASE}/garden/hello#7"), comments_box())
    assert (plan.status, plan.parent_comment_id) == ("commented", 7)


@pytest.mark.parametrize(
    "subject",
    [
        f"Re: {BASE}/garden/nothing-here",
        f"Re: {BASE}/nowhere/hello",
        "https://elsewhere.example/garden/hello",
        "no link at all",
    ],
)
def test_a_subject_naming_no_existing_post_rejects_the_comment(world, subject):
    plan = plan_of(world, mail(subject=subject), comments_box())
    assert (plan.status, plan.reason) == (
        "rejected",
        "the subject names no existing post or comment",
    )


def test_a_permalink_to_a_deleted_comment_names_nothing(world):
    world.first_comment.values["is_deleted"] = True
    plan = plan_of(world, mail(subject=f"{BASE}/garden/hello#7"), comments_box())
    assert plan.status == "rejected"


def test_a_permalink_to_a_comment_of_another_post_names_nothing(world):
    world.posts.add(id="p2", group_id="g1", slug="other", title="Other")
    plan = plan_of(world, mail(subject=f"{BASE}/garden/other#7"), comments_box())
    assert plan.status == "rejected"


def test_the_first_permalink_that_names_a_post_wins(world):
    subject = f"See {BASE}/garden/gone and {BASE}/garden/hello#7"
    plan = plan_of(world, mail(subject=subject), comments_box())
    assert (plan.status, plan.parent_comment_id) == ("commented", 7)


@pytest.mark.parametrize(("sender", "approved"), [("ann", False), ("mod", True)])
def test_a_comment_waits_for_approval_unless_its_author_may_skip_it(world, sender, approved):
    raw = mail(sender=f"{sender}@example.org", subject=f"{BASE}/garden/hello")
    plan = plan_of(world, raw, comments_box())
    assert (plan.status, plan.is_approved) == ("commented", approved)


def test_a_sender_is_looked_up_once_per_poll_and_again_in_the_next(world):
    from chalicelib.mail.parse import parse_mail

    reads: list[str] = []
    real = world.users.by_email
    world.users.by_email = lambda address: reads.append(address) or real(address)
    planner = world.planner()
    for subject in ("One", "Two", "Three"):
        planner.plan(posts_box(), parse_mail(mail(subject=subject)))
    planner.begin_poll()
    planner.plan(posts_box(), parse_mail(mail(subject="Four")))
    assert reads == ["ann@example.org", "ann@example.org"]


# --- a poll, step by step --------------------------------------------------------------------


def test_a_mail_becomes_a_post_with_its_event_and_the_mailbox_is_emptied(world):
    maildrop = FakeMaildrop(mail(subject="Seed swap"))
    result = world.poll(maildrop)
    assert (result.seen, result.posted, result.deleted) == (1, 1, 1)
    [post] = [row for row in world.posts.rows.values() if row.values.get("source") == "email"]
    assert post.title == "Seed swap" and post.slug == "seed-swap"
    assert post.announcements == [PostCreated(post_id=post.id, group_id="g1", author_id="ann")]
    entry = world.entries()["Seed swap"]
    assert (entry.status, entry.post_id, entry.attempts) == ("posted", post.id, 1)
    assert maildrop.messages == {}


def test_a_kept_mail_is_skipped_by_its_marker_in_the_next_poll(world):
    maildrop = FakeMaildrop(mail(subject="A"), mail(subject="B"))
    first = world.poll(maildrop, posts_box(delete=False))
    second = world.poll(maildrop, posts_box(delete=False))
    assert (first.posted, second.posted, second.skipped) == (2, 0, 2)
    assert len(maildrop.messages) == 2 and len(world.posts.rows) == 3


def test_the_same_message_id_twice_in_one_poll_is_one_post(world):
    raw = mail(subject="Twice", message_id="<same@mail.example>")
    result = world.poll(FakeMaildrop(raw, raw))
    assert (result.posted, result.skipped, result.deleted) == (1, 1, 2)
    assert [r.title for r in world.posts.rows.values()].count("Twice") == 1


def test_a_mail_seen_again_in_a_later_poll_by_its_message_id_is_skipped(world):
    raw = mail(subject="Again", message_id="<again@mail.example>")
    world.poll(FakeMaildrop(raw))
    result = world.poll(FakeMaildrop(raw))
    assert (result.skipped, result.posted, result.deleted) == (1, 0, 1)


def test_an_unreadable_mail_is_rejected_announced_and_logged_with_its_headers(world):
    raw = b"From: ann@example.org\r\nSubject: Broken\r\nMessage-ID: <b@x>\r\n" + (
        b"Content-Type: multipart/mixed\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nhi\r\n"
    )
    result = world.poll(FakeMaildrop(raw))
    entry = world.entries()["Broken"]
    assert result.rejected == 1 and entry.status == "rejected"
    assert entry.reason.startswith("cannot be read")
    [event] = world.outbox.announcements
    assert isinstance(event, MailRejected) and event.message_id == "b@x"
    assert event.reason == entry.reason


def test_a_mail_larger_than_the_limit_is_rejected_without_download(world):
    result = world.poll(FakeMaildrop(mail(body="x" * 5000)), max_bytes=1000)
    [entry] = world.log.stored.values()
    assert result.rejected == 1 and entry.reason.startswith("larger than 1000 bytes")
    assert result.deleted == 1


class NoTop(FakeMaildrop):
    """A server without TOP (optional in RFC 1939): it answers -ERR."""

    def __call__(self, mailbox: Any) -> Any:
        from chalicelib.mail.pop3 import MailboxError

        session = super().__call__(mailbox)

        def refused(number: int, max_bytes: int) -> bytes:
            raise MailboxError(f"TOP {number} 0 failed: -ERR unknown command")

        session.head = refused
        return session


def test_a_mail_too_large_on_a_server_without_top_is_rejected_all_the_same(world):
    result = world.poll(NoTop(mail(body="x" * 5000)), max_bytes=1000)
    [entry] = world.log.stored.values()
    assert result.rejected == 1 and entry.reason.startswith("larger than 1000 bytes")
    assert entry.sender is None and result.deleted == 1


def test_rejections_are_announced_with_their_reasons(world):
    world.poll(FakeMaildrop(mail(sender="stranger@example.org", subject="Who?")))
    [event] = world.outbox.announcements
    assert isinstance(event, MailRejected)
    assert (event.mailbox, event.group_id, event.reason) == (
        "post#g1",
        "g1",
        "unknown sender stranger@example.org",
    )


def test_a_failing_mail_is_retried_then_quarantined_and_kept(world):
    def fails(subject: str) -> None:
        if subject == "Poison":
            raise RuntimeError("a broken record")

    maildrop = FakeMaildrop(mail(subject="Poison"), mail(subject="Good"))
    planner = PlannerDying(world.planner(), fails)
    first = world.poll(maildrop, planner=planner)
    assert (first.posted, first.failed) == (1, 1)
    entry = world.entries()["Poison"]
    assert entry.status == "failed"
    assert entry.reason == (
        "attempt 1 of 3 failed, will retry: an internal error (see the job's log)"
    )
    world.poll(maildrop, planner=planner)
    third = world.poll(maildrop, planner=planner)
    assert third.failed == 1 and world.entries()["Poison"].status == "quarantined"
    fourth = world.poll(maildrop, planner=planner)
    assert (fourth.skipped, fourth.failed, fourth.deleted) == (1, 0, 0)
    assert len(maildrop.messages) == 1  # kept for a person to look at


def test_a_mail_that_kills_the_process_each_time_is_quarantined_as_interrupted(world):
    def dies(subject: str) -> None:
        if subject == "Killer":
            raise Crash(subject)

    maildrop = FakeMaildrop(mail(subject="Killer"))
    killer = PlannerDying(world.planner(), dies)
    for _ in range(3):
        with pytest.raises(Crash):
            world.poll(maildrop, planner=killer)
    assert world.entries()["Killer"].attempts == 3
    last = world.poll(maildrop, planner=killer)
    entry = world.entries()["Killer"]
    assert last.failed == 1 and entry.status == "quarantined"
    assert "interrupted 3 times" in entry.reason


def test_a_crash_after_the_post_is_stored_does_not_store_it_twice(world):
    maildrop = FakeMaildrop(mail(subject="Once"))

    posts = CrashingWrites(world.posts, CrashAt("record_stored"))
    with pytest.raises(Crash):
        world.poll(maildrop, posts=posts)
    result = world.poll(maildrop, posts=posts)
    assert result.posted == 1
    assert [r.title for r in world.posts.rows.values()].count("Once") == 1


def test_a_crash_after_the_comment_is_stored_reuses_its_kept_id(world):
    maildrop = FakeMaildrop(mail(subject=f"{BASE}/garden/hello"))

    comments = CrashingWrites(world.comments, CrashAt("record_stored"))
    with pytest.raises(Crash):
        world.poll(maildrop, comments_box(), comments=comments)
    result = world.poll(maildrop, comments_box(), comments=comments)
    assert result.commented == 1
    mailed = [row for row in world.comments.rows.values() if row.values.get("source") == "email"]
    assert len(mailed) == 1 and mailed[0].id == 101  # the one counter value, kept on the entry
    assert mailed[0].announcements[0] == CommentCreated(
        comment_id=101, post_id="p1", group_id="g1", author_id="ann", is_approved=False
    )


class StoredThenTimedOut:
    """Comments whose first insert is stored, then answers a timeout (the write went through)."""

    def __init__(self, real: FakeMailComments) -> None:
        self.real, self.armed = real, True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def insert(self, **values: Any) -> bool:
        stored: bool = self.real.insert(**values)
        if self.armed:
            self.armed = False
            raise TimeoutError("read timed out")
        return stored


def test_a_failure_after_the_comment_is_stored_keeps_its_id_for_the_retry(world):
    maildrop = FakeMaildrop(mail(subject=f"{BASE}/garden/hello"))
    comments = StoredThenTimedOut(world.comments)

    first = world.poll(maildrop, comments_box(), comments=comments)
    [failed] = world.entries(comments_box()).values()
    assert first.failed == 1 and (failed.status, failed.comment_id) == ("failed", 101)
    second = world.poll(maildrop, comments_box(), comments=comments)

    assert second.commented == 1
    mailed = [row for row in world.comments.rows.values() if row.values.get("source") == "email"]
    assert [row.id for row in mailed] == [101]


def test_a_dropped_connection_fails_that_mail_and_the_poll_goes_on(world):
    maildrop = FakeMaildrop(mail(subject="A"), mail(subject="B"), mail(subject="C"), drop_on={2})
    first = world.poll(maildrop)
    assert (first.posted, first.failed) == (2, 1)
    [failed] = [e for e in world.log.stored.values() if e.status == "failed"]
    assert failed.reason.startswith("attempt 1 of 3 failed, will retry: download failed")
    assert world.poll(maildrop).posted == 1
    assert maildrop.messages == {} and maildrop.sessions == 3  # one reconnection


def test_at_most_max_messages_are_taken_and_the_rest_is_left(world):
    maildrop = FakeMaildrop(*(mail(subject=f"M{i}") for i in range(5)))
    result = world.poll(maildrop, max_messages=3)
    assert (result.posted, result.left) == (3, 2)


def test_a_poll_past_its_deadline_leaves_the_rest(world):
    maildrop = FakeMaildrop(*(mail(subject=f"M{i}") for i in range(3)))
    result = world.ingestor(maildrop).poll(posts_box(), lambda: True)
    assert (result.seen, result.posted, result.left) == (0, 0, 3)


def test_a_taken_slug_gets_the_posts_id_prefix(world):
    world.poll(FakeMaildrop(mail(subject="Hello")))
    [mailed] = [r for r in world.posts.rows.values() if r.values.get("source") == "email"]
    assert mailed.slug == f"hello-{mailed.id[:8]}"


def test_the_log_is_written_in_batches_not_per_mail(world):
    world.poll(FakeMaildrop(*(mail(subject=f"M{i}") for i in range(10))))
    assert world.log.writes == 2  # the attempts, then the outcomes


def test_a_poll_result_reads_as_one_line():
    result = PollResult(mailbox="post#g1", seen=3, posted=2, failed=1, error="boom")
    assert result.line() == (
        "post#g1: seen 3, posted 2, commented 0, ignored 0, rejected 0, failed 1, skipped 0,"
        " deleted 0, left 0 (error: boom)"
    )


def test_quarantined_counts_as_failed_and_unknown_statuses_count_nothing():
    result = PollResult(mailbox="m")
    for status in ("quarantined", "posted", "seen", "deleted", "nonsense"):
        result.count(status)
    assert (result.failed, result.posted, result.seen, result.deleted) == (1, 1, 0, 0)


def test_entry_ids_are_the_same_for_the_same_mail_and_mailbox():
    from chalicelib.services.mail_in.planner import derived_id

    assert derived_id("post#x", "message-id:a@b") == derived_id("post#x", "message-id:a@b")
    assert derived_id("post#x", "message-id:a@b") != derived_id("post#y", "message-id:a@b")
    uuid.UUID(derived_id("post#x", "sha256:00"))


def test_a_mail_that_never_downloads_is_quarantined_after_its_attempts(world):
    maildrop = FakeMaildrop(mail(subject="Unreachable"))
    for number in range(3):
        maildrop.deliver(mail(subject=f"Fine {number}"))  # read after a reconnection
        maildrop.drop_on = {1}
        result = world.poll(maildrop)
    [entry] = [e for e in world.log.stored.values() if e.status != "posted"]
    assert result.failed == 1 and (entry.status, int(entry.attempts)) == ("quarantined", 3)
    assert entry.reason.startswith("failed 3 times, no more retries (kept on the server)")
    assert world.poll(maildrop).skipped == 1 and len(maildrop.messages) == 1


class EverySessionBreaks(FakeMaildrop):
    """A server that drops every session at its first RETR."""

    def __call__(self, mailbox: Any) -> FakePop3:
        self.sessions += 1
        return FakePop3(self.messages, drop_on=set(range(1, len(self.messages) + 1)))


def test_a_session_that_keeps_breaking_ends_the_poll_without_failing_the_rest_of_the_mail(world):
    from chalicelib.mail.pop3 import MAX_RECONNECTS, SessionLost

    maildrop = EverySessionBreaks(*(mail(subject=f"M{i}") for i in range(8)))
    with pytest.raises(SessionLost):
        world.poll(maildrop)
    failed = [e for e in world.log.stored.values() if e.status == "failed"]
    # One mail per session that broke; the mail after the last reconnection is not counted.
    assert len(failed) == MAX_RECONNECTS + 1
    assert maildrop.sessions == MAX_RECONNECTS + 1


def test_an_oversized_mail_pushed_twice_is_rejected_and_announced_once(world):
    """A pusher delivers again (SES at least once, a client retrying the SMTP door): the second
    delivery of a mail too large finds its entry, as any other pushed mail does, and is skipped."""
    ingestor = world.ingestor(FakeMaildrop(), max_bytes=1000)
    raw = mail(subject="Huge", body="x" * 5000)
    first = ingestor.receive(posts_box(), raw)
    again = ingestor.receive(posts_box(), raw)
    assert (first.rejected, again.rejected, again.skipped) == (1, 0, 1)
    [event] = world.outbox.announcements
    assert isinstance(event, MailRejected) and world.entries()["Huge"].status == "rejected"
