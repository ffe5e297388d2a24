"""What an operator needs from the stack: parameters, the mailed SNS topic that tickets every
alarm (the alarms are declared in infra/alarms.py), log retention and each function's log grant,
concurrency caps. Merged into `chalice package`'s template by `infra.build`.

Function logical ids are the ones `chalice package` gives app.py's functions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from chalicelib.mail.outgoing import SENDERS
from chalicelib.settings import SERVICE
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

# The alias every deploy publishes (infra/rollout.py): triggers and schedules invoke it.
ALIAS = "live"


def function_timeouts() -> dict[str, int]:
    """Each function's timeout in seconds, from .chalice/config.json (what Lambda enforces)."""
    from infra.build import ROOT

    config = json.loads((ROOT / ".chalice" / "config.json").read_text())
    default = int(config.get("lambda_timeout", 60))
    per_function = config.get("lambda_functions", {})
    return {
        logical: int(per_function.get(name, {}).get("lambda_timeout", default))
        for logical, name in FUNCTIONS.items()
    }


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


def operations_resources(
    stage: str,
    names: dict[str, str],
    sender_domain: Callable[[], Any],
    sender_address: Callable[[], Any],
) -> dict[str, Any]:
    """Topic, SES identity, and the fragments merged into Chalice's functions and API (the alarms
    are infra.alarms')."""
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
