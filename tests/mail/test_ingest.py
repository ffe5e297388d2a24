"""Mail in end to end: a real Dovecot, moto for AWS, the real ingestion rules (CONTRACT §9)."""

from __future__ import annotations

import dataclasses
import socket
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

import pytest

from chalicelib import deps
from chalicelib.clock import utc_now
from chalicelib.jobs.base import Deadline
from chalicelib.jobs.mail_poll import composed, poll_mailbox
from chalicelib.services.mail_in.ingest import Mailbox, MailIngestor
from chalicelib.services.poll_schedule import PollState
from tests.support.mail_fakes import CRASH_STEPS, Crash, CrashAt, PlannerDying
from tests.support.mail_messages import email_message

BASE = "https://community.example"


def mail(sender: str, subject: str, body: str, **options: Any) -> bytes:
    return email_message(sender, subject, body, to="inbox@community.example", **options).as_bytes()


@dataclass
class FakeDirectory:
    """The mailbox settings the poll reads (the settings service, passed in as a fake)."""

    boxes: dict[str, Mailbox] = field(default_factory=dict)
    last_processed: dict[str, datetime] = field(default_factory=dict)
    last_errors: dict[str, tuple[datetime, str]] = field(default_factory=dict)

    def mailbox(self, key: str) -> Mailbox | None:
        return self.boxes.get(key)

    def enabled_mailbox_keys(self) -> list[str]:
        return list(self.boxes)

    def record_last_processed(self, key: str, when: datetime) -> None:
        self.last_processed[key] = when

    def record_poll_failed(self, key: str, when: datetime, message: str) -> None:
        self.last_errors[key] = (when, message)

    def record_poll(
        self,
        mailbox: Mailbox,
        when: datetime,
        *,
        found_mail: bool,
        failure: Any,
        left_by_stop: bool = False,
    ) -> PollState:
        """What the settings service decides, kept on the fake's mailboxes."""
        from chalicelib.services import poll_schedule

        before = mailbox.poll_state
        if failure is not None:
            self.last_errors[mailbox.key] = (when, failure.message)
            after = poll_schedule.after_failure(before, when)
        else:
            self.last_processed[mailbox.key] = when
            self.last_errors.pop(mailbox.key, None)
            after = (
                poll_schedule.after_stop_left_mail(when)
                if left_by_stop
                else poll_schedule.after_mail(when)
                if found_mail
                else poll_schedule.after_empty(before, when, timedelta(minutes=15))
            )
        self.boxes[mailbox.key] = replace(
            self.boxes[mailbox.key],
            next_poll_on=after.next_poll_on,
            empty_polls=after.empty_polls,
            poll_failures=after.failures,
        )
        return after

    def record_cut_short(self, mailbox: Mailbox, when: datetime) -> PollState | None:
        """The streak kept on the fake's mailbox (recorded as a failure by the real service)."""
        box = self.boxes[mailbox.key]
        self.boxes[mailbox.key] = replace(box, polls_cut_short=box.polls_cut_short + 1)
        return None

    def due_mailbox_keys(self, now: datetime) -> list[str]:
        from chalicelib.services.poll_schedule import dispatch_horizon, is_due

        return [k for k, b in self.boxes.items() if is_due(b.next_poll_on, dispatch_horizon(now))]


@pytest.fixture
def world(community, mailbox, dovecot):
    c = community
    c.garden = c.group("garden")
    c.photos = c.group(
        "photos",
        access="private",
        permissions={
            "post": ["member", "moderator", "administrator"],
            "comment": ["member", "moderator", "administrator"],
            "commentWithoutApproval": ["moderator", "administrator"],
        },
    )
    c.ann = c.user("ann", {c.garden: "member", c.photos: "member"}, email="Ann@Example.org")
    c.mod = c.user("mod", {c.photos: "moderator"}, email="mod@example.org")
    c.rita = c.user("rita", email="rita@example.org")
    c.hello = c.post(c.garden, c.ann, title="Hello", slug="hello")
    c.photo_post = c.post(c.photos, c.ann, title="Pier", slug="pier")
    c.first_comment = c.comment(c.hello, c.ann)
    c.load()
    c.mailbox = mailbox

    def config(
        kind: str = "post", group: str | None = None, delete: bool = True, ssl: bool = False
    ):
        scope = (group or c.garden) if kind == "post" else "system"
        return mailbox.connector(scope, delete=delete, ssl=ssl)

    c.config = config
    return c


def ingestor(**overrides) -> MailIngestor:
    return deps.mail_ingestor(**overrides)


def poll(config: Mailbox, **overrides):
    return ingestor(**overrides).poll(config, lambda: False)


def posts_of(group_id: str):
    from chalicelib.store.posts import PostRecord

    return list(PostRecord.by_group.query(group_id))


def comments_of(post_id: str):
    from chalicelib.store.comments import CommentRecord

    return [c for c in CommentRecord.scan() if c.post_id == post_id]


def log_entries(key: str):
    from chalicelib.store.mail import MailRecord

    return list(MailRecord.received.query(key, scan_index_forward=False))


def test_mail_becomes_a_post_and_the_mailbox_is_emptied(world):
    world.mailbox.deliver(
        mail("Ann <ann@EXAMPLE.org>", "Seed swap", "Bring seeds.\n\n<b>Saturday</b>")
    )
    result = poll(world.config())
    assert (result.posted, result.deleted) == (1, 1)
    [post] = [p for p in posts_of(world.garden) if p.source == "email"]
    assert post.title == "Seed swap" and post.author_id == world.ann and post.source == "email"
    assert post.content == "<p>Bring seeds.</p><p>&lt;b&gt;Saturday&lt;/b&gt;</p>"
    assert world.mailbox.count() == 0
    [entry] = log_entries(world.config().key)
    assert entry.status == "posted" and entry.post_id == post.id


def test_pop3s_with_a_verified_certificate(world, trust_dovecot_cert):
    world.mailbox.deliver(mail("ann@example.org", "Over TLS", "secure"))
    result = poll(world.config(ssl=True))
    assert result.posted == 1
    assert sorted(p.title for p in posts_of(world.garden)) == ["Hello", "Over TLS"]


def test_kept_mail_is_not_imported_again(world):
    for i in range(3):
        world.mailbox.deliver(mail("ann@example.org", f"Kept {i}", "text"))
    first = poll(world.config(delete=False))
    second = poll(world.config(delete=False))
    assert first.posted == 3 and second.posted == 0 and second.skipped == 3
    assert world.mailbox.count() == 3
    assert len(posts_of(world.garden)) == 4


def test_same_message_id_twice_makes_one_post(world):
    raw = mail("ann@example.org", "Twice", "same mail", message_id="<same@mail.example>")
    world.mailbox.deliver(raw)
    world.mailbox.deliver(raw)
    result = poll(world.config())
    assert result.posted == 1 and result.skipped == 1 and result.deleted == 2
    assert [p.title for p in posts_of(world.garden)].count("Twice") == 1


@pytest.mark.parametrize("step", CRASH_STEPS)
def test_a_crash_at_any_step_loses_nothing_and_duplicates_nothing(world, step):
    world.mailbox.deliver(mail("ann@example.org", "Crash test", "body"))
    world.mailbox.deliver(mail("ann@example.org", "Second", "body"))
    with pytest.raises(Crash):
        poll(world.config(), **CrashAt(step).overrides())
    # The crash came before QUIT: the server rolled back every deletion.
    assert world.mailbox.count() == 2
    result = poll(world.config())
    titles = [p.title for p in posts_of(world.garden)]
    assert titles.count("Crash test") == 1 and titles.count("Second") == 1
    assert world.mailbox.count() == 0
    assert result.failed == 0


def test_one_poisoned_mail_among_ten_does_not_block_the_rest(world):
    class PoisonedUsers:
        """Users repository that fails for one sender, as a broken record would."""

        def __init__(self, real):
            self.real = real

        def by_email(self, address):
            if address == "rita@example.org":
                raise RuntimeError("poisoned record")
            return self.real.by_email(address)

    from chalicelib.store.users import UserRepository

    world.mailbox.deliver(mail("rita@example.org", "Poison", "x"))
    for i in range(10):
        world.mailbox.deliver(mail("ann@example.org", f"Good {i}", "fine"))
    users = PoisonedUsers(UserRepository())
    first = poll(world.config(), users=users)
    assert first.posted == 10 and first.failed == 1
    assert world.mailbox.count() == 1  # the failed mail stays for a retry
    [failed] = [e for e in log_entries(world.config().key) if e.status == "failed"]
    assert "attempt 1 of 3" in failed.reason
    poll(world.config(), users=users)
    third = poll(world.config(), users=users)
    assert third.failed == 1
    [quarantined] = [e for e in log_entries(world.config().key) if e.subject == "Poison"]
    assert quarantined.status == "quarantined" and "no more retries" in quarantined.reason
    fourth = poll(world.config(), users=users)
    assert fourth.skipped == 1 and fourth.failed == 0
    assert world.mailbox.count() == 1  # quarantined mail is kept for a person to look at


def test_senders_are_checked(world):
    world.mailbox.deliver(mail("stranger@example.org", "Who?", "x"))
    world.mailbox.deliver(mail("rita@example.org", "Not a member", "x"))
    world.mailbox.deliver(
        mail("ann@example.org", "Vacation", "x", headers={"Auto-Submitted": "auto-replied"})
    )
    result = poll(world.config())
    assert (result.rejected, result.ignored, result.posted) == (2, 1, 0)
    reasons = {e.subject: (e.status, e.reason) for e in log_entries(world.config().key)}
    assert reasons["Who?"] == ("rejected", "unknown sender stranger@example.org")
    assert reasons["Not a member"][0] == "rejected" and "may not post" in reasons["Not a member"][1]
    assert reasons["Vacation"][0] == "ignored"


def test_spoofed_mail_is_rejected_only_on_our_servers_word(world):
    forged = (
        b"Authentication-Results: mx.community.example; dmarc=fail header.from=example.org\r\n"
    ) + mail("ann@example.org", "Spoofed", "x")
    world.mailbox.deliver(forged)
    result = poll(world.config(), authserv_id="mx.community.example")
    assert result.rejected == 1
    assert log_entries(world.config().key)[0].reason.startswith("spoofed")


def test_oversized_mail_is_skipped_before_download(world):
    world.mailbox.deliver(mail("ann@example.org", "Huge", "x" * 5000))
    result = poll(world.config(), max_bytes=1000)
    assert result.rejected == 1 and posts_of(world.garden)[0].title == "Hello"
    [entry] = log_entries(world.config().key)
    assert "not downloaded" in entry.reason


def test_html_mail_is_sanitised(world):
    world.mailbox.deliver(
        mail(
            "ann@example.org",
            "Html",
            "",
            html='<p onclick="x()">Hi<script>bad()</script>'
            '<a href="javascript:alert(1)">l</a><img src=x onerror=alert(1)></p>',
        )
    )
    world.mailbox.deliver(
        EmailMessageBytes.html_only(
            "ann@example.org", "Only html", '<p onmouseover="x">Hey</p><script>1</script>'
        )
    )
    result = poll(world.config())
    assert result.posted == 2  # both were imported, so their content is what is checked
    mailed = [p for p in posts_of(world.garden) if p.source == "email"]
    assert {p.title for p in mailed} == {"Html", "Only html"}
    assert any("Hi" in p.content for p in mailed) and any("Hey" in p.content for p in mailed)
    for post in mailed:
        assert "<script" not in post.content and "onclick" not in post.content
        assert "javascript:" not in post.content and "onerror" not in post.content
        assert "onmouseover" not in post.content


class EmailMessageBytes:
    @staticmethod
    def html_only(sender: str, subject: str, html: str) -> bytes:
        message = EmailMessage()
        message["From"], message["Subject"] = sender, subject
        message["Message-ID"] = make_msgid()
        message.set_content(html, subtype="html")
        return message.as_bytes()


def test_comment_by_permalink_with_reply_chain_and_quote(world):
    subject = f"Re: RE: Fwd: about {BASE}/garden/hello#{world.first_comment} (see)"
    body = "Great idea!\n\nOn Mon, 1 Nov 2026 at 10:00, Ann <ann@example.org> wrote:\n> old text\n"
    world.mailbox.deliver(mail("ann@example.org", subject, body))
    world.mailbox.deliver(
        mail("ann@example.org", f"Re: {BASE}/garden/hello", "Top level\n-- \nAnn")
    )
    result = poll(world.config("comment"))
    assert result.commented == 2
    comments = {c.content: c for c in comments_of(world.hello)}
    reply = comments["<p>Great idea!</p>"]
    assert reply.parent_comment_id == world.first_comment and reply.is_approved is True
    assert comments["<p>Top level</p>"].parent_comment_id == 0
    assert reply.source == "email" and reply.author_id == world.ann


def test_comment_approval_follows_the_group_permissions(world):
    world.mailbox.deliver(mail("ann@example.org", f"{BASE}/photos/pier", "member comment"))
    world.mailbox.deliver(mail("mod@example.org", f"{BASE}/photos/pier", "moderator comment"))
    world.mailbox.deliver(mail("rita@example.org", f"{BASE}/photos/pier", "outsider comment"))
    result = poll(world.config("comment"))
    assert result.commented == 2 and result.rejected == 1
    approval = {c.content: c.is_approved for c in comments_of(world.photo_post)}
    assert approval == {"<p>member comment</p>": False, "<p>moderator comment</p>": True}


def test_comment_on_unknown_permalink_is_rejected(world):
    world.mailbox.deliver(mail("ann@example.org", f"Re: {BASE}/garden/nope", "x"))
    world.mailbox.deliver(mail("ann@example.org", "no link at all", "x"))
    result = poll(world.config("comment"))
    assert result.rejected == 2
    assert all("names no existing post" in e.reason for e in log_entries("comment#system"))


def test_poll_under_lease_and_last_processed(world):
    from chalicelib.clock import utc_now
    from chalicelib.store.mail import MailRepository

    directory = FakeDirectory({world.config().key: world.config()})
    world.mailbox.deliver(mail("ann@example.org", "Leased", "x"))
    now = utc_now()
    assert MailRepository().acquire_lease(
        world.config().key, "other-worker", now, now.replace(year=now.year + 1)
    )
    parts = replace(composed(), source=directory, polls=directory)
    line = poll_mailbox(world.config().key, Deadline.unbounded(), parts).line
    assert "another worker" in line and world.mailbox.count() == 1
    MailRepository().release_lease(world.config().key, "other-worker")
    line = poll_mailbox(world.config().key, Deadline.unbounded(), parts).line
    assert "posted 1" in line and world.config().key in directory.last_processed


def test_poll_is_bounded_and_leaves_the_rest(world):
    for i in range(5):
        world.mailbox.deliver(mail("ann@example.org", f"Bounded {i}", "x"))
    result = poll(world.config(), max_messages=2)
    assert result.posted == 2 and result.left == 3
    result = poll(world.config(), max_messages=10)
    assert result.posted == 3
    assert sorted(p.title for p in posts_of(world.garden) if p.title.startswith("Bounded")) == [
        f"Bounded {i}" for i in range(5)
    ]


def test_ids_are_stable_for_the_same_mail():
    from chalicelib.services.mail_in.ingest import MailIngestor

    assert MailIngestor._entry_id("post#x", "message-id:a@b") == MailIngestor._entry_id(
        "post#x", "message-id:a@b"
    )
    assert MailIngestor._entry_id("post#x", "message-id:a@b") != MailIngestor._entry_id(
        "post#y", "message-id:a@b"
    )
    uuid.UUID(MailIngestor._entry_id("post#x", "sha256:00"))


class Death(BaseException):
    """The process dies (a Lambda timeout, not an exception)."""


def killer_of(subject: str) -> PlannerDying:
    """The real planner, in a process that dies whenever it plans the mail of `subject`."""

    def dies(planned: str) -> None:
        if planned == subject:
            raise Death(subject)

    return PlannerDying(ingestor().planner, dies)


def test_a_mail_that_kills_the_process_is_quarantined_and_the_rest_flows(world):
    killer = killer_of("Killer")
    world.mailbox.deliver(mail("ann@example.org", "Killer", "boom"))
    world.mailbox.deliver(mail("ann@example.org", "Good 0", "fine"))
    for poll_number in range(1, 4):  # max_attempts polls die on it...
        with pytest.raises(Death):
            poll(world.config(), planner=killer)
        # ...while the mail delivered meanwhile still gets imported
        world.mailbox.deliver(mail("ann@example.org", f"Good {poll_number}", "fine"))
    [entry] = [e for e in log_entries(world.config().key) if e.subject == "Killer"]
    assert entry.status == "processing" and entry.attempts == 3
    last = poll(world.config(), planner=killer)  # the killer is not run again
    [entry] = [e for e in log_entries(world.config().key) if e.subject == "Killer"]
    assert entry.status == "quarantined" and "interrupted 3 times" in entry.reason
    assert last.failed == 1
    titles = sorted(p.title for p in posts_of(world.garden) if p.title.startswith("Good"))
    assert titles == ["Good 0", "Good 1", "Good 2", "Good 3"]
    assert world.mailbox.count() == 1  # only the quarantined mail is kept
    assert poll(world.config(), planner=killer).skipped == 1


def test_a_given_planner_takes_none_of_its_own_parts_beside_it():
    """A planner holds its posts, comments and counters: given again beside it they would be
    ignored, so mail_ingestor refuses them, naming them; the notices' parts still go with it."""
    planner = ingestor().planner
    for part in ("users", "posts", "comments", "counters", "base_url", "reply_keys"):
        with pytest.raises(TypeError, match=f"{part} would be ignored beside planner="):
            ingestor(planner=planner, **{part: getattr(planner, part)})
    kept = ingestor(planner=planner, authserv_id="example.com", max_bytes=2000)
    assert kept.planner is planner and kept.max_bytes == 2000


def test_switching_to_another_account_imports_its_mail_despite_colliding_uidls(world, dovecot):
    from chalicelib.mail.pop3 import Pop3Mailbox

    world.mailbox.deliver(mail("ann@example.org", "Old account", "x"))
    assert poll(world.config(delete=False)).posted == 1
    dovecot.add_user(f"{world.mailbox.user}new", "new-password")
    dovecot.deliver(f"{world.mailbox.user}new", mail("ann@example.org", "New account", "y"))
    switched = dataclasses.replace(
        world.config(), server_username=f"{world.mailbox.user}new", password="new-password"
    )
    with (
        Pop3Mailbox(
            "127.0.0.1",
            switched.server_port,
            world.mailbox.user,
            world.mailbox.password,
            is_ssl=False,
        ) as old,
        Pop3Mailbox(
            "127.0.0.1",
            switched.server_port,
            switched.server_username,
            switched.password,
            is_ssl=False,
        ) as new,
    ):
        assert old.uidls() == new.uidls()  # the collision this test is about
    result = poll(switched)
    assert result.posted == 1 and result.skipped == 0 and result.deleted == 1
    titles = [p.title for p in posts_of(world.garden)]
    assert titles.count("New account") == 1 and titles.count("Old account") == 1


def test_the_per_poll_cap_counts_only_mail_not_yet_handled(world):
    for i in range(3):
        world.mailbox.deliver(mail("ann@example.org", f"Kept {i}", "x"))
    assert poll(world.config(delete=False), max_messages=3).posted == 3
    for i in range(2):
        world.mailbox.deliver(mail("ann@example.org", f"New {i}", "x"))
    result = poll(world.config(delete=False), max_messages=2)
    assert (result.posted, result.skipped, result.left) == (2, 3, 0)


def test_a_database_failure_is_logged_in_plain_words(world):
    class BrokenCounters:
        def next_value(self, name):
            from pynamodb.exceptions import UpdateError

            raise UpdateError("Failed to update item: botocore internals here")

    world.mailbox.deliver(mail("ann@example.org", f"Re: {BASE}/garden/hello", "a comment"))
    result = poll(world.config("comment"), counters=BrokenCounters())
    assert result.failed == 1
    [entry] = log_entries("comment#system")
    assert entry.status == "failed"
    assert "database" in entry.reason and "botocore" not in entry.reason


def test_a_connection_that_breaks_mid_message_is_reopened_and_the_poll_goes_on(world):
    from chalicelib.mail.pop3 import open_pop3

    class DropsOnce:
        """The real session (`open_pop3`'s) whose connection drops the first time message 2 is
        retrieved."""

        dropped = False

        def __init__(self, config):
            self.real = open_pop3(config)

        def __getattr__(self, name):
            return getattr(self.real, name)

        def retrieve(self, number, max_bytes=None):
            if number == 2 and not DropsOnce.dropped:
                DropsOnce.dropped = True
                self.real._connection.sock.shutdown(socket.SHUT_RDWR)
            return self.real.retrieve(number, max_bytes)

    for i in range(3):
        world.mailbox.deliver(mail("ann@example.org", f"Mail {i}", "x"))
    first = poll(world.config(), open_mailbox=DropsOnce)
    assert (first.posted, first.failed) == (2, 1)
    [entry] = [e for e in log_entries(world.config().key) if e.status == "failed"]
    assert entry.reason.startswith("attempt 1 of 3 failed, will retry: download failed")
    second = poll(world.config())
    assert second.posted == 1
    assert sorted(p.title for p in posts_of(world.garden) if p.title.startswith("Mail")) == [
        "Mail 0",
        "Mail 1",
        "Mail 2",
    ]
    assert world.mailbox.count() == 0


def test_a_name_that_resolves_to_a_private_address_only_at_connect_time_is_refused_then(
    world, kms_key
):
    """Saved while the name pointed at a public address; by the poll it points at loopback
    (DNS rebinding). The poll refuses before connecting, in plain words for the mailbox."""
    import functools

    from chalicelib import secrets
    from chalicelib.mail.hosts import HostPolicy
    from chalicelib.mail.pop3 import MailboxError, open_pop3
    from chalicelib.schemas.connectors import MailboxSettingsUpdate
    from chalicelib.services.mailboxes import MailboxSettingsService
    from chalicelib.store.groups import GroupRepository
    from chalicelib.store.mailboxes import MailboxRepository

    dns = {"pop.rebinding.example": ["93.184.215.14"]}
    hosts = HostPolicy(False, lambda host, port: dns.get(host, []))
    service = MailboxSettingsService(MailboxRepository(), secrets, utc_now, hosts)
    update = MailboxSettingsUpdate.model_validate(
        {
            "serverName": "pop.rebinding.example",
            "serverPort": world.mailbox.server.pop3_port,
            "serverUsername": world.mailbox.user,
            "serverPassword": world.mailbox.password,
            "isEnabled": True,
            "isSSL": False,
            "deleteProcessed": True,
        }
    )
    service.update_email_to_post(GroupRepository().get(world.garden), update, world.ann)

    dns["pop.rebinding.example"] = ["127.0.0.1"]
    world.mailbox.deliver(mail("ann@example.org", "Through the rebinding", "hello"))
    from chalicelib.services.mailboxes import mailbox_key

    config = deps.mailbox_directory().mailbox(mailbox_key(world.garden))
    refusing = functools.partial(open_pop3, hosts=hosts)
    with pytest.raises(MailboxError) as raised:
        poll(config, open_mailbox=refusing)
    assert "refused: pop.rebinding.example resolves to 127.0.0.1" in str(raised.value)
    assert world.mailbox.count() == 1
    assert [p.title for p in posts_of(world.garden)] == ["Hello"]  # the fixture's only
