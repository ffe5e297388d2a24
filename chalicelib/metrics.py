"""Metrics in CloudWatch's embedded metric format (EMF): one JSON line in the function's log, which
CloudWatch turns into a metric with no API call and no extra latency.

Namespace `Agora`, dimension `Stage` (the table prefix without its dash, `agora-prod`), plus the
metric's own dimensions (`Outcome` of a handled mail, `Reason` of a failed mailbox poll). infra/alarms.py alarms on them.
Outside Lambda nothing is written: there is no CloudWatch to read it (`make run`, the CLI, tests).

The EMF document is Powertools' (`single_metric`, which validates the unit and the dimensions and
prints the line), imported at the first metric so that `import app` stays as light as the bare
stack. Each metric value goes out as it happens rather than in one flush per invocation
(Powertools' `Metrics` + `log_metrics`): a job that a timeout kills still leaves what it counted.
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stdout
from typing import Any

from chalicelib.logs import current_correlation_id
from chalicelib.settings import get_settings

NAMESPACE = "Agora"

# name -> unit; every metric Agora emits.
METRICS = {
    "MailHandled": "Count",  # dimension Outcome: posted, commented, ignored, rejected, failed
    "NotificationsSent": "Count",  # emails sent to members (alerts are stored, not sent)
    "NotificationFailed": "Count",  # recipients not told (SES or DynamoDB failed): retried
    # Recipients of a notification whose email can never be built, sent once to the notification
    # dead-letter queue (services/notify/delivery.py `send_dead_letter`), never retried.
    "NotificationDeadLettered": "Count",
    # A rejected mail's sender not told why (services/mail_in/notices.py); dimension Reason:
    # suppressed (since the mail), no-group (none to send as), refused (SES), expired (told again
    # after its claim was gone), unchecked (the sender's DKIM check failed on DNS). The mail log's
    # `noticeSent` says false for the first four (services/mail_in/notices.py NOT_SENT_REASONS).
    "RejectionNoticeNotSent": "Count",
    "EventPublishFailed": "Count",  # domain events EventBridge refused after the tries: retried
    "CommentsPurged": "Count",
    # API answers with a 5xx status; dimension Version (VERSIONED): the rollback alarm of a
    # deploy's canary counts the new version's own (infra.operations, infra.rollout).
    "ServerErrors": "Count",
    # A mailbox that could not be polled; dimension Reason: connection, tls, login, timeout,
    # dns, other (chalicelib.mail.pop3.FAILURE_REASONS).
    "MailboxPollFailed": "Count",
    # A mailbox poll that its run's end cut short (jobs/mail_poll.py): not a failure, and left
    # due; a mailbox cut short run after run is recorded as failing at poll_schedule.CUT_SHORT_LIMIT.
    "MailboxPollCutShort": "Count",
    # The dispatch's view of the fleet (the share-failing alarm divides the two): mailboxes
    # enabled, and those whose last poll failed at their own server (backing off).
    "MailboxesEnabled": "Count",
    "MailboxesFailing": "Count",
    "MailboxesDue": "Count",  # mailboxes a dispatch sent to be polled
    "DigestsFailed": "Count",  # users whose daily digest could not be sent in a run
    "DigestRunsStoppedEarly": "Count",  # 1 when a run stopped at its deadline, leaving users
    # 1 when a scheduled job's run completed (dimension Job): its "it ran" heartbeat, alarmed on
    # missing data (chalicelib.jobs.base.heartbeat).
    "ScheduledRunCompleted": "Count",
    "DigestsLeftOver": "Count",  # users whose digest of the day was not sent that day
    # Days since the monthly purge last completed, from the daily check (jobs/comment_purge.py).
    "PurgeRunAgeDays": "None",
    # Deleted comments a monthly purge left when it stopped at its deadline (at most 10,000
    # counted; jobs/comment_purge.py): such a run is not recorded complete.
    "CommentPurgeBacklog": "Count",
}


# Metrics that name the Lambda version that counted them (dimension `Version`): the routing
# layer answers every exception with a 500, so Lambda's own Errors never sees the API fail.
VERSIONED = frozenset({"ServerErrors"})


def _stage() -> str:
    return get_settings().table_prefix.rstrip("-")


def document(name: str, value: float, **dimensions: str) -> dict[str, Any]:
    """The EMF document of one metric value, as `emit` writes it."""

    written = io.StringIO()
    with redirect_stdout(written):
        _write(name, value, dimensions)
    return dict(json.loads(written.getvalue()))


def _write(name: str, value: float, dimensions: dict[str, str]) -> None:
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    if name not in METRICS:
        raise ValueError(f"unknown metric {name}")
    unit = MetricUnit(METRICS[name])
    with single_metric(name=name, unit=unit, value=value, namespace=NAMESPACE) as metric:
        metric.add_dimension(name="Stage", value=_stage())
        if name in VERSIONED:
            version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            dimensions = {**dimensions, "Version": version}
        for key in sorted(dimensions):
            metric.add_dimension(name=key, value=dimensions[key])
        # Ties the metric to the log lines of the same work (not a dimension: no metric of its own).
        correlation = _correlation()
        if correlation:
            metric.add_metadata(key="correlationId", value=correlation)


def _correlation() -> str | None:
    return current_correlation_id()


def emit(name: str, value: float, **dimensions: str) -> None:
    """Write the metric to the log when running in Lambda (a zero is written too: an alarm then
    sees a value rather than missing data)."""
    if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return
    # Straight to stdout, not through the logger: AGORA_LOG_LEVEL must not silence an alarm.
    _write(name, value, dimensions)
