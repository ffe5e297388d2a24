"""What every alarm of the stack is made of; infra/alarms.py declares them, with these.

- What an alarm reads (its `watches`): `metric` (any namespace's), `agora` (chalicelib/metrics.py's,
  which carry the service's dimension), `queued` and `oldest` (an SQS queue), `p99` (a duration
  percentile), `math` (an expression over `metric_stat`s, `agora_stat`s for ours), and
  `version_dimensions` (a function's alias as run by its current version).
- `Alarm`, one declaration (a row of infra/alarms.py's table), and `alarm`, the way to write one.
- `resource`, the CloudWatch alarm a declaration becomes (its topics from who it pages), and
  `composite`, one page per cause over its members (infra.paging routes them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from chalicelib.settings import SERVICE
from infra.operations import ALIAS

# Embedded-metric-format namespace of chalicelib/metrics.py; dimension Stage = table prefix stem.
METRICS_NAMESPACE = "Agora"
# Every function runs with POWERTOOLS_SERVICE_NAME = the one pinned service name, which Powertools
# adds to each metric as the dimension `service`: every alarm on our metrics names it too.
SERVICE_DIMENSIONS = {"service": SERVICE}

# The topics (infra.operations makes the ticket one, infra.paging the page one).
TICKET_TOPIC = "AlarmTopic"
PAGE_TOPIC = "PageTopic"
# Who an alarm pages when it is no member of a cause: nobody (a ticket), or itself, a cause alone.
TICKET = ""
ITSELF = "itself"
STAGES = ("dev", "prod")


@dataclass(frozen=True)
class Alarm:
    """One alarm of the stack: its resource id (`logical`), AlarmName, what it `watches`, what it
    means and what to do (`about`), its threshold and period in seconds (metric math: each
    metric's own), who it `pages` (TICKET, ITSELF, or the cause whose composite it is a member
    of), whether a prod deploy's canary rolls the API back on it, the `stages` and CloudFormation
    `condition` it is made in, and any other property of CloudWatch's (`more`)."""

    logical: str
    name: str
    watches: dict[str, Any]
    about: str
    threshold: float = 1
    period: int = 300
    pages: str = TICKET
    rollback: bool = False
    stages: tuple[str, ...] = STAGES
    condition: str | None = None
    more: dict[str, Any] = field(default_factory=dict)


def alarm(logical: str, name: str, watches: dict[str, Any], about: str, *, threshold: float = 1,
          period: int = 300, pages: str = TICKET, rollback: bool = False,
          stages: tuple[str, ...] = STAGES, condition: str | None = None,
          **more: Any) -> Alarm:  # fmt: skip
    """An `Alarm`, its rare properties by CloudWatch's names (EvaluationPeriods,
    DatapointsToAlarm, ComparisonOperator, TreatMissingData, Statistic)."""
    return Alarm(logical, name, watches, about, threshold, period, pages, rollback, stages,
                 condition, more)  # fmt: skip


def resource(declared: Alarm) -> dict[str, Any]:
    """The CloudWatch alarm: by default over one 5-minute period, at or above 1, no data being
    nothing that happened. Every alarm tickets when it fires (a person closes a ticket, so its
    recovery mails nobody); a cause alone pages, on alarm and on recovery."""
    alone = declared.pages == ITSELF
    properties = {
        "AlarmDescription": declared.about,
        "ActionsEnabled": True,
        "AlarmActions": [{"Ref": PAGE_TOPIC if alone else TICKET_TOPIC}],
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "EvaluationPeriods": 1,
        "Period": declared.period,
        "Statistic": "Sum",
        "Threshold": declared.threshold,
        # No data means nothing happened: no failures, no messages.
        "TreatMissingData": "notBreaching",
        "AlarmName": declared.name,
        **declared.watches,
        **declared.more,
    }
    if alone:
        properties["OKActions"] = [{"Ref": PAGE_TOPIC}]
    found: dict[str, Any] = {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {k: v for k, v in properties.items() if v is not None},
    }
    if declared.condition:
        found["Condition"] = declared.condition
    return found


def composite(stage: str, logical: str, about: str, members: list[Alarm]) -> dict[str, Any]:
    """One page for a cause: in alarm while any of its `members` is, paged on alarm and on
    recovery."""
    kebab = re.sub(r"(?<!^)(?=[A-Z])", "-", logical.removesuffix("Alarm")).lower()
    return {
        "Type": "AWS::CloudWatch::CompositeAlarm",
        "DependsOn": [member.logical for member in members],
        "Properties": {
            "AlarmName": f"agora-{stage}-{kebab}",
            "AlarmDescription": about,
            "AlarmRule": " OR ".join(f'ALARM("{member.name}")' for member in members),
            "ActionsEnabled": True,
            "AlarmActions": [{"Ref": PAGE_TOPIC}],
            "OKActions": [{"Ref": PAGE_TOPIC}],
        },
    }


def metric(namespace: str, name: str, dimensions: dict[str, Any] | None = None,
           **more: Any) -> dict[str, Any]:  # fmt: skip
    """A metric, its dimensions in the order given, and any other property of the alarm's metric
    (`Statistic`, `ExtendedStatistic`); `dimensions` None: an account's metric, which has none."""
    found: dict[str, Any] = {"Namespace": namespace, "MetricName": name}
    if dimensions is not None:
        found["Dimensions"] = [{"Name": k, "Value": v} for k, v in dimensions.items()]
    return {**found, **more}


def agora(name: str, dimensions: dict[str, Any], **more: Any) -> dict[str, Any]:
    """One of chalicelib/metrics.py's metrics (their dimensions name the Stage; Powertools adds
    the service's)."""
    return metric(METRICS_NAMESPACE, name, {**dimensions, **SERVICE_DIMENSIONS}, **more)


def queued(queue: str) -> dict[str, Any]:
    """The messages waiting on an SQS queue (a dead-letter queue should hold none)."""
    return metric("AWS/SQS", "ApproximateNumberOfMessagesVisible", {"QueueName": queue},
                  Statistic="Maximum")  # fmt: skip


def oldest(queue: str) -> dict[str, Any]:
    """The age in seconds of the oldest message on an SQS queue."""
    return metric("AWS/SQS", "ApproximateAgeOfOldestMessage", {"QueueName": queue},
                  Statistic="Maximum")  # fmt: skip


def p99(namespace: str, name: str, dimensions: dict[str, Any]) -> dict[str, Any]:
    """A p99 in milliseconds (a percentile replaces `Statistic`)."""
    return metric(namespace, name, dimensions, ExtendedStatistic="p99", Unit="Milliseconds",
                  Statistic=None)  # fmt: skip


def math(metrics: list[dict[str, Any]], expression: Any, label: str, value_id: str = "share",
         **more: Any) -> dict[str, Any]:  # fmt: skip
    """The alarm's value, `expression` over `metrics` (named `value_id`, with any other property
    in `more`): metric math has no `Statistic` nor `Period` of its own."""
    value = {"Id": value_id, "Expression": expression, **more, "Label": label, "ReturnData": True}
    return {"Metrics": [*metrics, value], "Statistic": None, "Period": None}


def metric_stat(metric_id: str, namespace: str, name: str, dimensions: dict[str, Any] | None,
                stat: str, period: int) -> dict[str, Any]:  # fmt: skip
    """One metric of a metric-math alarm, read but not the alarm's own value (`dimensions`
    None: an account's metric, which has none); `agora_stat`, one of ours."""
    found: dict[str, Any] = {"Namespace": namespace, "MetricName": name}
    if dimensions is not None:
        found["Dimensions"] = [{"Name": k, "Value": v} for k, v in dimensions.items()]
    return {
        "Id": metric_id,
        "ReturnData": False,
        "MetricStat": {"Metric": found, "Period": period, "Stat": stat},
    }


def agora_stat(metric_id: str, name: str, prefix: str, stat: str, period: int) -> dict[str, Any]:
    """`metric_stat` of one of chalicelib/metrics.py's metrics of the stage `prefix`."""
    dimensions = {"Stage": prefix, **SERVICE_DIMENSIONS}
    return metric_stat(metric_id, METRICS_NAMESPACE, name, dimensions, stat, period)


def version_dimensions(logical: str) -> dict[str, Any]:
    """Lambda's metric of the function's alias as run by its current version (FunctionName,
    Resource `<function>:live`, ExecutedVersion): a new version's own, not the one it replaces."""
    return {
        "FunctionName": {"Ref": logical},
        "Resource": {"Fn::Sub": "${" + logical + "}:" + ALIAS},
        "ExecutedVersion": {"Fn::Select": [7, {"Fn::Split": [":", {"Ref": f"{logical}.Version"}]}]},
    }


# What the alarms of several metrics read (metric math), by name.


def error_share(counts: tuple[str, str, str, dict[str, Any]], label: str, period: int = 300,
                least: int = 20) -> dict[str, Any]:  # fmt: skip
    """The share of calls that failed, `counts` = (namespace, errors, calls, dimensions), once
    there are at least `least` calls in the `period`."""
    namespace, errors, calls, dimensions = counts
    return math(
        [
            metric_stat("errors", namespace, errors, dimensions, "Sum", period),
            metric_stat("calls", namespace, calls, dimensions, "Sum", period),
        ],
        f"IF(calls >= {least}, errors / calls, 0)",
        label,
    )


def mailboxes_failing(prefix: str, at_least: int) -> dict[str, Any]:
    """The percent of enabled mailboxes failing, as dispatch-mail-polls counts them (the least
    failing count of 15 minutes over the enabled count of the same 15 minutes), once at least
    `at_least` fail."""
    return math(
        [
            agora_stat("failing", "MailboxesFailing", prefix, "Minimum", 900),
            agora_stat("enabled", "MailboxesEnabled", prefix, "Maximum", 900),
        ],
        f"IF(failing >= {at_least} AND enabled > 0, 100 * failing / enabled, 0)",
        "percent of enabled mailboxes failing",
    )


def mail_failed(prefix: str, outcomes: tuple[str, ...], at_least: int) -> dict[str, Any]:
    """The share of an hour's mail handled (MailHandled, by `outcomes`) that failed, once at
    least `at_least` failed."""
    mail = {"Stage": prefix, **SERVICE_DIMENSIONS}
    handled = " + ".join(f"FILL({outcome}, 0)" for outcome in outcomes)
    return math(
        [
            metric_stat(o, METRICS_NAMESPACE, "MailHandled", {**mail, "Outcome": o}, "Sum", 3600)
            for o in outcomes
        ],
        f"IF(FILL(failed, 0) >= {at_least}, FILL(failed, 0) / ({handled}), 0)",
        "share of the mail handled that failed",
    )


def notifications_all_failing(prefix: str, at_least: int) -> dict[str, Any]:
    """1 when five minutes saw at least `at_least` notifications fail and none sent."""
    return math(
        [
            agora_stat("failed", "NotificationFailed", prefix, "Sum", 300),
            agora_stat("sent", "NotificationsSent", prefix, "Sum", 300),
        ],
        f"IF(FILL(failed, 0) >= {at_least} AND FILL(sent, 0) == 0, 1, 0)",
        "every notification failed, none sent",
    )


def drain_silence(prefix: str, seconds: int) -> dict[str, Any]:
    """1 when the outbox was written in `seconds` and drain-outbox reported no run: a drain
    that reported nothing counts as silent (its missing data breaches); no write at all is
    nothing to drain."""
    drained = {"Job": "drain-outbox", "Stage": prefix, **SERVICE_DIMENSIONS}
    written = {"TableName": f"{prefix}-outbox"}
    return math(
        [
            metric_stat("written", "AWS/DynamoDB", "ConsumedWriteCapacityUnits", written, "Sum",
                        seconds),
            metric_stat("drained", "Agora", "ScheduledRunCompleted", drained, "Sum", seconds),
        ],
        "IF(FILL(written, 0) > 0 AND FILL(drained, 0) == 0, 1, 0)",
        "outbox written, drain silent",
        "silent",
    )  # fmt: skip


def ses_quota_share() -> dict[str, Any]:
    """A UTC day's SES sending so far over the stack parameter SesDailyQuota (SES's quota is a
    rolling 24 hours: close enough)."""
    return math(
        [metric_stat("sent", "AWS/SES", "Send", None, "Sum", 86400)],
        {"Fn::Sub": "sent / ${SesDailyQuota}"},
        "share of the 24-hour quota",
    )


def concurrency_share() -> dict[str, Any]:
    """The account's claimed Lambda concurrency over its quota."""
    usage = {"Service": "Lambda", "Resource": "ConcurrentExecutions", "Type": "Resource",
             "Class": "None"}  # fmt: skip
    return math(
        [
            metric_stat("claimed", "AWS/Lambda", "ClaimedAccountConcurrency", None, "Maximum", 300),
            metric_stat("limit", "AWS/Usage", "ResourceCount", usage, "Maximum", 300),
        ],
        "claimed / SERVICE_QUOTA(limit)",
        "share of the concurrency quota",
    )


def dynamodb_throttles(tables: dict[str, str]) -> dict[str, Any]:
    """Throttled requests to `tables` and their indexes, in one Metrics Insights query (a request
    counts once when any part of it was throttled), and to the tables `make restore` switched
    the stack onto (parameter TableNames)."""
    where = " OR ".join(f"TableName = '{table}'" for table in sorted(tables.values()))
    restored = {"Fn::Join": ["' OR TableName = '", {"Fn::Split": [",", {"Ref": "TableNames"}]}]}
    query = {
        "Fn::Sub": [
            'SELECT SUM(ThrottledRequests) FROM SCHEMA("AWS/DynamoDB", Operation, TableName) '
            f"WHERE {where} OR TableName = '${{Restored}}'",
            {"Restored": restored},
        ]
    }
    return math([], query, "throttled requests", "throttled", Period=300)


def each_reason(prefix: str, name: str, reasons: tuple[str, ...], period: int) -> dict[str, Any]:
    """The sum over `reasons` of one of our metrics counted by Reason (each reason is a metric
    of its own to CloudWatch), over `period` seconds."""
    ours = {"Stage": prefix, **SERVICE_DIMENSIONS}
    ids = {reason: re.sub(r"\W", "_", reason) for reason in reasons}
    return math(
        [
            metric_stat(ids[r], METRICS_NAMESPACE, name, {**ours, "Reason": r}, "Sum", period)
            for r in reasons
        ],
        " + ".join(f"FILL({ids[r]}, 0)" for r in reasons),
        f"{name}, by {', '.join(reasons)}",
        "total",
    )
