"""The parts every alarm of the stack is made of: `alarm` (a CloudWatch alarm to the alarm topic,
its defaults), `math_alarm`, and the metrics they watch (`alarm_metric`, `agora_metric` for
chalicelib/metrics.py's, `queued_messages`, `metric_stat`). The infra modules that declare alarms
(operations, monitoring, watch, paging, rollout, disaster, inbound) import them from here.
"""

from __future__ import annotations

from typing import Any

from chalicelib.settings import SERVICE

# Embedded-metric-format namespace of chalicelib/metrics.py; dimension Stage = table prefix stem.
METRICS_NAMESPACE = "Agora"
# Every function runs with POWERTOOLS_SERVICE_NAME = the one pinned service name, which Powertools
# adds to each metric as the dimension `service`: every alarm on our metrics names it too.
SERVICE_DIMENSIONS = {"service": SERVICE}


def alarm(description: str, metric: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    """A CloudWatch alarm on `metric`, where an override of None drops a default (a percentile
    replaces `Statistic`; metric math has no `Statistic` nor `Period` of its own)."""
    properties = {
        "AlarmDescription": description,
        "ActionsEnabled": True,
        "AlarmActions": [{"Ref": "AlarmTopic"}],
        "OKActions": [{"Ref": "AlarmTopic"}],
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "EvaluationPeriods": 1,
        "Period": 300,
        "Statistic": "Sum",
        "Threshold": 1,
        # No data means nothing happened: no failures, no messages.
        "TreatMissingData": "notBreaching",
        **metric,
        **overrides,
    }
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {k: v for k, v in properties.items() if v is not None},
    }


def math_alarm(description: str, alarm_name: str, metrics: list[dict[str, Any]],
               value: dict[str, Any], **overrides: Any) -> dict[str, Any]:  # fmt: skip
    """An alarm on `value`, an expression (its `Id`, `Expression`, `Label`) over `metrics`."""
    return alarm(
        description,
        {"AlarmName": alarm_name, "Metrics": [*metrics, {**value, "ReturnData": True}]},
        Statistic=None,
        Period=None,
        **overrides,
    )


def expression_alarm(
    description: str, name: str, metrics: list[dict[str, Any]], **more: Any
) -> dict:
    """An alarm on the metrics and expressions `metrics` (the one that returns data is its value):
    metric math has no `Statistic` nor `Period` of its own."""
    found = alarm(description, {"AlarmName": name, "Metrics": metrics}, **more)
    for key in ("Statistic", "Period"):
        found["Properties"].pop(key, None)
    return found


def p99_alarm(description: str, metric: tuple[str, str, str, dict[str, Any]], threshold: int,
               minutes_over: int) -> dict[str, Any]:  # fmt: skip
    """A p99 in milliseconds (alarm name, namespace, metric, dimensions) over `threshold` in
    `minutes_over` of 5 minutes: a rollout's canary (infra.rollout) sees it within its ten."""
    return alarm(
        description,
        alarm_metric(*metric, ExtendedStatistic="p99", Unit="Milliseconds"),
        Statistic=None,
        Threshold=threshold,
        Period=60,
        EvaluationPeriods=5,
        DatapointsToAlarm=minutes_over,
    )


def alarm_metric(
    alarm_name: str,
    namespace: str,
    metric_name: str,
    dimensions: dict[str, Any] | None = None,
    **more: Any,
) -> dict[str, Any]:
    """The metric part of an alarm (`alarm`'s second argument): the dimensions in the order
    given, and any other property of the alarm's metric (`Statistic`, `ExtendedStatistic`)."""
    found: dict[str, Any] = {
        "AlarmName": alarm_name,
        "Namespace": namespace,
        "MetricName": metric_name,
    }
    if dimensions is not None:
        found["Dimensions"] = [{"Name": k, "Value": v} for k, v in dimensions.items()]
    return {**found, **more}


def agora_metric(alarm_name: str, metric_name: str, dimensions: dict[str, str]) -> dict[str, Any]:
    """One of chalicelib/metrics.py's metrics (their dimensions name the Stage; Powertools adds
    the service's)."""
    return alarm_metric(
        alarm_name, METRICS_NAMESPACE, metric_name, {**dimensions, **SERVICE_DIMENSIONS}
    )


def queued_messages(alarm_name: str, queue: str) -> dict[str, Any]:
    """The messages waiting on an SQS queue (a dead-letter queue should hold none)."""
    return alarm_metric(
        alarm_name,
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        {"QueueName": queue},
        Statistic="Maximum",
    )


def metric_stat(metric_id: str, namespace: str, name: str, dimensions: dict[str, str] | None,
                stat: str, period: int) -> dict[str, Any]:  # fmt: skip
    """One metric of a metric-math alarm, read but not the alarm's own value (`dimensions`
    None: an account's metric, which has none)."""
    metric: dict[str, Any] = {"Namespace": namespace, "MetricName": name}
    if dimensions is not None:
        metric["Dimensions"] = [{"Name": k, "Value": v} for k, v in dimensions.items()]
    return {
        "Id": metric_id,
        "ReturnData": False,
        "MetricStat": {"Metric": metric, "Period": period, "Stat": stat},
    }
