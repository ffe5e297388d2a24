"""What an operator needs from the stack: parameters, alarms to a mailed SNS topic, log retention
and each function's log grant, concurrency caps. Merged into `chalice package`'s template by
`infra.build`.

Each alarm's description says what it means and what to do; the README's "Deploy to AWS" section
lists the same. Function logical ids are the ones `chalice package` gives app.py's functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalicelib.mail.outgoing import SENDERS
from chalicelib.settings import SERVICE
from infra.alarms import (
    METRICS_NAMESPACE,
    SERVICE_DIMENSIONS,
    agora_metric,
    alarm,
    alarm_metric,
    math_alarm,
    metric_stat,
    queued_messages,
)
from infra.fleet import FLEETS

# app.py's functions as `chalice package` names them: logical id -> Chalice name.
FUNCTIONS = {
    "APIHandler": "api",
    "DispatchMailPolls": "dispatch-mail-polls",
    "PollMailbox": "poll-mailbox",
    "PurgeComments": "purge-comments",
    "SendDigests": "send-digests",
    "DeliverNotifications": "deliver-notifications",
    "DeliverDigests": "deliver-digests",
    "SesFeedback": "ses-feedback",
    "DrainOutbox": "drain-outbox",
    "Migrate": "migrate",
    "MailVerdict": "mail-verdict",
    "ReceiveMail": "receive-mail",
}
# Chalice names the API handler's role and log group `ApiHandler…`, the function `APIHandler`.
ROLES = {logical: ("ApiHandler" if logical == "APIHandler" else logical) for logical in FUNCTIONS}
ROLES["PreTraffic"] = "PreTraffic"  # CodeDeploy's hook (infra.rollout): no alarms, no alias


def role_id(function: str) -> str:
    """The logical id of the role `chalice package` makes for a function (its Chalice name;
    `api_handler` is the API)."""
    name = "api" if function == "api_handler" else function
    named = {**FUNCTIONS, "PreTraffic": "pre-traffic"}
    [logical] = [logical for logical, chalice_name in named.items() if chalice_name == name]
    return f"{ROLES[logical]}Role"


# The most concurrent executions an SQS trigger may start (a maximum on the event source, not a
# reservation: reserved concurrency cannot be set on a new account, whose limit is 10). The API
# keeps the rest of the account's concurrency however much mail or notification work queues up.
# poll-mailbox's comes from the mailbox fleet the stage is declared for (infra/fleet.py).
MAX_CONCURRENCY = {
    "dev": {"PollMailbox": FLEETS["dev"].concurrency},
    "prod": {"PollMailbox": FLEETS["prod"].concurrency},
}
# The SQS-triggered functions that send mail run as many workers as chalicelib/mail/outgoing.py
# says (they share one sending clock: the rate holds whatever their number).
for _caps in MAX_CONCURRENCY.values():
    _caps.update({s.logical_id: s.workers for s in SENDERS.values() if s.workers is not None})

# The SQS-triggered functions answer which messages failed (chalicelib.jobs.base.each_message),
# so that one bad message is delivered again alone rather than with its whole batch.
SQS_FUNCTIONS = ("PollMailbox", "DeliverNotifications", "DeliverDigests", "SesFeedback")

# The scheduled functions are invoked asynchronously by EventBridge: after its retries, a failed
# invocation goes to the on-failure queue (alarmed). Retries per schedule, and why:
SCHEDULED_RETRIES = {
    # Every 5 minutes: the next run does the same work; a retry would only overlap it.
    "DispatchMailPolls": 0,
    # Monthly: a retry is the only chance this month, and the purge is idempotent.
    "PurgeComments": 2,
    # Daily: what was sent is not sent again (one claim per user and day), so a retry sends
    # only the digests that failed.
    "SendDigests": 2,
}

# The share of enabled mailboxes whose polls fail at their own server that pages the operator
# (15 minutes long), and the fewest failing mailboxes that count as a share: one broken mailbox
# is its group's business (its lastError, its administrators' email), never the operator's.
MAILBOXES_FAILING_PERCENT = 5
MAILBOXES_FAILING_AT_LEAST = 2

# 5xx answers of one API version in a minute that roll its deploy back (one may be an AWS
# failure that outlasted the retries; two in a minute of a canary's 10% are the version's).
API_VERSION_5XX = 2

# The alias every deploy publishes (infra/rollout.py): triggers and schedules invoke it.
ALIAS = "live"


def parameters(stage: str) -> dict[str, Any]:
    return {
        "BaseUrl": {
            "Type": "String",
            "Description": "Public address of the community web site (AGORA_BASE_URL): "
            "permalinks and the notification sender noreply@<its host>",
            "AllowedPattern": r"^https?://[^/\s]+(/\S*)?$",
            "ConstraintDescription": "an http(s) URL with a host, such as https://community.example.org",
        },
        "AlarmEmail": {
            "Type": "String",
            "Description": "Address that receives the alarms (confirm the subscription mail)",
            "AllowedPattern": r"^[^@\s]+@[^@\s]+$",
            "ConstraintDescription": "an email address",
        },
        "MailSenderDomain": {
            "Type": "String",
            "Default": "",
            "Description": "Domain of the one sending identity, noreply@<domain> "
            "(AGORA_MAIL_SENDER), verified in SES; empty: the host of BaseUrl",
        },
    }


def conditions() -> dict[str, Any]:
    return {"HasMailSenderDomain": {"Fn::Not": [{"Fn::Equals": [{"Ref": "MailSenderDomain"}, ""]}]}}


# What waits on a queue that should stay empty, and what to do about it.
WAITING_MESSAGES = {
    "outbox_dead_letters": "the stream position of outbox records that drain-outbox failed to "
    "deliver after all retries: their notifications or domain events were not sent. Read "
    "drain-outbox's log for the error and fix it; then run the message's records again from the "
    "stream (they stay 24 hours) or from the outbox table.",
    "scheduled_failures": "scheduled invocations (dispatch-mail-polls, purge-comments, "
    "send-digests) that failed after their retries. Each message names the function and the "
    "error; read that function's log, fix the cause, then run the job again from the CLI "
    "(poll-mail, purge-comments, send-digests) and purge the queue.",
}


def version_dimensions(logical: str) -> dict[str, Any]:
    """Lambda's metric of the function's alias as run by its current version (FunctionName,
    Resource `<function>:live`, ExecutedVersion): a new version's own, not the one it replaces."""
    return {
        "FunctionName": {"Ref": logical},
        "Resource": {"Fn::Sub": "${" + logical + "}:" + ALIAS},
        "ExecutedVersion": {"Fn::Select": [7, {"Fn::Split": [":", {"Ref": f"{logical}.Version"}]}]},
    }


def alarms(stage: str, names: dict[str, str]) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    resources: dict[str, Any] = {}
    for logical, queue_key in (
        ("Mailbox", "dead_letters"),
        ("Notification", "notify_dead_letters"),
    ):
        resources[f"{logical}DeadLettersAlarm"] = alarm(
            f"{names[queue_key]} holds messages that failed 5 times "
            f"({'a mailbox poll' if logical == 'Mailbox' else 'a notification chunk'}). "
            "Read the function's log for the error, fix it, then move the messages back with "
            "`aws sqs start-message-move-task`.",
            queued_messages(f"{prefix}-{logical.lower()}-dead-letters", names[queue_key]),
        )
    for logical, name in FUNCTIONS.items():
        # The alias's current version only, in minutes: the same alarm rolls a deploy back
        # (infra.rollout) and, once the alias has moved, watches all the function's work (every
        # trigger calls the alias). Throttles are one account-wide alarm (infra.watch).
        resources[f"{logical}ErrorsAlarm"] = alarm(
            f"The {name} function's current version failed (an exception or a timeout). Its log "
            "group /aws/lambda/<function> has the stack trace. During a deploy this rolls the "
            "new version back.",
            alarm_metric(
                f"{prefix}-{name}-errors",
                "AWS/Lambda",
                "Errors",
                version_dimensions(logical),
            ),
            Period=60,
            EvaluationPeriods=5,
            DatapointsToAlarm=1,
        )
    # The routing layer answers every exception with a 500, so Lambda's Errors stays 0 when the
    # API fails: the answers themselves, counted by the version that gave them, roll a deploy
    # back (infra.rollout) and then watch the live version.
    resources["APIHandlerServerErrorsAlarm"] = alarm(
        f"The api function's current version answered {API_VERSION_5XX} or more calls in a "
        "minute with a 5xx status (metric ServerErrors of its version): the log group "
        "/aws/lambda/<function> has each one's stack trace (filter level = ERROR). During a "
        "deploy this rolls the new version back.",
        agora_metric(
            f"{prefix}-api-version-5xx",
            "ServerErrors",
            {"Stage": prefix, "Version": version_dimensions("APIHandler")["ExecutedVersion"]},
        ),
        Period=60,
        EvaluationPeriods=5,
        DatapointsToAlarm=1,
        Threshold=API_VERSION_5XX,
    )
    resources["Api5xxAlarm"] = alarm(
        "The API answered 5xx (500: an unexpected error, logged with its stack trace; 503: AWS "
        "failures that outlasted the retries; 502/504: the function failed or timed out).",
        alarm_metric(
            f"{prefix}-api-5xx", "AWS/ApiGateway", "5XXError", {"ApiName": prefix, "Stage": "api"}
        ),
        Threshold=5,
    )
    for logical, queue_key in (
        ("OutboxDeadLetters", "outbox_dead_letters"),
        ("ScheduledFailures", "scheduled_failures"),
    ):
        resources[f"{logical}Alarm"] = alarm(
            f"{names[queue_key]} holds {WAITING_MESSAGES[queue_key]}",
            queued_messages(f"{prefix}-{queue_key.replace('_', '-')}", names[queue_key]),
        )
    resources["NotificationFailedAlarm"] = alarm(
        "Notifications could not be sent or stored (SES or DynamoDB refused): they are retried "
        "by the outbox drain, and none is sent twice. If it lasts, read drain-outbox's and "
        "deliver-notifications' logs (`notification failed`) and check SES's sending status.",
        agora_metric(f"{prefix}-notification-failed", "NotificationFailed", {"Stage": prefix}),
    )
    resources["EventPublishFailedAlarm"] = alarm(
        "Domain events were refused by EventBridge after three tries: the outbox drain delivers "
        "them again. If it lasts, check the event bus and drain-outbox's log (`domain events not "
        "delivered`); consumers drop repeats by detail.domainEventId.",
        agora_metric(f"{prefix}-event-publish-failed", "EventPublishFailed", {"Stage": prefix}),
    )
    resources["MailboxesFailingAlarm"] = mailboxes_failing_alarm(prefix)
    resources["DigestsFailedAlarm"] = alarm(
        "A daily digest could not be sent to a user (the others were). deliver-digests' log "
        "(send-digests' when run from the CLI) has one 'digest failed' line per user with the error (often SES: a sandbox account, an "
        "unverified sender, the sending quota). The user's items wait for the next run.",
        agora_metric(f"{prefix}-digests-failed", "DigestsFailed", {"Stage": prefix}),
        Period=3600,
    )
    resources["DigestRunStoppedEarlyAlarm"] = alarm(
        "The daily digest run reached its time limit before every user was queued; the rest "
        "are sent by the next run, a day late. If it repeats, raise send-digests' timeout or "
        "memory in .chalice/config.json, or run `python -m chalicelib.cli send-digests`.",
        agora_metric(
            f"{prefix}-digest-run-stopped-early", "DigestRunsStoppedEarly", {"Stage": prefix}
        ),
        Period=3600,
    )
    # mail-failed, a share of the mail handled: infra.paging.
    return resources


def mailboxes_failing_alarm(prefix: str) -> dict[str, Any]:
    """The share of enabled mailboxes failing, as dispatch-mail-polls counts them (the least
    failing count of 15 minutes over the enabled count of the same 15 minutes)."""

    dimensions = {"Stage": prefix, **SERVICE_DIMENSIONS}
    share = (
        f"IF(failing >= {MAILBOXES_FAILING_AT_LEAST} AND enabled > 0, 100 * failing / enabled, 0)"
    )
    return math_alarm(
        f"At least {MAILBOXES_FAILING_PERCENT}% of the enabled mailboxes (and at least "
        f"{MAILBOXES_FAILING_AT_LEAST}) failed at their own mail servers for 15 minutes: not one "
        "group's typo (each group's administrators are told of theirs) but something shared. "
        "Read poll-mailbox's log (message = 'mailbox poll failed') for the reasons: many "
        "`timeout` or `connection` from one provider is that provider or our addresses being "
        "blocked by it; many `tls` is a certificate change; many `refused` or `dns` is name "
        "resolution in the function's network.",
        f"{prefix}-mailboxes-failing",
        [
            # Powertools adds the service's dimension to every metric (agora_metric).
            metric_stat(
                "failing", METRICS_NAMESPACE, "MailboxesFailing", dimensions, "Minimum", 900
            ),
            metric_stat(
                "enabled", METRICS_NAMESPACE, "MailboxesEnabled", dimensions, "Maximum", 900
            ),
        ],
        {"Id": "share", "Expression": share, "Label": "percent of enabled mailboxes failing"},
        Threshold=MAILBOXES_FAILING_PERCENT,
    )


def operations_resources(
    stage: str,
    names: dict[str, str],
    sender_domain: Callable[[], Any],
    sender_address: Callable[[], Any],
) -> dict[str, Any]:
    """Topic, alarms, SES identity, and the fragments merged into Chalice's functions and API."""
    prefix = f"agora-{stage}"
    resources: dict[str, Any] = {
        "AlarmTopic": {
            "Type": "AWS::SNS::Topic",
            "Properties": {
                "TopicName": f"{prefix}-alarms",
                "DisplayName": f"Agora {stage} alarms",
                "Subscription": [{"Protocol": "email", "Endpoint": {"Ref": "AlarmEmail"}}],
            },
        },
        # The one identity every mail is sent from (AGORA_MAIL_SENDER, noreply@ this domain).
        "MailSenderIdentity": {
            "Type": "AWS::SES::EmailIdentity",
            "Properties": {"EmailIdentity": sender_domain()},
        },
        "ScheduledFailuresQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": names["scheduled_failures"],
                "MessageRetentionPeriod": 1209600,
            },
        },
        **alarms(stage, names),
    }
    for logical in FUNCTIONS:
        variables = {
            "AGORA_BASE_URL": {"Ref": "BaseUrl"},
            "AGORA_MAIL_SENDER": sender_address(),
            "POWERTOOLS_SERVICE_NAME": SERVICE,
            # Tables restored under another name (infra/restore.py, make restore).
            "AGORA_TABLE_NAMES": {"Ref": "TableNames"},
        }
        function: dict[str, Any] = {"Properties": {"Environment": {"Variables": variables}}}
        if logical in SQS_FUNCTIONS:
            source: dict[str, Any] = {"FunctionResponseTypes": ["ReportBatchItemFailures"]}
            if logical in MAX_CONCURRENCY[stage]:
                source["ScalingConfig"] = {"MaximumConcurrency": MAX_CONCURRENCY[stage][logical]}
            function["Properties"]["Events"] = {f"{logical}SqsEventSource": {"Properties": source}}
        resources[logical] = function
        if logical in SCHEDULED_RETRIES:
            # SAM applies it to the alias (AutoPublishAlias), which the schedule invokes: the
            # retries and the on-failure queue are the alias's.
            function["Properties"]["EventInvokeConfig"] = {
                "MaximumRetryAttempts": SCHEDULED_RETRIES[logical],
                "DestinationConfig": {
                    "OnFailure": {
                        "Type": "SQS",
                        "Destination": {"Fn::GetAtt": ["ScheduledFailuresQueue", "Arn"]},
                    }
                },
            }
    resources.update(log_policies())
    # Chalice names the API handler's log group after `ApiHandler`, a resource that does not
    # exist (cfn-lint E3030): point it at the function.
    resources["ApiHandlerLogGroup"] = {
        "Properties": {"LogGroupName": {"Fn::Sub": "/aws/lambda/${APIHandler}"}}
    }
    return resources


def chalice_logical_id(name: str) -> str:
    """The logical id `chalice package` gives a function's role and log group stem:
    `dispatch-mail-polls` -> `DispatchMailPolls`; the API's is `ApiHandler`."""
    if name == "api_handler":
        return "ApiHandler"
    return "".join(part[:1].upper() + part[1:] for part in name.replace("_", "-").split("-"))


def log_policies() -> dict[str, Any]:
    """Each function writes its log lines, and with them its metrics (EMF), to its own log group
    only, named from the stack's own function (Chalice makes the group, with its retention): a
    stack under any name can log, and no function writes into another's log. Every function
    with a declared policy (infra.privileges) gets its grant, so a new function logs too."""
    from infra.privileges import FUNCTIONS as DECLARED

    stems = sorted(chalice_logical_id(name) for name in DECLARED)
    return {
        f"{stem}LogsPolicy": {
            "Type": "AWS::IAM::Policy",
            "Properties": {
                "PolicyName": "own-log-group",
                "Roles": [{"Ref": f"{stem}Role"}],
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "Logs",
                            "Effect": "Allow",
                            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                            "Resource": {"Fn::GetAtt": [f"{stem}LogGroup", "Arn"]},
                        }
                    ],
                },
            },
        }
        for stem in stems
    }


def outputs() -> dict[str, Any]:
    return {
        "AlarmTopicArn": {"Value": {"Ref": "AlarmTopic"}},
        "MailSenderDkimRecords": {
            "Description": "CNAME records that verify the sending domain in SES (name=value)",
            "Value": {
                "Fn::Join": [
                    " ",
                    [
                        {
                            "Fn::Join": [
                                "=",
                                [
                                    {"Fn::GetAtt": ["MailSenderIdentity", f"DkimDNSTokenName{n}"]},
                                    {
                                        "Fn::GetAtt": [
                                            "MailSenderIdentity",
                                            f"DkimDNSTokenValue{n}",
                                        ]
                                    },
                                ],
                            ]
                        }
                        for n in (1, 2, 3)
                    ],
                ]
            },
        },
    }
