"""The composition root: the repositories and collaborators each service is built with.

It sits at the top with app.py, beside the entry points: app.py wires at import (blueprints,
schedules), this module wires at run time, when a view or a job asks for the service it calls
(Chalice views are module functions: there is no constructor to hand them a service). So only the
entry points ask it (api/, jobs/, cli.py, local*.py), and it never calls them back; the layers
below (services, store, mail, domain) never import it, and nothing built here calls back into it
once built: it defines builders only, no object of its own that runs later
(tests/fast/test_architecture.py says both).

Services take everything through their constructors, typed by the Protocols of
domain/ports (a test passes a fake, tests/support/fakes.py). One idiom each:

- a repository is a cached factory below (made once, on first use), `deps.<name>()`.
- a service is a plain constructor call on each use: some take settings when built, and tests
  change settings between calls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from chalicelib import secrets
from chalicelib.auth import signing_keys
from chalicelib.aws import QueueSender, put_events
from chalicelib.clock import utc_now
from chalicelib.services.administrators import AdministratorService
from chalicelib.services.alerts import AlertService
from chalicelib.services.audit import AuditService
from chalicelib.services.canary import CanaryAccountService
from chalicelib.services.comments import CommentPresenter, CommentService
from chalicelib.services.connectors import LocalConnectorService
from chalicelib.services.console import ConsoleService
from chalicelib.services.event_bus import EventBusPublisher
from chalicelib.services.events import EventService
from chalicelib.services.feed import FeedService
from chalicelib.services.feed_keys import FeedKeyService
from chalicelib.services.fixture import FixtureExporter, FixtureService
from chalicelib.services.group_email import GroupEmailService
from chalicelib.services.group_list import GroupListService
from chalicelib.services.groups import GroupService
from chalicelib.services.ical import IcalService
from chalicelib.services.mail_log import MailLogService
from chalicelib.services.mailboxes import MailboxDirectory, MailboxSettingsService
from chalicelib.services.newsletter import NewsletterService
from chalicelib.services.notifications import NotificationService
from chalicelib.services.notify.digests import DigestService
from chalicelib.services.notify.unsubscribe import UnsubscribeService
from chalicelib.services.player import PlayerService
from chalicelib.services.posts import PostService
from chalicelib.services.profile import ProfileService
from chalicelib.services.rss import RssService
from chalicelib.services.security import SecurityService
from chalicelib.services.suppressions import SuppressionService
from chalicelib.services.system_pages import SystemPageService
from chalicelib.services.user_search import UserSearchService
from chalicelib.settings import get_settings

# What only a job or one route needs is imported by the builder that makes it, not at the top:
# each would add to every function's cold start (`import app`; bench/hidden_imports.py --cost):
# mail in 136 ms, the instant email's delivery 64 ms, the sender checks 58 ms, outgoing mail 45 ms.
if TYPE_CHECKING:
    from chalicelib.domain.ports.notify import Mailer
    from chalicelib.mail.authentication import SenderVerifier
    from chalicelib.mail.outgoing import OutgoingMail, SendingRate
    from chalicelib.mail.threads import ReplyKeys
    from chalicelib.services.event_bus import EventBusPublisher
    from chalicelib.services.mail_in import MailIngestor
    from chalicelib.services.notify.delivery import BatchReads, NotifyService, SendingIdentities
    from chalicelib.store.alerts import AlertRepository
    from chalicelib.store.audit import AuditRepository
    from chalicelib.store.comments import CommentRepository
    from chalicelib.store.connectors import ConnectorRepository
    from chalicelib.store.counters import CounterRepository
    from chalicelib.store.documents import DocumentRepository
    from chalicelib.store.events import EventRepository
    from chalicelib.store.feed_keys import FeedKeyRepository
    from chalicelib.store.fixture import FixtureExportStore, FixtureStore
    from chalicelib.store.groups import GroupRepository
    from chalicelib.store.login_attempts import LoginAttemptRepository
    from chalicelib.store.mail import MailRepository
    from chalicelib.store.mailboxes import MailboxRepository
    from chalicelib.store.notifications import DigestRepository, NotificationRepository
    from chalicelib.store.outbox import Outbox
    from chalicelib.store.player import PlayerRepository
    from chalicelib.store.posts import PostRepository
    from chalicelib.store.profile import ProfileRepository
    from chalicelib.store.refs import ReferenceReader
    from chalicelib.store.sending import SlotClock, SuppressionRepository
    from chalicelib.store.user_search import SearchIndex
    from chalicelib.store.users import UserRepository


# --- repositories -------------------------------------------------------------------------------
# Each made once, on first use, and kept: a repository holds no state. Each imports its store
# module when first asked for, so a handler that never needs a table never loads its model (cold
# start: the store at the top would add about 340 ms to `import app`, measured by
# `python -m bench.hidden_imports --cost chalicelib.store.base`).


@functools.cache
def alerts() -> AlertRepository:
    from chalicelib.store.alerts import AlertRepository

    return AlertRepository()


@functools.cache
def audit() -> AuditRepository:
    from chalicelib.store.audit import AuditRepository

    return AuditRepository()


@functools.cache
def comments() -> CommentRepository:
    from chalicelib.store.comments import CommentRepository

    return CommentRepository()


@functools.cache
def connectors() -> ConnectorRepository:
    from chalicelib.store.connectors import ConnectorRepository

    return ConnectorRepository()


@functools.cache
def counters() -> CounterRepository:
    from chalicelib.store.counters import CounterRepository

    return CounterRepository()


@functools.cache
def digests() -> DigestRepository:
    from chalicelib.store.notifications import DigestRepository

    return DigestRepository()


@functools.cache
def documents() -> DocumentRepository:
    from chalicelib.store.documents import DocumentRepository

    return DocumentRepository()


@functools.cache
def events() -> EventRepository:
    from chalicelib.store.events import EventRepository

    return EventRepository()


@functools.cache
def feed_keys() -> FeedKeyRepository:
    from chalicelib.store.feed_keys import FeedKeyRepository

    return FeedKeyRepository()


@functools.cache
def fixture_export_store() -> FixtureExportStore:
    from chalicelib.store.fixture import FixtureExportStore

    return FixtureExportStore()


@functools.cache
def fixture_store() -> FixtureStore:
    from chalicelib.store.fixture import FixtureStore

    return FixtureStore()


@functools.cache
def groups() -> GroupRepository:
    from chalicelib.store.groups import GroupRepository

    return GroupRepository()


@functools.cache
def login_attempts() -> LoginAttemptRepository:
    from chalicelib.store.login_attempts import LoginAttemptRepository

    return LoginAttemptRepository()


@functools.cache
def mail() -> MailRepository:
    from chalicelib.store.mail import MailRepository

    return MailRepository()


@functools.cache
def mailboxes() -> MailboxRepository:
    from chalicelib.store.mailboxes import MailboxRepository

    return MailboxRepository()


@functools.cache
def notifications() -> NotificationRepository:
    from chalicelib.store.notifications import NotificationRepository

    return NotificationRepository()


@functools.cache
def outbox() -> Outbox:
    from chalicelib.store.outbox import Outbox

    return Outbox()


@functools.cache
def players() -> PlayerRepository:
    from chalicelib.store.player import PlayerRepository

    return PlayerRepository()


@functools.cache
def posts() -> PostRepository:
    from chalicelib.store.posts import PostRepository

    return PostRepository()


@functools.cache
def profile_items() -> ProfileRepository:
    from chalicelib.store.profile import ProfileRepository

    return ProfileRepository()


@functools.cache
def refs() -> ReferenceReader:
    from chalicelib.store.refs import ReferenceReader

    return ReferenceReader()


@functools.cache
def search_index() -> SearchIndex:
    from chalicelib.store.user_search import SearchIndex

    return SearchIndex()


@functools.cache
def slot_clock() -> SlotClock:
    from chalicelib.store.sending import SlotClock

    return SlotClock()


@functools.cache
def suppressions() -> SuppressionRepository:
    from chalicelib.store.sending import SuppressionRepository

    return SuppressionRepository()


@functools.cache
def users() -> UserRepository:
    from chalicelib.store.users import UserRepository

    return UserRepository()


# --- who is told what happened --------------------------------------------------------------------


def mailbox_failing_notice(sender: str | None = None) -> Any:
    """Tells a mailbox's administrators that its polls keep failing (services/mailbox_alerts.py);
    `sender`: the job that sends its mail (`paced_mail`)."""
    from chalicelib.services.mailbox_alerts import MailboxFailingNotice

    return MailboxFailingNotice(
        mailboxes(),
        users(),
        groups(),
        digests(),
        paced_mail(sender),
        sending_identities(),
        utc_now,
    )


def event_bus_publisher() -> EventBusPublisher:
    return EventBusPublisher(get_settings().event_bus, send=put_events)


# --- services -------------------------------------------------------------------------------------


def group_service() -> GroupService:
    return GroupService(groups())


def security_service() -> SecurityService:
    return SecurityService(users(), login_attempts(), groups(), utc_now)


def profile_service() -> ProfileService:
    return ProfileService(profile_items())


def event_service() -> EventService:
    return EventService(events(), users(), group_service())


def alert_service() -> AlertService:
    return AlertService(alerts(), users(), groups(), utc_now)


def audit_service() -> AuditService:
    return AuditService(audit(), refs(), events(), connectors())


def mail_log_service() -> MailLogService:
    return MailLogService(mail(), refs())


def system_page_service() -> SystemPageService:
    return SystemPageService(documents())


def feed_service() -> FeedService:
    return FeedService(documents(), utc_now)


def newsletter_service() -> NewsletterService:
    return NewsletterService(documents(), utc_now)


def group_email_service() -> GroupEmailService:
    return GroupEmailService(documents(), utc_now)


def administrator_service() -> AdministratorService:
    return AdministratorService(users(), groups())


def canary_account_service() -> CanaryAccountService:
    return CanaryAccountService(users())


def feed_key_service() -> FeedKeyService:
    return FeedKeyService(feed_keys(), users(), groups(), utc_now)


def ical_service() -> IcalService:
    return IcalService(events(), utc_now)


def rss_service() -> RssService:
    return RssService(posts(), users(), feed_service())


def player_service() -> PlayerService:
    settings = get_settings()
    return PlayerService(players(), utc_now, settings.game_level_base, settings.game_level_exponent)


def comment_presenter() -> CommentPresenter:
    return CommentPresenter(refs())


def comment_service(clock: Callable[[], datetime] = utc_now) -> CommentService:
    return CommentService(comments(), group_service(), comment_presenter(), clock)


def post_service() -> PostService:
    return PostService(posts(), comments(), users(), comment_presenter())


class IngestorParts(TypedDict, total=False):
    """What a test or the benchmark may give `mail_ingestor` instead of the configured part:
    the planner's (`users`, `groups`, `posts`, `comments`, `counters`, `base_url`, `authserv_id`,
    `verifier`; `mail` and `clock` go to both), or the ingestor's. A given `planner` takes none
    of the planner's only parts beside it (`_PLANNER_ONLY`)."""

    users: Any
    groups: Any
    posts: Any
    comments: Any
    base_url: str
    authserv_id: str | None
    verifier: SenderVerifier | None
    unverified: str
    reply_keys: Any
    planner: Any
    counters: Any
    mail: Any
    outbox: Any
    clock: Callable[[], datetime]
    open_mailbox: Callable[..., Any]
    max_messages: int
    max_bytes: int
    max_attempts: int
    workers: int
    notices: Any


_PLANNER_PARTS = (
    "users",
    "groups",
    "posts",
    "comments",
    "base_url",
    "authserv_id",
    "verifier",
    "unverified",
    "reply_keys",
    "inbound_domain",
    "counters",
)


# The parts only the planner takes: a given planner already holds its own, so they cannot be
# given with it (the notice decider's, `groups`, `authserv_id`, `verifier` and `inbound_domain`,
# still can: the notices read them).
_PLANNER_ONLY = ("users", "posts", "comments", "counters", "base_url", "unverified", "reply_keys")


def mail_ingestor(**given: Unpack[IngestorParts]) -> MailIngestor:
    """The mail-in of the configured mailboxes; `given` parts replace the configured ones. A
    given `planner` comes with its own collaborators: giving one of theirs too is a TypeError
    (it would be ignored), so build the planner with them (`mail_ingestor(posts=…).planner`)."""
    ignored = [name for name in _PLANNER_ONLY if name in given] if "planner" in given else []
    if ignored:
        raise TypeError(
            f"mail_ingestor: {', '.join(ignored)} would be ignored beside planner=, which holds"
            " its own; give them to the planner instead"
        )
    from chalicelib.services.mail_in import MailIngestor  # the mail jobs only
    from chalicelib.services.mail_in.planner import MailPlanner

    settings = get_settings()
    mode = settings.mail_auth_mode
    parts: dict[str, Any] = {
        "users": users(),
        "groups": groups(),
        "posts": posts(),
        "comments": comments(),
        "base_url": settings.public_base_url,
        "authserv_id": settings.mail_authserv_id if mode == "header" else None,
        "verifier": sender_verifier() if mode == "verify" else None,
        "unverified": settings.mail_unverified,
        "reply_keys": reply_keys(),
        "inbound_domain": settings.inbound_domain,
        "counters": counters(),
        "mail": mail(),
        "outbox": outbox(),
        "clock": utc_now,
    }
    parts.update(given)
    planning = {name: parts.pop(name) for name in _PLANNER_PARTS}
    both = {"mail": parts["mail"], "clock": parts["clock"]}
    parts.setdefault("planner", MailPlanner(**planning, **both))
    if "notices" not in parts:
        planner = parts["planner"]
        group_of = planner.group if isinstance(planner, MailPlanner) else planning["groups"].get
        parts["notices"] = notice_decider(planning, parts["clock"], group_of)
    return MailIngestor(**parts)


def notice_decider(
    planning: dict[str, Any], clock: Callable[[], datetime], group_of: Callable[[str], Any]
) -> Any:
    """Whether a rejected mail's sender is told why (services/mail_in/notices.py), under the
    planner's mode and verifier (one poll's DNS answers serve both) and through its per-poll
    read of a group (`group_of`)."""
    from chalicelib.services.mail_in.notices import NoticeDecider
    from chalicelib.store.mail import NoticeClaims

    return NoticeDecider(
        claims=NoticeClaims(),
        suppressed=suppressions().is_suppressed,
        group_of=group_of,
        clock=clock,
        authserv_id=planning["authserv_id"],
        verifier=planning["verifier"],
        inbound_domain=planning["inbound_domain"],
    )


def rejection_notices(sender: str | None = None) -> Any:
    """Tells a rejected mail's sender why, once (services/mail_in/notices.py); `sender`: the job
    that sends its mail (`paced_mail`)."""
    from chalicelib.services.mail_in.notices import RejectionNotices
    from chalicelib.store.mail import NoticeClaims

    return RejectionNotices(
        NoticeClaims(), groups(), paced_mail(sender), sending_identities(), utc_now
    )


def reply_keys() -> ReplyKeys:
    """Reply keys (chalicelib/mail/threads.py) under the token secret."""
    from chalicelib.mail.threads import ReplyKeys

    return ReplyKeys(signing_keys().secrets, utc_now)


def sender_verifier() -> SenderVerifier:
    """DKIM and DMARC checks for one poll through AGORA_DNS_SERVERS (or the system resolver)."""
    from chalicelib.mail.authentication import DnsTxt, SenderVerifier

    return SenderVerifier(DnsTxt(get_settings().dns_server_addresses))


# --- notifications and outgoing mail --------------------------------------------------------------


def outgoing_mail() -> OutgoingMail:
    """SES, from the platform's sender under the identity each letter carries; suppressed
    addresses (bounces, complaints) are never written to."""
    from chalicelib.mail.outgoing import OutgoingMail, SesMailer
    from chalicelib.mail.threads import site_host

    return OutgoingMail(
        SesMailer(),
        get_settings().sender_address,
        suppressions().is_suppressed,
        site_host=site_host(),
    )


def sending_rate(function: str, *, expired: Callable[[], bool] | None = None) -> SendingRate:
    """The stack's one sending rate as the job `function` draws from it (its place in
    mail/outgoing.py `SENDERS`), on the counters table's slot clock; `expired`: its deadline, for
    a sender that waits behind instant mail."""
    from chalicelib.mail.outgoing import SENDERS, SendingRate

    rate, instant = get_settings().mail_send_rate, SENDERS[function].instant
    return SendingRate(rate, slot_clock(), instant=instant, expired=expired)


def paced_mail(
    function: str | None,
    *,
    expired: Callable[[], bool] | None = None,
    pacer: SendingRate | None = None,
) -> Mailer:
    """How a service the job `function` builds sends: the outgoing mail at that job's place in
    the shared rate (`pacer`: that place as a test gives it; `expired`: the job's deadline); the
    outgoing mail unpaced when no job is named (a test, the CLI)."""
    from chalicelib.mail.outgoing import PacedMail

    if pacer is None:
        if function is None:
            return outgoing_mail()
        pacer = sending_rate(function, expired=expired)
    return PacedMail(outgoing_mail(), pacer)


def sending_identities() -> SendingIdentities:
    """Each group's email identity with its newsletter disclaimer, and the email-to-comment
    mailbox's address, read once per service built: the letters carry them down to the outgoing
    mail."""
    from chalicelib.services.notify.delivery import SendingIdentities

    return SendingIdentities(documents(), mailboxes())


def notify_service(
    *,
    reads: BatchReads | None = None,
    clock: Callable[[], datetime] = utc_now,
    inline_limit: int | None = None,
    chunk_size: int | None = None,
    sender: str | None = None,
    pacer: SendingRate | None = None,
) -> NotifyService:
    """Imported when an event is told, not at cold start: most requests publish none. `reads`:
    what the batch being drained read once; the limits are the service's unless a test says;
    `sender`: the job that sends its instant emails, `pacer` its place in the rate
    (`paced_mail`)."""
    from chalicelib.services.notify.delivery import CHUNK_SIZE, INLINE_LIMIT, NotifyService

    return NotifyService(
        notifications=notifications(),
        users=users(),
        groups=groups(),
        posts=posts(),
        comments=comments(),
        alerts=alerts(),
        digests=digests(),
        mail=paced_mail(sender, pacer=pacer),
        identities=sending_identities(),
        fanout=QueueSender(get_settings().notify_queue, "notification chunk(s)"),
        # infra.build names each queue's dead-letter queue so.
        dead_letters=QueueSender(f"{get_settings().notify_queue}-dead", "dead letter(s)"),
        reply_keys=reply_keys(),
        clock=clock,
        inline_limit=INLINE_LIMIT if inline_limit is None else inline_limit,
        chunk_size=CHUNK_SIZE if chunk_size is None else chunk_size,
        reads=reads,
    )


def digest_service(
    clock: Callable[[], datetime] = utc_now,
    sender: str | None = None,
    expired: Callable[[], bool] | None = None,
) -> DigestService:
    """`sender`: the job that sends the digests, `expired` its deadline (`paced_mail`)."""
    return DigestService(
        digests=digests(),
        notifications=notifications(),
        users=users(),
        groups=groups(),
        posts=posts(),
        comments=comments(),
        mail=paced_mail(sender, expired=expired),
        identities=sending_identities(),
        clock=clock,
    )


# --- settings, subscriptions, connectors, the loader ----------------------------------------------


def suppression_service() -> SuppressionService:
    return SuppressionService(suppressions(), utc_now)


def notification_service() -> NotificationService:
    return NotificationService(
        notifications(), users(), groups(), posts(), utc_now, suppression_service()
    )


def user_search_service() -> UserSearchService:
    return UserSearchService(search_index(), users())


def unsubscribe_service() -> UnsubscribeService:
    return UnsubscribeService(notifications(), digests(), groups(), posts(), users(), utc_now)


def local_connector_service() -> LocalConnectorService:
    return LocalConnectorService(connectors(), group_service(), groups(), users(), secrets, utc_now)


def mailbox_settings_service() -> MailboxSettingsService:
    from chalicelib.mail.hosts import HostPolicy

    settings = get_settings()
    return MailboxSettingsService(
        mailboxes(),
        secrets,
        utc_now,
        HostPolicy(settings.mail_allow_private_hosts),
        max_wait=timedelta(minutes=settings.mail_poll_max_minutes),
        inbound_domain=settings.inbound_domain,
    )


def mailbox_directory() -> MailboxDirectory:
    return MailboxDirectory(mailbox_settings_service())


def group_list_service() -> GroupListService:
    return GroupListService(groups())


def console_service() -> ConsoleService:
    return ConsoleService(groups(), users())


def fixture_service() -> FixtureService:
    return FixtureService(fixture_store())


def fixture_exporter() -> FixtureExporter:
    return FixtureExporter(fixture_export_store())
