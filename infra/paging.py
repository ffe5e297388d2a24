"""Who is woken, and for what (issues 48, 57): two topics instead of one that mailed every alarm
on alarm and on recovery.

- **Page** (`agora-<stage>-page`, PageEmail or else AlarmEmail): one composite alarm per cause,
  over the alarms that cause fires together, so a cause pages once, and its recovery once: the
  API down for members, mail-in stopped for everyone, notifications stopped for everyone, digests
  stopped for everyone, SES about to stop the account's sending (its quota used up, a bounce or
  complaint rate near SES's pause), outbox records lost, dead letters about to expire. A page is
  a rate or a silence, never a single error: one 500, one failed invocation and 80% of the SES
  quota are tickets.
- **Ticket** (`agora-<stage>-alarms`, AlarmEmail): every alarm, a composite's members too, mailed
  when it fires only (its recovery is in the console; a ticket is closed by a person). A member
  that stays red (a dead letter for 14 days) keeps its composite red, so a second cause under the
  same page pages nobody: its own ticket still says it.

The members still roll a deploy back (CodeDeploy reads their state) and show in the console.
Merged into the template by `infra.build` after every alarm is made.
"""

from __future__ import annotations

import re
from typing import Any

from infra.alarms import (
    METRICS_NAMESPACE,
    SERVICE_DIMENSIONS,
    alarm,
    alarm_metric,
    expression_alarm,
    metric_stat,
)

PAGE_TOPIC = "PageTopic"
TICKET_TOPIC = "AlarmTopic"

# Composite -> (what it means and what to do first, the alarms one cause fires together).
CAUSES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ApiDownAlarm": (
        "Members cannot use the API: a share of its calls answered 5xx (5% of five minutes' "
        "calls twice running, or half of a quiet hour's), its function failed 5% of its "
        "invocations, or it is slower than 3 s at p99. Open the member alarms to see which, then "
        "the API function's log (filter level = ERROR). Right after a deploy, CodeDeploy rolls a "
        "new version back by itself.",
        ("ApiErrorRateAlarm", "ApiQuiet5xxAlarm", "ApiFunctionErrorRateAlarm", "ApiLatencyAlarm"),
    ),
    "MailInStoppedAlarm": (
        "Mail in stopped for everyone: the mail polls' dispatch has not run for 15 minutes, or "
        "90% of the enabled mailboxes fail at their servers. Open the member alarms; each says "
        "what to do.",
        ("DispatchMailPollsHeartbeatAlarm", "MailboxesAllFailingAlarm"),
    ),
    "NotificationsStoppedAlarm": (
        "Notifications stopped for everyone: the outbox drain is silent while the outbox is "
        "written, or for 15 minutes every notification failed and none was sent. Open the "
        "member alarms; each says what to do.",
        ("DrainOutboxSilentAlarm", "NotificationsAllFailingAlarm"),
    ),
    "DigestsStoppedAlarm": (
        "Daily digests stopped for everyone: send-digests has not completed a run for 26 hours, "
        "or queued digests waited 4 hours (deliver-digests is not sending). Open the member "
        "alarms; each says what to do.",
        ("SendDigestsHeartbeatAlarm", "DigestQueueAgeAlarm"),
    ),
    "SesSendingAtRiskAlarm": (
        "SES is about to stop, or has stopped, every mail of the account: 95% of the 24-hour "
        "quota is sent, or the bounce rate neared the 10% or the complaint rate the 0.5% at "
        "which SES pauses sending. Open the member alarms; each says what to do.",
        ("SesQuotaReachedAlarm", "SesBouncePauseNearAlarm", "SesComplaintPauseNearAlarm"),
    ),
    "OutboxLossAlarm": (
        "Notifications and domain events are being lost: outbox records the drain gave up on, "
        "or outbox stream records an hour old (the stream keeps them 24 hours). Open the member "
        "alarms; each says what to do.",
        ("OutboxDeadLettersAlarm", "DrainOutboxIteratorAgeAlarm"),
    ),
    "DeadLettersExpiringAlarm": (
        "Dead letters are a week old and SQS deletes them at 14 days: mailbox polls, "
        "notifications, digests or SES feedback that failed five times. Open the member alarms; "
        "each names its queue and what to do.",
        (
            "MailboxDeadLetterAgeAlarm",
            "NotificationDeadLetterAgeAlarm",
            "DigestDeadLetterAgeAlarm",
            "SesFeedbackDeadLetterAgeAlarm",
        ),
    ),
}

# Alarms that are a cause alone, paged without a composite: a region outage (infra.disaster; made
# only in us-east-1, where Route 53's metrics are, so no composite can name it everywhere).
DIRECT_PAGES = ("RegionOutageAlarm",)

# The API's error rate: a share of five minutes' calls answered 5xx, twice running, once there
# are calls enough to speak of a share; the function's own failures likewise.
API_ERROR_SHARE = 0.05
API_ERROR_CALLS = 20
# Mail in stopped for everyone: this percent of the enabled mailboxes failing (at least 2).
MAILBOXES_ALL_FAILING_PERCENT = 90
# Notifications stopped for everyone: this many failed and none sent, three 5 minutes running.
NOTIFICATIONS_ALL_FAILING = 5
# SES: the quota nearly used up, and the rates near the pause (SES pauses sending at a 10%
# bounce rate and a 0.5% complaint rate; the tickets warn at 4% and 0.1%).
SES_QUOTA_REACHED = 0.95
SES_BOUNCE_PAUSE_NEAR = 0.08
SES_COMPLAINT_PAUSE_NEAR = 0.004
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


def share_alarms(stage: str) -> dict[str, Any]:
    """The quiet API's 5xx share, mail failed as a share of mail handled, and the rates and
    silences that page (rate_alarms)."""
    return {**_shares(stage), **rate_alarms(stage), **ses_alarms(stage)}


def _share(metrics: list[dict[str, Any]], expression: str, label: str) -> list[dict[str, Any]]:
    return [*metrics, {"Id": "share", "Expression": expression, "Label": label, "ReturnData": True}]


def _error_rate(
    description: str, name: str, counts: tuple[str, str, str, dict[str, Any]], label: str
) -> dict[str, Any]:
    """The share of calls that failed, `counts` = (namespace, errors, calls, dimensions), over
    API_ERROR_SHARE of at least API_ERROR_CALLS in five minutes, two five minutes running."""
    namespace, errors, calls, dimensions = counts
    return expression_alarm(
        description,
        name,
        _share(
            [
                metric_stat("errors", namespace, errors, dimensions, "Sum", 300),
                metric_stat("calls", namespace, calls, dimensions, "Sum", 300),
            ],
            f"IF(calls >= {API_ERROR_CALLS}, errors / calls, 0)",
            label,
        ),
        Threshold=API_ERROR_SHARE,
        EvaluationPeriods=2,
        DatapointsToAlarm=2,
    )


def rate_alarms(stage: str) -> dict[str, Any]:
    """The API's error rates, and mail in or notifications stopped for everyone."""
    prefix = f"agora-{stage}"
    api = {"ApiName": prefix, "Stage": "api"}
    ours = {"Stage": prefix, **SERVICE_DIMENSIONS}
    function = {"FunctionName": {"Ref": "APIHandler"}}
    return {
        "ApiErrorRateAlarm": _error_rate(
            f"{API_ERROR_SHARE:.0%} or more of the API's calls (at least {API_ERROR_CALLS} in "
            "five minutes) were answered 5xx, two five minutes running: 500 is an unexpected "
            "error (its stack trace in the API's log), 503 an AWS service that failed past the "
            "retries, 502/504 the function crashed or timed out.",
            f"{prefix}-api-error-rate",
            ("AWS/ApiGateway", "5XXError", "Count", api),
            "share of the calls answered 5xx",
        ),
        "ApiFunctionErrorRateAlarm": _error_rate(
            f"The API function failed (crashed or timed out) in {API_ERROR_SHARE:.0%} or more "
            f"of its invocations (at least {API_ERROR_CALLS} in five minutes), two five minutes "
            "running. Its log group /aws/lambda/<function> has each failure.",
            f"{prefix}-api-function-error-rate",
            ("AWS/Lambda", "Errors", "Invocations", function),
            "share of the invocations that failed",
        ),
        "MailboxesAllFailingAlarm": expression_alarm(
            f"{MAILBOXES_ALL_FAILING_PERCENT}% or more of the enabled mailboxes (at least 2) "
            "failed at their mail servers for 15 minutes: mail in stopped for everyone, so the "
            "cause is ours (the function's network, name resolution, our addresses blocked), not "
            "the mailboxes'. Read poll-mailbox's log (message = 'mailbox poll failed') for the "
            "reasons.",
            f"{prefix}-mailboxes-all-failing",
            _share(
                [
                    metric_stat(
                        "failing", METRICS_NAMESPACE, "MailboxesFailing", ours, "Minimum", 900
                    ),
                    metric_stat(
                        "enabled", METRICS_NAMESPACE, "MailboxesEnabled", ours, "Maximum", 900
                    ),
                ],
                "IF(failing >= 2 AND enabled > 0, 100 * failing / enabled, 0)",
                "percent of enabled mailboxes failing",
            ),
            Threshold=MAILBOXES_ALL_FAILING_PERCENT,
        ),
        "NotificationsAllFailingAlarm": expression_alarm(
            f"For 15 minutes every notification failed ({NOTIFICATIONS_ALL_FAILING} or more "
            "each five minutes, metric NotificationFailed) and none was sent "
            "(NotificationsSent): notifications stopped for everyone (SES refuses the sender, "
            "the quota, DynamoDB). Read deliver-notifications' and drain-outbox's logs "
            "(`notification failed`) and SES's sending status; the drain retries them.",
            f"{prefix}-notifications-all-failing",
            _share(
                [
                    metric_stat(
                        "failed", METRICS_NAMESPACE, "NotificationFailed", ours, "Sum", 300
                    ),
                    metric_stat("sent", METRICS_NAMESPACE, "NotificationsSent", ours, "Sum", 300),
                ],
                f"IF(FILL(failed, 0) >= {NOTIFICATIONS_ALL_FAILING} AND FILL(sent, 0) == 0, 1, 0)",
                "every notification failed, none sent",
            ),
            Threshold=1,
            EvaluationPeriods=3,
            DatapointsToAlarm=3,
        ),
    }


def ses_alarms(stage: str) -> dict[str, Any]:
    """SES about to stop the account's sending: the quota, the rates near its pause."""
    prefix = f"agora-{stage}"
    sent = metric_stat("sent", "AWS/SES", "Send", None, "Sum", 86400)
    found = {
        "SesQuotaReachedAlarm": expression_alarm(
            f"SES sent {SES_QUOTA_REACHED:.0%} or more of the account's 24-hour quota "
            "(parameter SesDailyQuota): every notification and digest past it fails. Request a "
            "higher quota in the SES console (Account dashboard), then make deploy "
            "SES_DAILY_QUOTA=<it>.",
            f"{prefix}-ses-quota-reached",
            [
                sent,
                {
                    "Id": "share",
                    "Expression": {"Fn::Sub": "sent / ${SesDailyQuota}"},
                    "Label": "share of the 24-hour quota",
                    "ReturnData": True,
                },
            ],
            Threshold=SES_QUOTA_REACHED,
        )
    }
    for logical, metric, threshold, pause in (
        ("SesBouncePauseNearAlarm", "BounceRate", SES_BOUNCE_PAUSE_NEAR, "10%"),
        ("SesComplaintPauseNearAlarm", "ComplaintRate", SES_COMPLAINT_PAUSE_NEAR, "0.5%"),
    ):
        kind = metric.removesuffix("Rate").lower()
        found[logical] = alarm(
            f"The account's SES {kind} rate reached {threshold:.1%}; at {pause} SES pauses the "
            "account's sending, every mail of every group. Check that ses-feedback suppresses "
            f"(its alarms), stop any bulk sending, and read the {kind}s' addresses in "
            "ses-feedback's log.",
            alarm_metric(
                f"{prefix}-ses-{kind}-pause-near",
                "AWS/SES",
                f"Reputation.{metric}",
                Statistic="Maximum",
            ),
            Threshold=threshold,
            Period=3600,
        )
    return found


def _shares(stage: str) -> dict[str, Any]:
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
        "ApiQuiet5xxAlarm": expression_alarm(
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
        "MailFailedAlarm": expression_alarm(
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
    """Every alarm to the ticket topic on alarm only; each cause's composite to the page topic.
    Answers the topics and the composites to merge."""
    prefix = f"agora-{stage}"
    added: dict[str, Any] = topics(stage)
    # Every alarm tickets, a composite's members too: a member that stays red keeps its
    # composite red, and a second member's cause would otherwise reach nobody.
    for logical, resource in resources.items():
        if resource.get("Type") != "AWS::CloudWatch::Alarm":
            continue
        properties = resource["Properties"]
        properties.pop("OKActions", None)
        properties["AlarmActions"] = [{"Ref": TICKET_TOPIC}]
        if logical in DIRECT_PAGES:  # a cause of its own, paged on alarm and on recovery
            properties["AlarmActions"] = [{"Ref": PAGE_TOPIC}]
            properties["OKActions"] = [{"Ref": PAGE_TOPIC}]
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
