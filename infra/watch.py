"""What watching needs beside the alarms (infra/alarms.py declares every one, the failure classes
of issue 38 that never raise among them): the SES quota parameter an alarm divides by, the metric
filter that counts the API's 429s from the access log, the month's budget that mails
ALARM_EMAIL, and every SES event of the stage's mail in a log group (infra.mail_events).
"""

from __future__ import annotations

from typing import Any

from infra import mail_events
from infra.alarms import SES_QUOTA_SHARE

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


def throttled_filter(stage: str) -> dict[str, Any]:
    """The API's 429s (the stage's throttle), counted from the access log: the metric the
    ApiThrottled alarm reads."""
    return {
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
                        "Dimensions": [{"Key": "Stage", "Value": f"agora-{stage}"}],
                    }
                ],
            },
        }
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


def watch_resources(stage: str, names: dict[str, str]) -> dict[str, Any]:
    return {
        **throttled_filter(stage),
        **budget(stage),
        **mail_events.mail_event_resources(stage, names),
    }
