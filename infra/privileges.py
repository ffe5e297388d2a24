"""What each Lambda function may do: one declared entry per function, from which `infra.build`
writes that function's IAM policy (`.chalice/policy-<stage>-<function>.json`), its line in
`.chalice/config.json` and, for the functions that send mail, the grant on the stack's one SES
identity. `tests/infra/test_privileges.py` runs each function's code under moto, records every AWS call
it makes, and fails when a call is not granted, and fails when a grant is used by no function.

Adding a function (or a table, a queue) is one entry here: a function that is not listed gets no
policy file, and the test names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# DynamoDB actions by how a function uses a table. DescribeTable: PynamoDB's `exists()` and
# `create_tables` only, which no deployed function calls.
READ = ("dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query")
WRITE = (
    *READ,
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
)
# A queue the function sends to, and the queue that triggers it (Lambda's event source mapping
# receives with the function's role).
SEND = ("sqs:GetQueueUrl", "sqs:SendMessage")
TRIGGER = (
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:ReceiveMessage",
)


@dataclass(frozen=True)
class Needs:
    """What one function's code calls. Tables and queues by stem: `posts` is `agora-<stage>-posts`;
    queues by their key in `infra.build.stage_names` (`queue`, `notify_queue`, `feedback_queue`,
    `scheduled_failures`: a scheduled function's on-failure destination, which Lambda sends to with
    the function's role; `outbox_dead_letters`: drain-outbox's; `notify_dead_letters`: where a
    notification that can never be built goes)."""

    reads: tuple[str, ...] = ()
    # Tables read whole, by pages (migrate only: a Scan is never on a request path).
    scans: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    sends_to: tuple[str, ...] = ()
    triggered_by: str | None = None
    kms: tuple[str, ...] = ()  # "kms:Decrypt", "kms:Encrypt"
    token_secret: bool = False  # tokens, feed keys, unsubscribe links
    canary_secret: bool = False  # the deploy canary's password (services/canary.py)
    sends_mail: bool = False  # ses:SendRawEmail, from AGORA_MAIL_SENDER only
    domain_events: bool = False  # events:PutEvents on the stage's bus
    drains_outbox: bool = False  # reads the outbox table's stream (drain-outbox's trigger)
    reads_inbound_mail: bool = False  # s3:GetObject of what SES receiving stored
    deploy_hook: bool = False  # answers CodeDeploy's lifecycle hook (the PreTraffic check)
    notes: tuple[str, ...] = field(default=(), compare=False)


# Notification mail (services/notify/delivery.py): who follows what, who is suppressed, the group's name,
# address and disclaimer, the digest queue; an unsubscribe link in every mail.
# mailboxes: an instant email's Reply-To is the email-to-comment mailbox's address when it is set
# (replies by email), and the drain tells administrators that a mailbox keeps failing.
_NOTIFY_READS = (
    "comments",
    "documents",
    "email-suppressions",
    "groups",
    "mailboxes",
    "posts",
    "users",
)
# counters: every mail takes its moment from the sending clock there (chalicelib/mail/outgoing.py).
_NOTIFY_WRITES = ("alerts", "counters", "digests", "notifications")

# Chalice's function names: `api_handler` is the API; the others are app.py's `name=`s.
FUNCTIONS: dict[str, Needs] = {
    "api_handler": Needs(
        # Every table but the mailbox leases, which only a poll takes.
        writes=(
            "alerts",
            "audit",
            "comments",
            "connector-groups",
            "connectors",
            "counters",
            "digests",
            "documents",
            "email-suppressions",
            "event-calendar",
            "events",
            "feed-keys",
            "groups",
            "login-attempts",
            "mail",
            "mailboxes",
            "notifications",
            "outbox",
            "players",
            "player-names",
            "posts",
            "profile",
            "user-search",
            "users",
        ),
        kms=("kms:Decrypt", "kms:Encrypt"),
        token_secret=True,
        # Its writes record their domain events in the outbox; drain-outbox publishes them.
    ),
    "dispatch-mail-polls": Needs(reads=("mailboxes",), sends_to=("queue", "scheduled_failures")),
    # Mail in stores posts, comments and the mail log; what follows (notifications, domain events)
    # is recorded in the outbox with the write, and sent by drain-outbox.
    "poll-mailbox": Needs(
        reads=(*_NOTIFY_READS, "connectors", "connector-groups"),
        writes=(
            "audit",
            "comments",
            "counters",
            "mail",
            "mailbox-leases",
            "mailboxes",
            "outbox",
            "posts",
        ),
        triggered_by="queue",
        kms=("kms:Decrypt",),
        # A reply to the comments mailbox carries a reply key, signed with the token secret
        # (mail/threads.py): the poll checks it (issue 57: without it every reply
        # failed three times and was quarantined).
        token_secret=True,
    ),
    # A purged comment was counted out of its post when it was deleted: only comments change.
    # counters: the time of its last completed run, which a daily check reads (its heartbeat).
    # audit: each purge is recorded in the audit log with it.
    "purge-comments": Needs(
        writes=("audit", "comments", "counters", "outbox"), sends_to=("scheduled_failures",)
    ),
    # The daily schedule only queues the day's recipients (the pending-items index) in batches;
    # deliver-digests sends them. It also checks when the monthly purge last ran (counters).
    "send-digests": Needs(
        reads=("digests",), writes=("counters",), sends_to=("digest_queue", "scheduled_failures")
    ),
    "deliver-digests": Needs(
        reads=_NOTIFY_READS,
        writes=_NOTIFY_WRITES,
        # Users a batch's deadline leaves go back on the queue as a new batch.
        sends_to=("digest_queue",),
        triggered_by="digest_queue",
        token_secret=True,
        sends_mail=True,
    ),
    "deliver-notifications": Needs(
        reads=_NOTIFY_READS,
        writes=_NOTIFY_WRITES,
        triggered_by="notify_queue",
        # The rest of a chunk its deadline leaves goes back on the queue; a chunk whose email
        # can never be built goes to its dead-letter queue (services/notify/delivery.py).
        sends_to=("notify_queue", "notify_dead_letters"),
        token_secret=True,
        sends_mail=True,
    ),
    # The outbox's subscribers: notifications (alerts, digest items, instant mail, fan-out past
    # 25 recipients), a rejected mail's notice to its sender (its day's claim in `mail`, and its
    # entry's noticeSent written back when the notice cannot go) and the
    # event bus; a batch it gives up on goes to its dead-letter queue.
    "drain-outbox": Needs(
        reads=_NOTIFY_READS,
        writes=(*_NOTIFY_WRITES, "mail"),
        sends_to=("notify_queue", "notify_dead_letters", "outbox_dead_letters"),
        token_secret=True,
        sends_mail=True,
        domain_events=True,
        drains_outbox=True,
    ),
    # Brings stored items to the current shape (store/migrations.py): reads the migrated tables
    # by pages and keeps its record in counters.
    "migrate": Needs(
        scans=("groups", "mail", "mailboxes", "posts", "users"),
        reads=("comments",),
        # A migration that changed items is recorded in the audit log when it finishes.
        # users: the deploy canary's account, made once with the canary secret's password.
        writes=(
            "audit",
            "counters",
            "groups",
            "mail",
            "mailboxes",
            "posts",
            "user-search",
            "users",
        ),
        canary_secret=True,
    ),
    # Mail in by push (infra/inbound.py): SES asks the verdict (are the recipients Agora's?),
    # then receive-mail reads the stored mail and hands it to mail in as a poll would, under a
    # lease per mail; a failed invocation goes to its dead-letter queue with its role.
    "mail-verdict": Needs(reads=("groups", "mailboxes")),
    "receive-mail": Needs(
        # email-suppressions: a rejected mail's sender is told why unless suppressed.
        reads=("email-suppressions", "groups", "mailboxes", "users"),
        writes=("comments", "counters", "mail", "mailbox-leases", "outbox", "posts"),
        sends_to=("inbound_dead_letters",),
        token_secret=True,
        reads_inbound_mail=True,
    ),
    # Bounces and complaints: it suppresses addresses, and nothing else (never sends mail).
    "ses-feedback": Needs(writes=("email-suppressions",), triggered_by="feedback_queue"),
    # CodeDeploy's PreTraffic hook: it calls the API's new version (granted in the template on
    # that function's versions: infra.rollout) and tells CodeDeploy; it touches no data itself.
    # It signs in as the deploy canary: the canary secret is the one thing it reads.
    "pre-traffic": Needs(deploy_hook=True, canary_secret=True),
}


def policy_file(stage: str, function: str) -> str:
    """The policy's file name under `.chalice/`."""
    stem = "api" if function == "api_handler" else function
    return f"policy-{stage}-{stem}.json"


def assumed_by(service: str) -> dict[str, object]:
    """A role's trust policy: the AWS `service` (apigateway.amazonaws.com, …) may assume it."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
        ],
    }
