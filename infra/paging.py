"""Who is woken, and for what (issue 48): two topics instead of one that mailed every alarm on alarm
and on recovery.

- **Page** (`agora-<stage>-page`, PageEmail or else AlarmEmail): data about to be lost, members
  locked out of the API, mail stopped for everyone. Each is one composite alarm over the alarms
  that one cause fires together, so a cause pages once, and its recovery once.
- **Ticket** (`agora-<stage>-alarms`, AlarmEmail): everything else, mailed when it fires only
  (its recovery is in the console; a ticket is closed by a person).

The members of a composite notify nobody themselves (the composite does); they still roll a
deploy back (CodeDeploy reads their state) and show in the console. Merged into the template by
`infra.build` after every alarm is made.
"""

from __future__ import annotations

import re
from typing import Any

from infra.operations import METRICS_NAMESPACE, SERVICE_DIMENSIONS, metric_stat
from infra.operations import _alarm as _base_alarm

PAGE_TOPIC = "PageTopic"
TICKET_TOPIC = "AlarmTopic"

# Composite -> (what it means and what to do first, the alarms one cause fires together).
CAUSES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ApiDownAlarm": (
        "Members cannot use the API: it answers 5xx (API Gateway's count, or its share of a quiet "
        "hour's calls, or the api version's own 500s), fails, or is slower than 3 s at p99. Open "
        "the member alarms to see which, then the API function's log (filter level = ERROR). "
        "Right after a deploy, CodeDeploy rolls a new version back by itself.",
        (
            "Api5xxAlarm",
            "ApiQuiet5xxAlarm",
            "APIHandlerServerErrorsAlarm",
            "APIHandlerErrorsAlarm",
            "ApiLatencyAlarm",
        ),
    ),
    "MailStoppedAlarm": (
        "Mail stopped for everyone: the outbox drain is silent while the outbox is written, the "
        "SES daily quota is nearly used up, or the mail polls' dispatch stopped. Open the member "
        "alarms to see which; each says what to do.",
        ("DrainOutboxSilentAlarm", "SesQuotaAlarm", "DispatchMailPollsHeartbeatAlarm"),
    ),
    "DataLossAlarm": (
        "Data is being lost or about to be: outbox records the drain gave up on, outbox stream "
        "records an hour old (the stream keeps them 24 hours), or dead letters a week old (SQS "
        "deletes them at 14 days). Open the member alarms to see which; each says what to do.",
        (
            "OutboxDeadLettersAlarm",
            "DrainOutboxIteratorAgeAlarm",
            "MailboxDeadLetterAgeAlarm",
            "NotificationDeadLetterAgeAlarm",
            "DigestDeadLetterAgeAlarm",
            "SesFeedbackDeadLetterAgeAlarm",
        ),
    ),
}

# A quiet API's 5xx (issue 48: 5 in 5 minutes never fires for a club's few calls an hour): at
# least this share of an hour's calls, and at least this many calls.
QUIET_5XX_SHARE = 0.5
QUIET_5XX_CALLS = 2
# Mail that could not be handled, as a share of the mail handled in an hour (one tenant's DNS
# is its administrators' business), and the fewest failures that count.
MAIL_FAILED_SHARE = 0.2
MAIL_FAILED_AT_LEAST = 3
MAIL_OUTCOMES = ("posted", "commented", "ignored", "rejected", "failed")


def parameters() -> dict[str, Any]:
    return {
        "PageEmail": {
            "Type": "String",
            "Default": "",
            "Description": "Address paged for data loss, an API members cannot use and mail "
            "stopped for everyone (make deploy PAGE_EMAIL=...); empty: AlarmEmail",
        }
    }


def conditions() -> dict[str, Any]:
    return {"HasPageEmail": {"Fn::Not": [{"Fn::Equals": [{"Ref": "PageEmail"}, ""]}]}}


def _math_alarm(description: str, name: str, metrics: list[dict[str, Any]], **more: Any) -> dict:
    alarm = _base_alarm(description, {"AlarmName": name, "Metrics": metrics}, **more)
    for key in ("Statistic", "Period"):
        alarm["Properties"].pop(key, None)
    return alarm


def share_alarms(stage: str) -> dict[str, Any]:
    """The quiet API's 5xx share, and mail failed as a share of mail handled."""
    prefix = f"agora-{stage}"
    api = {"ApiName": prefix, "Stage": "api"}
    mail = {"Stage": prefix, **SERVICE_DIMENSIONS}
    outcomes = [
        metric_stat(
            outcome, METRICS_NAMESPACE, "MailHandled", {**mail, "Outcome": outcome}, "Sum", 3600
        )
        for outcome in MAIL_OUTCOMES
    ]
    handled = " + ".join(f"FILL({outcome}, 0)" for outcome in MAIL_OUTCOMES)
    return {
        "ApiQuiet5xxAlarm": _math_alarm(
            f"At least {QUIET_5XX_SHARE:.0%} of an hour's API calls (and at least "
            f"{QUIET_5XX_CALLS}) were answered 5xx: a quiet API that is down, which the 5-minute "
            "count never sees. Read the API function's log (filter level = ERROR).",
            f"{prefix}-api-5xx-quiet",
            [
                metric_stat("errors", "AWS/ApiGateway", "5XXError", api, "Sum", 3600),
                metric_stat("calls", "AWS/ApiGateway", "Count", api, "Sum", 3600),
                {
                    "Id": "share",
                    "Expression": f"IF(calls >= {QUIET_5XX_CALLS}, errors / calls, 0)",
                    "Label": "share of the hour's calls answered 5xx",
                    "ReturnData": True,
                },
            ],
            Threshold=QUIET_5XX_SHARE,
        ),
        "MailFailedAlarm": _math_alarm(
            f"{MAIL_FAILED_SHARE:.0%} or more of the mail handled in an hour (and at least "
            f"{MAIL_FAILED_AT_LEAST}) could not be handled (status `failed` in the mail log, "
            "metric MailHandled Outcome=failed): something shared, not one group's mailbox. Read "
            "poll-mailbox's log and the mailboxes' logs at /connector/email-to-post/{groupId}/log "
            "or /connector/email-to-comment/log.",
            f"{prefix}-mail-failed",
            [
                *outcomes,
                {
                    "Id": "share",
                    "Expression": f"IF(FILL(failed, 0) >= {MAIL_FAILED_AT_LEAST}, "
                    f"FILL(failed, 0) / ({handled}), 0)",
                    "Label": "share of the mail handled that failed",
                    "ReturnData": True,
                },
            ],
            Threshold=MAIL_FAILED_SHARE,
        ),
    }


def topics(stage: str) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    return {
        PAGE_TOPIC: {
            "Type": "AWS::SNS::Topic",
            "Properties": {
                "TopicName": f"{prefix}-page",
                "DisplayName": f"Agora {stage} PAGE",
                "Subscription": [
                    {
                        "Protocol": "email",
                        "Endpoint": {
                            "Fn::If": ["HasPageEmail", {"Ref": "PageEmail"}, {"Ref": "AlarmEmail"}]
                        },
                    }
                ],
            },
        }
    }


def _kebab(name: str) -> str:
    """ApiDown -> api-down."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def route(stage: str, resources: dict[str, Any]) -> dict[str, Any]:
    """Every alarm to its topic: the members of a cause to none (their composite pages), the
    rest to the ticket topic on alarm only. Answers the topics and the composites to merge."""
    prefix = f"agora-{stage}"
    added: dict[str, Any] = topics(stage)
    members = {member for _, alarms in CAUSES.values() for member in alarms}
    for logical, resource in resources.items():
        if resource.get("Type") != "AWS::CloudWatch::Alarm":
            continue
        properties = resource["Properties"]
        properties.pop("OKActions", None)
        if logical in members:
            properties.pop("AlarmActions", None)
        else:
            properties["AlarmActions"] = [{"Ref": TICKET_TOPIC}]
    for logical, (description, alarms) in CAUSES.items():
        missing = [alarm for alarm in alarms if alarm not in resources]
        if missing:
            raise ValueError(f"{logical} names alarms the template lacks: {missing}")
        names = [resources[alarm]["Properties"]["AlarmName"] for alarm in alarms]
        added[logical] = {
            "Type": "AWS::CloudWatch::CompositeAlarm",
            "DependsOn": list(alarms),
            "Properties": {
                "AlarmName": f"{prefix}-{_kebab(logical.removesuffix('Alarm'))}",
                "AlarmDescription": description,
                "AlarmRule": " OR ".join(f'ALARM("{name}")' for name in names),
                "ActionsEnabled": True,
                "AlarmActions": [{"Ref": PAGE_TOPIC}],
                "OKActions": [{"Ref": PAGE_TOPIC}],
            },
        }
    return added
