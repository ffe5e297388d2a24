"""The failure classes that never raise (issue 38): each has one alarm whose text names where to
look, and none of them treats silence as good news when silence is the failure.

- **Stream sources** (IteratorAge): a partial-batch failure is not a Lambda error, so a stuck
  drain only shows as records growing older in the stream (24 hours, then they are gone).
- **Heartbeats**: each scheduled job emits `ScheduledRunCompleted` (chalicelib.jobs.base.heartbeat)
  when a run completes; missing data is breaching, over a window sized to the schedule, so a
  disabled rule, a run that never starts or one that always fails is seen.
- **Account-wide limits**: the account's Lambda concurrency (ClaimedAccountConcurrency), any
  function throttled (one account alarm instead of one per function), the SES 24-hour quota.
- **DynamoDB throttles**, tables and their indexes: `ThrottledRequests` counts a request once when
  any part of it (the table or an index) was throttled; one Metrics Insights query over the
  stage's tables replaces an alarm (of two metrics) per table.
- **The API's 4xx share** and **429s** (the stage's throttle: a metric filter on the access log).
- **SNS deliveries** that failed (bounces and complaints that never reached their queue).
- **Cost**: an AWS Budgets budget that mails ALARM_EMAIL.

Tables of what is watched, so that another stream source, schedule or topic is one entry.
"""

from __future__ import annotations

from typing import Any

from infra import mail_events
from infra.alarms import SERVICE_DIMENSIONS, alarm, alarm_metric, math_alarm, metric_stat

# Stream-triggered function -> (its source table's stem, the age in seconds worth a look).
# Records leave a DynamoDB stream after 24 hours: an hour leaves time to fix the cause.
STREAM_SOURCES = {"DrainOutbox": ("outbox", 3600)}

# Scheduled job (app.py's name) -> (alarm period in seconds, periods without a completed run
# before the alarm fires). Sized to the schedule: 3 missed 5-minute rounds; a daily run 2 hours
# late. CloudWatch looks back 7 days at most, so the monthly purge's is a daily check instead:
# the days since its last completed run (jobs/comment_purge.py), alarmed past PURGE_AGE_DAYS.
HEARTBEATS = {
    "dispatch-mail-polls": (300, 3),
    "send-digests": (3600, 26),
}
PURGE_AGE_DAYS = 32
# The outbox drain runs when the outbox is written (its stream): silent while writes go on, for
# this many seconds twice in a row, is a disabled or broken trigger.
DRAIN_SILENCE_SECONDS = 900

# A share of the account's concurrency the stack's functions may claim before somebody looks
# (a new account has 10 in all; the usual quota is 1,000).
CONCURRENCY_SHARE = 0.8
# The SES 24-hour sending quota (200 in the sandbox): a stack parameter, alarmed at this share.
SES_QUOTA_SHARE = 0.8
# The share of API calls answered 4xx, over 3 consecutive 5-minute periods with calls.
API_4XX_SHARE = 0.25
# Dollars a month above which the budget mails (a parameter; what `make cost` says a small club
# pays, with room).
DEFAULT_MONTHLY_BUDGET_USD = 25


def parameters() -> dict[str, Any]:
    return {
        "SesDailyQuota": {
            "Type": "Number",
            "Default": 200,
            "MinValue": 1,
            "Description": "The account's SES 24-hour sending quota (200 in the sandbox; the SES "
            f"console's Account dashboard); an alarm fires at {SES_QUOTA_SHARE:.0%} of it",
        },
        "MonthlyBudgetUsd": {
            "Type": "Number",
            "Default": DEFAULT_MONTHLY_BUDGET_USD,
            "MinValue": 1,
            "Description": "A month's AWS cost, in US dollars, above which ALARM_EMAIL is mailed "
            "(actual over 80%, forecast over 100%)",
        },
    }


def stream_alarms(stage: str) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    resources: dict[str, Any] = {}
    for logical, (table, seconds) in STREAM_SOURCES.items():
        resources[f"{logical}IteratorAgeAlarm"] = alarm(
            f"The oldest record of the {prefix}-{table} stream waiting for {logical} is more than "
            f"{seconds // 60} minutes old: the function keeps failing a record (a partial batch "
            "failure is not a Lambda error) or is throttled. Records leave the stream after 24 "
            f'hours. Read its log (/aws/lambda/<{logical} function>, `filter level = "ERROR"`) '
            "and its dead-letter queue.",
            alarm_metric(
                f"{prefix}-{table}-stream-iterator-age",
                "AWS/Lambda",
                "IteratorAge",
                {"FunctionName": {"Ref": logical}},
                Statistic="Maximum",
            ),
            Threshold=seconds * 1000,
            EvaluationPeriods=2,
        )
    return resources


def heartbeat_alarms(stage: str) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    resources: dict[str, Any] = {}
    for job, (period, periods) in HEARTBEATS.items():
        logical = "".join(part.title() for part in job.split("-"))
        resources[f"{logical}HeartbeatAlarm"] = alarm(
            f"{job} has not completed a run for {period * periods // 60} minutes (metric "
            "ScheduledRunCompleted): its schedule is disabled or deleted, the function fails or "
            f"times out before the end, or it is not invoked at all. Read {job}'s log and its "
            "errors and schedule-failed alarms; run it once by hand from the CLI.",
            alarm_metric(
                f"{prefix}-{job}-heartbeat",
                "Agora",
                "ScheduledRunCompleted",
                {"Stage": prefix, "Job": job, **SERVICE_DIMENSIONS},
            ),
            ComparisonOperator="LessThanThreshold",
            Period=period,
            EvaluationPeriods=periods,
            TreatMissingData="breaching",
        )
    return resources


def silence_alarms(stage: str) -> dict[str, Any]:
    """The monthly purge and the outbox drain, which no per-run alarm sees stop."""
    prefix = f"agora-{stage}"

    return {
        "PurgeCommentsHeartbeatAlarm": alarm(
            f"The monthly purge of deleted comments has not completed for {PURGE_AGE_DAYS} days, "
            "or the daily check (send-digests' run) did not report it for two days (metric "
            "PurgeRunAgeDays, missing data breaching): its schedule is disabled, it fails or "
            "times out (its errors and schedule-failed alarms, the scheduled-failures queue). "
            "Run `python -m chalicelib.cli purge-comments`; deleted comments are kept until it "
            "runs (CONTRACT §8).",
            alarm_metric(
                f"{prefix}-purge-comments-heartbeat",
                "Agora",
                "PurgeRunAgeDays",
                {"Stage": prefix, **SERVICE_DIMENSIONS},
                Statistic="Maximum",
            ),
            Threshold=PURGE_AGE_DAYS,
            Period=86400,
            EvaluationPeriods=2,
            DatapointsToAlarm=2,
            TreatMissingData="breaching",
        ),
        "PurgeCommentsBacklogAlarm": alarm(
            "The monthly purge stopped at its 900 s deadline and left deleted comments (metric "
            "CommentPurgeBacklog, up to 10,000 counted; purge-comments' log says how many): it "
            "is not recorded complete, and the next run goes on from the oldest. Run `python -m "
            "chalicelib.cli purge-comments` (no deadline) to finish now; if it repeats, a "
            "month's deletions outgrow the function's timeout.",
            alarm_metric(
                f"{prefix}-purge-comments-backlog",
                "Agora",
                "CommentPurgeBacklog",
                {"Stage": prefix, **SERVICE_DIMENSIONS},
                Statistic="Maximum",
            ),
            Period=3600,
        ),
        "DrainOutboxSilentAlarm": math_alarm(
            f"The outbox ({prefix}-outbox) was written but drain-outbox did not run for "
            f"{DRAIN_SILENCE_SECONDS * 2 // 60} minutes: notifications and domain events are not "
            "sent. Its stream trigger is disabled or deleted, or the function cannot start (its "
            "throttles, its role). Check the event source mapping's state (`aws lambda "
            "list-event-source-mappings`) and drain-outbox's log. (A drain that runs and fails "
            "is its errors and iterator-age alarms.)",
            f"{prefix}-drain-outbox-silent",
            [
                metric_stat(
                    "written",
                    "AWS/DynamoDB",
                    "ConsumedWriteCapacityUnits",
                    {"TableName": f"{prefix}-outbox"},
                    "Sum",
                    DRAIN_SILENCE_SECONDS,
                ),
                metric_stat(
                    "drained",
                    "Agora",
                    "ScheduledRunCompleted",
                    {"Job": "drain-outbox", "Stage": prefix, **SERVICE_DIMENSIONS},
                    "Sum",
                    DRAIN_SILENCE_SECONDS,
                ),
            ],
            {
                # A drain that reported nothing counts as silent (its missing data breaches); no
                # write at all is nothing to drain.
                "Id": "silent",
                "Expression": "IF(FILL(written, 0) > 0 AND FILL(drained, 0) == 0, 1, 0)",
                "Label": "outbox written, drain silent",
            },
            EvaluationPeriods=2,
            DatapointsToAlarm=2,
        ),
    }


def account_alarms(stage: str) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    claimed = metric_stat(
        "claimed", "AWS/Lambda", "ClaimedAccountConcurrency", None, "Maximum", 300
    )
    usage = {"Service": "Lambda", "Resource": "ConcurrentExecutions", "Type": "Resource",
             "Class": "None"}  # fmt: skip
    limit = metric_stat("limit", "AWS/Usage", "ResourceCount", usage, "Maximum", 300)
    return {
        "AccountConcurrencyAlarm": math_alarm(
            f"The account's Lambda functions claimed {CONCURRENCY_SHARE:.0%} or more of its "
            "concurrency quota: the next surge throttles the API and every job (this stack's and "
            "any other in the account). Ask AWS for a higher 'Concurrent executions' quota "
            "(Service Quotas), or lower the SQS triggers' MaximumConcurrency.",
            f"{prefix}-account-concurrency",
            [claimed, limit],
            {
                "Id": "share",
                "Expression": "claimed / SERVICE_QUOTA(limit)",
                "Label": "share of the concurrency quota",
            },
            Threshold=CONCURRENCY_SHARE,
            EvaluationPeriods=2,
        ),
        "AccountThrottlesAlarm": alarm(
            "Lambda refused to start a function in this account: its concurrency is used up. "
            "The dashboard's 'Function errors and throttles' shows which; ask AWS for a higher "
            "'Concurrent executions' quota, or lower the SQS triggers' MaximumConcurrency (the "
            "SQS and stream triggers retry; the API answered 429 or 502).",
            alarm_metric(f"{prefix}-lambda-throttles", "AWS/Lambda", "Throttles"),
        ),
        "SesQuotaAlarm": math_alarm(
            f"SES sent {SES_QUOTA_SHARE:.0%} or more of the account's 24-hour quota (parameter "
            "SesDailyQuota): past it, every notification and digest fails. Request a higher "
            "quota in the SES console (Account dashboard), and set SesDailyQuota to it.",
            f"{prefix}-ses-quota",
            [
                # A UTC day's sending so far (SES's quota is a rolling 24 hours: close enough
                # to warn at 80%).
                metric_stat("sent", "AWS/SES", "Send", None, "Sum", 86400)
            ],
            {
                "Id": "share",
                "Expression": {"Fn::Sub": "sent / ${SesDailyQuota}"},
                "Label": "share of the 24-hour quota",
            },
            Threshold=SES_QUOTA_SHARE,
        ),
    }


def throttle_alarm(stage: str, tables: dict[str, str]) -> dict[str, Any]:
    """DynamoDB throttles of the stage's tables and their indexes, in one query; the tables
    `make restore` switched the stack onto (parameter TableNames) are named too."""
    prefix = f"agora-{stage}"
    where = " OR ".join(f"TableName = '{table}'" for table in sorted(tables.values()))
    query = {
        "Fn::Sub": [
            'SELECT SUM(ThrottledRequests) FROM SCHEMA("AWS/DynamoDB", Operation, TableName) '
            f"WHERE {where} OR TableName = '${{Restored}}'",
            {
                "Restored": {
                    "Fn::Join": ["' OR TableName = '", {"Fn::Split": [",", {"Ref": "TableNames"}]}]
                }
            },
        ]
    }
    return {
        "DynamoDbThrottlesAlarm": math_alarm(
            "DynamoDB throttled requests to a table of this stage or one of its indexes (the "
            "dashboard's throttle widget names the table and the index). "
            "On-demand tables throttle when traffic more than doubles its previous peak within "
            "30 minutes, or on a hot key: read the throttled functions' logs for the key, and "
            "pre-warm the table before a known surge.",
            f"{prefix}-dynamodb-throttles",
            [],
            {"Id": "throttled", "Expression": query, "Period": 300, "Label": "throttled requests"},
        )
    }


def api_alarms(stage: str) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    return {
        "Api4xxAlarm": alarm(
            f"More than {API_4XX_SHARE:.0%} of API calls were answered 4xx for 15 minutes: a "
            "client (the console, an integration) sends what the API refuses, or somebody "
            "guesses passwords or paths. The access log (/aws/apigateway/"
            f"{prefix}-access) has each call's status, path and caller IP.",
            alarm_metric(
                f"{prefix}-api-4xx-share",
                "AWS/ApiGateway",
                "4XXError",
                {"ApiName": prefix, "Stage": "api"},
                Statistic="Average",
            ),
            Threshold=API_4XX_SHARE,
            ComparisonOperator="GreaterThanThreshold",
            EvaluationPeriods=3,
        ),
        "ApiThrottledFilter": {
            "Type": "AWS::Logs::MetricFilter",
            "Properties": {
                "LogGroupName": {"Ref": "ApiAccessLogGroup"},
                "FilterPattern": "{ $.status = 429 }",
                "MetricTransformations": [
                    {
                        "MetricNamespace": "Agora",
                        "MetricName": "ApiThrottled",
                        "MetricValue": "1",
                        "Dimensions": [{"Key": "Stage", "Value": prefix}],
                    }
                ],
            },
        },
        "ApiThrottledAlarm": alarm(
            "API Gateway answered 429 to 10 or more calls in 5 minutes: a client passed the "
            "stage's throttle (100 requests/s, bursts of 200). The access log's `ip` and "
            "`userAgent` of status 429 name the client; raise the limit in infra/build.py "
            "(RestAPI MethodSettings) only for a legitimate one.",
            alarm_metric(f"{prefix}-api-429", "Agora", "ApiThrottled", {"Stage": prefix}),
            Threshold=10,
        ),
    }


def delivery_alarms(stage: str, names: dict[str, str]) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    return {
        "SesFeedbackDeliveryAlarm": alarm(
            f"SNS could not deliver SES bounces or complaints from {names['feedback_topic']} to "
            f"its queue: they wait in {names['feedback_undelivered']} (the subscription's "
            "redrive), and those addresses are not suppressed. Check the queue's policy (it must "
            "allow the topic) and that the queue exists; move the messages to "
            f"{names['feedback_queue']} when fixed.",
            alarm_metric(
                f"{prefix}-ses-feedback-delivery-failed",
                "AWS/SNS",
                "NumberOfNotificationsFailed",
                {"TopicName": names["feedback_topic"]},
            ),
        )
    }


def budget(stage: str) -> dict[str, Any]:
    """The month's cost, mailed to ALARM_EMAIL at 80% actual and 100% forecast (the account's:
    Budgets cannot filter on a stack without cost allocation tags being activated)."""
    subscribers = [{"SubscriptionType": "EMAIL", "Address": {"Ref": "AlarmEmail"}}]
    return {
        "MonthlyBudget": {
            "Type": "AWS::Budgets::Budget",
            "Properties": {
                "Budget": {
                    "BudgetName": f"agora-{stage}-monthly",
                    "BudgetType": "COST",
                    "TimeUnit": "MONTHLY",
                    "BudgetLimit": {"Amount": {"Ref": "MonthlyBudgetUsd"}, "Unit": "USD"},
                },
                "NotificationsWithSubscribers": [
                    {
                        "Notification": {
                            "NotificationType": kind,
                            "ComparisonOperator": "GREATER_THAN",
                            "Threshold": threshold,
                            "ThresholdType": "PERCENTAGE",
                        },
                        "Subscribers": subscribers,
                    }
                    for kind, threshold in (("ACTUAL", 80), ("FORECASTED", 100))
                ],
            },
        }
    }


def watch_resources(stage: str, names: dict[str, str], tables: dict[str, str]) -> dict[str, Any]:
    return {
        **stream_alarms(stage),
        **heartbeat_alarms(stage),
        **silence_alarms(stage),
        **account_alarms(stage),
        **throttle_alarm(stage, tables),
        **api_alarms(stage),
        **delivery_alarms(stage, names),
        **budget(stage),
        **mail_events.mail_event_resources(stage, names),
    }
