"""The stack's one CloudWatch dashboard (infra.monitoring puts it in the template), a row of two
widgets for each concern: the API, mail and notifications, the queues, DynamoDB and SES, the
functions, and the outbox, mail polls and scheduled runs. Function names are the stack's
(`${Logical}`, resolved by the template's Fn::Sub)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from infra.alarms import MAIL_OUTCOMES
from infra.cloudwatch import METRICS_NAMESPACE, SERVICE_DIMENSIONS
from infra.operations import FUNCTIONS

REGION = "${AWS::Region}"
# Our metrics' service dimension (Powertools adds it) as a widget line spells dimensions: a line
# without it names another metric, one nothing writes, and draws nothing.
SERVICE = [part for item in SERVICE_DIMENSIONS.items() for part in item]


def widget(title: str, metrics: list[list[Any]], x: int, y: int, **extra: Any) -> dict:
    """A 12 by 6 metric widget at (`x`, `y`)."""
    return {
        "type": "metric",
        "x": x,
        "y": y,
        "width": 12,
        "height": 6,
        "properties": {"title": title, "region": REGION, "metrics": metrics, **extra},
    }


def search(query: str, stat: str, metric_id: str) -> list[dict[str, Any]]:
    """A SEARCH expression as one widget line. `${…}` is the template's substitution: a literal
    brace pair passes through Fn::Sub as `${!…}`; SEARCH's own braces are not `${`, so they need
    nothing."""
    return [{"expression": f"SEARCH('{query}', '{stat}', 300)", "label": "", "id": metric_id}]


def api_widgets(prefix: str) -> list[dict]:
    def api_metric(metric: str, stat: str) -> list[Any]:
        return ["AWS/ApiGateway", metric, "ApiName", prefix, "Stage", "api", {"stat": stat}]

    latency = [api_metric("Latency", "p50"), api_metric("Latency", "p99")]
    errors = [api_metric(m, "Sum") for m in ("5XXError", "4XXError", "Count")]
    return [widget("API latency (ms)", latency, 0, 0), widget("API errors", errors, 12, 0)]


def mail_widgets(prefix: str) -> list[dict]:
    handled = [
        [METRICS_NAMESPACE, "MailHandled", "Stage", prefix, "Outcome", outcome, *SERVICE,
         {"stat": "Sum"}]
        for outcome in MAIL_OUTCOMES
    ]  # fmt: skip
    notifications = [
        [METRICS_NAMESPACE, "NotificationsSent", "Stage", prefix, *SERVICE, {"stat": "Sum"}],
        ["AWS/Lambda", "Errors", "FunctionName", "${DeliverNotifications}", {"stat": "Sum"}],
        *(["AWS/SES", metric, {"stat": "Sum"}] for metric in ("Send", "Bounce", "Complaint")),
    ]
    return [
        widget("Mail handled, by outcome", handled, 0, 6),
        widget("Notifications", notifications, 12, 6),
    ]


def queue_widgets(queues: Sequence[str], dead: Sequence[str]) -> list[dict]:
    def of(metric: str, queue: str) -> list[Any]:
        return ["AWS/SQS", metric, "QueueName", queue, {"stat": "Maximum"}]

    depth = [of("ApproximateNumberOfMessagesVisible", q) for q in [*queues, *dead]]
    age = [of("ApproximateAgeOfOldestMessage", q) for q in queues]
    return [
        widget("Queue depth (visible messages)", depth, 0, 12),
        widget("Age of the oldest message (s)", age, 12, 12),
    ]


def store_and_ses_widgets(prefix: str) -> list[dict]:
    throttles = [
        search(
            f'{{AWS/DynamoDB,Operation,TableName}} MetricName="ThrottledRequests" "{prefix}"',
            "Sum",
            "tables",
        ),
        search(
            "{AWS/DynamoDB,GlobalSecondaryIndexName,TableName} "
            f'MetricName=("ReadThrottleEvents" OR "WriteThrottleEvents") "{prefix}"',
            "Sum",
            "indexes",
        ),
    ]
    reputation = [
        ["AWS/SES", "Reputation.BounceRate", {"stat": "Maximum"}],
        ["AWS/SES", "Reputation.ComplaintRate", {"stat": "Maximum"}],
    ]
    reviews = [
        {"label": "bounce review", "value": 0.05},
        {"label": "complaint review", "value": 0.001},
    ]
    return [
        widget("DynamoDB throttle events (tables and indexes)", throttles, 0, 18),
        widget("SES reputation", reputation, 12, 18, annotations={"horizontal": reviews}),
    ]


def function_widgets() -> list[dict]:
    def of(logical: str, metric: str, stat: str, label: str) -> list[Any]:
        return ["AWS/Lambda", metric, "FunctionName", "${" + logical + "}",
                {"stat": stat, "label": label}]  # fmt: skip

    durations = [of(logical, "Duration", "p99", name) for logical, name in FUNCTIONS.items()]
    failures = [
        of(logical, metric, "Sum", f"{name} {metric.lower()}")
        for logical, name in FUNCTIONS.items()
        for metric in ("Errors", "Throttles")
    ]
    return [
        widget("Function duration p99 (ms)", durations, 0, 24),
        widget("Function errors and throttles", failures, 12, 24),
    ]


def background_widgets(prefix: str, jobs: Sequence[str], scheduled_failures: str) -> list[dict]:
    """The outbox stream, the mail polls' failures, the scheduled runs and the rejection notices
    that did not go."""
    outbox = [
        ["AWS/Lambda", "IteratorAge", "FunctionName", "${DrainOutbox}",
         {"stat": "Maximum", "label": "drain-outbox"}],
    ]  # fmt: skip
    polls = [
        search(
            f'{{Agora,Reason,Stage,service}} MetricName="MailboxPollFailed" Stage="{prefix}"',
            "Sum",
            "polls",
        )
    ]
    # A rejected mail's sender not told why (services/mail_in/notices.py), by reason.
    untold = [
        search(
            f'{{Agora,Reason,Stage,service}} MetricName="RejectionNoticeNotSent" Stage="{prefix}"',
            "Sum",
            "untold",
        )
    ]
    runs: list[list[Any]] = [
        [METRICS_NAMESPACE, "ScheduledRunCompleted", "Job", job, "Stage", prefix, *SERVICE,
         {"stat": "Sum", "label": f"{job} completed"}]
        for job in jobs
    ]  # fmt: skip
    runs.append(
        ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", scheduled_failures,
         {"stat": "Maximum", "label": "scheduled failures"}]
    )  # fmt: skip
    return [
        widget("Outbox stream: age of the oldest record (ms)", outbox, 0, 30),
        widget("Mailbox polls failed, by reason", polls, 12, 30),
        widget("Scheduled runs completed (heartbeats) and failed", runs, 0, 36),
        widget("Rejection notices not sent, by reason", untold, 12, 36),
    ]


def dashboard(
    prefix: str, queues: Sequence[str], dead: Sequence[str], jobs: Sequence[str], failures: str
) -> dict[str, Any]:
    """The dashboard `prefix` (agora-<stage>): `queues` and their `dead` letters, the scheduled
    `jobs` and the queue of their `failures`."""
    widgets = [
        *api_widgets(prefix),
        *mail_widgets(prefix),
        *queue_widgets(queues, dead),
        *store_and_ses_widgets(prefix),
        *function_widgets(),
        *background_widgets(prefix, jobs, failures),
    ]
    body = json.dumps({"widgets": widgets}, separators=(",", ":"))
    return {
        "Type": "AWS::CloudWatch::Dashboard",
        "Properties": {"DashboardName": prefix, "DashboardBody": {"Fn::Sub": body}},
    }
