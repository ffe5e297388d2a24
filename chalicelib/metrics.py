"""Metrics in CloudWatch's embedded metric format (EMF): one JSON line in the function's log, which
CloudWatch turns into a metric with no API call and no extra latency.

Namespace `Agora`, dimension `Stage` (the table prefix without its dash, `agora-prod`), plus the
metric's own dimensions (`Outcome` of a handled mail, `Reason` of a failed mailbox poll). infra/operations.py alarms on them.
Outside Lambda nothing is written: there is no CloudWatch to read it (`make run`, the CLI, tests).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

NAMESPACE = "Agora"

# name -> unit; every metric Agora emits.
METRICS = {
    "MailHandled": "Count",  # dimension Outcome: posted, commented, ignored, rejected, failed
    "NotificationsSent": "Count",  # emails sent to members (alerts are stored, not sent)
    "CommentsPurged": "Count",
    "ServerErrors": "Count",  # API answers with a 5xx status
    # A mailbox that could not be polled; dimension Reason: connection, tls, login, timeout,
    # dns, other (chalicelib.mail.pop3.FAILURE_REASONS).
    "MailboxPollFailed": "Count",
    "DigestsFailed": "Count",  # users whose daily digest could not be sent in a run
    "DigestRunsStoppedEarly": "Count",  # 1 when a run stopped at its deadline, leaving users
}


def _stage() -> str:
    from chalicelib.settings import get_settings

    return get_settings().table_prefix.rstrip("-")


def document(name: str, value: float, **dimensions: str) -> dict[str, Any]:
    """The EMF document of one metric value."""
    if name not in METRICS:
        raise ValueError(f"unknown metric {name}")
    keys = ["Stage", *sorted(dimensions)]
    return {
        "_aws": {
            "Timestamp": int(time.time() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [keys],
                    "Metrics": [{"Name": name, "Unit": METRICS[name]}],
                }
            ],
        },
        "Stage": _stage(),
        **dimensions,
        name: value,
        # Ties the metric to the log lines of the same work.
        "correlationId": _correlation(),
    }


def _correlation() -> str | None:
    from chalicelib.logs import current_correlation_id

    return current_correlation_id()


def emit(name: str, value: float, **dimensions: str) -> None:
    """Write the metric to the log when running in Lambda (a zero is written too: an alarm then
    sees a value rather than missing data)."""
    if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return
    line = json.dumps(document(name, value, **dimensions), separators=(",", ":"))
    # Straight to the log, not through the logger: AGORA_LOG_LEVEL must not silence an alarm.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
