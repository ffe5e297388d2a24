"""Day-two watching: the alarms `infra.operations` does not make, and one dashboard per stage.

Failure classes watched here (issue 26): the ses-feedback dead letters, the age of the oldest
message on every queue, latency (Lambda Duration p99 of each function's current version, API
Gateway Latency p99), SES reputation (bounce and complaint rates, which make SES review
and then pause the account) and EventBridge (schedule rules whose target failed, PutEvents that
EventBridge refused). Each description says what the alarm means and what to do; the README's
"Alarms" table lists the same. Merged into the template by `infra.build`.
"""

from __future__ import annotations

import json
from typing import Any

from infra import dashboard as board
from infra.alarms import (
    agora_metric,
    alarm,
    alarm_metric,
    p99_alarm,
    queued_messages,
)
from infra.operations import FUNCTIONS, version_dimensions

# The three queues with their dead-letter queues: logical stem -> (queue key, dead-letter key,
# how old the oldest message may grow before somebody should look, in seconds).
QUEUES = {
    "Mailbox": ("queue", "dead_letters", 900),  # a dispatch every 5 minutes: 3 missed rounds
    "Notification": ("notify_queue", "notify_dead_letters", 900),
    # The day's batches wait their turn at the sending rate: 100,000 digests take two hours.
    "Digest": ("digest_queue", "digest_dead_letters", 4 * 3600),
    "SesFeedback": ("feedback_queue", "feedback_dead_letters", 1800),
}
# A dead letter expires after 14 days (MessageRetentionPeriod): say so a week before.
DEAD_LETTER_AGE_SECONDS = 7 * 24 * 3600

# The schedules' EventBridge rules, named so their FailedInvocations can be alarmed on.
SCHEDULES = {"DispatchMailPolls": "dispatch-mail-polls", "PurgeComments": "purge-comments",
             "SendDigests": "send-digests"}  # fmt: skip

# API latency the members would notice (p99 over 5 minutes, ms), and the API function's own.
API_LATENCY_P99_MS = 3000
API_DURATION_P99_MS = 5000
# A job whose p99 comes this close to its timeout is about to be killed mid-run.
JOB_DURATION_SHARE = 0.8

# SES reviews an account at a 5% bounce rate and a 0.1% complaint rate, and pauses it later.
SES_BOUNCE_WARNING = 0.04
SES_COMPLAINT_WARNING = 0.001


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


def queue_alarms(stage: str, names: dict[str, str]) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    resources: dict[str, Any] = {
        # The other two dead-letter queues are watched by infra.operations.
        "SesFeedbackDeadLettersAlarm": alarm(
            f"{names['feedback_dead_letters']} holds SES bounce or complaint notifications that "
            "failed 5 times, so those addresses are not suppressed yet. Read the ses-feedback "
            "function's log for the error, fix it, then move the messages back with "
            "`aws sqs start-message-move-task`.",
            queued_messages(f"{prefix}-ses-feedback-dead-letters", names["feedback_dead_letters"]),
        )
    }
    for logical, (queue_key, dead_key, max_age) in QUEUES.items():
        queue, dead = names[queue_key], names[dead_key]
        resources[f"{logical}QueueAgeAlarm"] = alarm(
            f"The oldest message on {queue} waited more than {max_age // 60} minutes: its "
            "function is failing (see its errors alarm), throttled, or capped too low for the "
            "work. Read the function's log; raise the trigger's MaximumConcurrency if it only "
            "keeps up too slowly.",
            alarm_metric(
                f"{queue}-age",
                "AWS/SQS",
                "ApproximateAgeOfOldestMessage",
                {"QueueName": queue},
                Statistic="Maximum",
            ),
            Threshold=max_age,
            EvaluationPeriods=2,
        )
        resources[f"{logical}DeadLetterAgeAlarm"] = alarm(
            f"A message has sat in {dead} for a week; dead letters are deleted after 14 days. "
            "Fix the cause and move them back (`aws sqs start-message-move-task`), or purge "
            "them on purpose.",
            alarm_metric(
                f"{dead}-age",
                "AWS/SQS",
                "ApproximateAgeOfOldestMessage",
                {"QueueName": dead},
                Statistic="Maximum",
            ),
            Threshold=DEAD_LETTER_AGE_SECONDS,
            Period=3600,
        )
    return resources


def digest_alarms(stage: str, names: dict[str, str]) -> dict[str, Any]:
    """The day's digests that were not sent that day (chalicelib/jobs/digests.py)."""
    prefix = f"agora-{stage}"
    return {
        "DigestsLeftOverAlarm": alarm(
            "Daily digests were not sent on their day: a batch was still on "
            f"{names['digest_queue']} when its day ended, or `send-digests` stopped at its time "
            "limit. Their items go in the next day's digest. More members with digests than "
            "AGORA_MAIL_SEND_RATE sends in a day, or deliver-digests failing (see its errors "
            "alarm): ask AWS for a higher SES sending rate and raise AGORA_MAIL_SEND_RATE.",
            agora_metric(f"{prefix}-digests-left-over", "DigestsLeftOver", {"Stage": prefix}),
            Period=3600,
        ),
        "DigestDeadLettersAlarm": alarm(
            f"{names['digest_dead_letters']} holds digest batches that failed 5 times: some of "
            "their users' digests were not sent (the others were). Read deliver-digests' log "
            "('digest failed'), fix the cause, then move the messages back with `aws sqs "
            "start-message-move-task` (a digest already sent is not sent again).",
            queued_messages(f"{prefix}-digest-dead-letters", names["digest_dead_letters"]),
        ),
    }


def latency_alarms(stage: str) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    resources: dict[str, Any] = {}
    timeouts = function_timeouts()
    for logical, name in FUNCTIONS.items():
        if logical == "APIHandler":
            threshold = API_DURATION_P99_MS
            advice = (
                "API calls are slow: look for a slow AWS dependency in the X-Ray traces (prod) "
                "or the log's request durations; a list that reads more than one page is a bug."
            )
        else:
            threshold = int(timeouts[logical] * 1000 * JOB_DURATION_SHARE)
            advice = (
                f"{name} runs close to its {timeouts[logical]} s timeout and will be killed "
                "mid-run: read its log for what grew (mailbox size, batch size), and raise the "
                "timeout in .chalice/config.json or make the job stop earlier."
            )
        # The current version's: it rolls a slow new version back (infra.rollout).
        resources[f"{logical}DurationAlarm"] = p99_alarm(
            f"p99 duration of {name} is over {threshold} ms. " + advice,
            (
                f"{prefix}-{name}-duration-p99",
                "AWS/Lambda",
                "Duration",
                version_dimensions(logical),
            ),
            threshold,
            3 if logical == "APIHandler" else 1,
        )
    resources["ApiLatencyAlarm"] = p99_alarm(
        f"p99 latency of the API, as API Gateway measures it, is over {API_LATENCY_P99_MS} ms "
        "in 3 of 5 minutes. Right after a deploy, CodeDeploy rolls back by itself; otherwise "
        "compare with the api function's duration alarm (the function is slow) and look for a "
        "throttled table or a slow AWS call in the X-Ray traces.",
        (
            f"{prefix}-api-latency-p99",
            "AWS/ApiGateway",
            "Latency",
            {"ApiName": prefix, "Stage": "api"},
        ),
        API_LATENCY_P99_MS,
        3,
    )
    return resources


def reputation_alarms(stage: str) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    # SES publishes these for the whole account and region, not per configuration set.
    return {
        "SesBounceRateAlarm": alarm(
            f"The account's SES bounce rate is {SES_BOUNCE_WARNING:.0%} or more; at 5% SES puts "
            "the account under review and may pause sending. Check that ses-feedback works (its "
            "dead letters, its errors): it suppresses bounced addresses. Look for a list of "
            "stale addresses that was imported.",
            alarm_metric(
                f"{prefix}-ses-bounce-rate", "AWS/SES", "Reputation.BounceRate", Statistic="Maximum"
            ),
            Threshold=SES_BOUNCE_WARNING,
            Period=3600,
        ),
        "SesComplaintRateAlarm": alarm(
            f"The account's SES complaint rate reached {SES_COMPLAINT_WARNING:.1%}, where SES "
            "reviews the account (it pauses sending above 0.5%). Members mark our mail as spam: "
            "check that ses-feedback suppresses complainers and that notification volume and "
            "the unsubscribe link are as intended.",
            alarm_metric(
                f"{prefix}-ses-complaint-rate",
                "AWS/SES",
                "Reputation.ComplaintRate",
                Statistic="Maximum",
            ),
            Threshold=SES_COMPLAINT_WARNING,
            Period=3600,
        ),
    }


def event_alarms(stage: str) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    resources: dict[str, Any] = {}
    for logical, name in SCHEDULES.items():
        resources[f"{logical}ScheduleFailedAlarm"] = alarm(
            f"EventBridge could not invoke {name} on its schedule (after its own retries): the "
            "run did not happen. Read the function's errors and throttles alarms and its log; "
            "run it once by hand (`python -m chalicelib.cli …`) if the missed run matters.",
            alarm_metric(
                f"{prefix}-{name}-schedule-failed",
                "AWS/Events",
                "FailedInvocations",
                {"RuleName": schedule_rule_name(stage, name)},
            ),
        )
    resources["PutEventsFailedAlarm"] = alarm(
        "EventBridge refused PutEvents calls in this account and region (throttling or an "
        "error): domain events did not reach the organisation's systems. drain-outbox publishes "
        "them: read its log (/aws/lambda/<DrainOutbox function>, `filter message like "
        "/domain events/`), its EventPublishFailed alarm, and the account's PutEvents quota.",
        alarm_metric(
            f"{prefix}-put-events-failed", "AWS/Events", "PutEventsApproximateFailedCount"
        ),
    )
    return resources


def schedule_rule_name(stage: str, function: str) -> str:
    return f"agora-{stage}-{function}"


def schedule_names(stage: str) -> dict[str, Any]:
    """Fragments that give each schedule's EventBridge rule a fixed name (the alarm's dimension)."""
    # An invocation EventBridge itself could not make (the function gone, its permission
    # missing) goes to the scheduled-failures queue too, beside the runs that failed (ES4000).
    dead_letters = {"Arn": {"Fn::GetAtt": ["ScheduledFailuresQueue", "Arn"]}}
    resources: dict[str, Any] = {
        logical: {
            "Properties": {
                "Events": {
                    f"{logical}Event": {
                        "Properties": {
                            "Name": schedule_rule_name(stage, name),
                            "DeadLetterConfig": dead_letters,
                        }
                    }
                }
            }
        }
        for logical, name in SCHEDULES.items()
    }
    resources["ScheduledFailuresQueuePolicy"] = {
        "Type": "AWS::SQS::QueuePolicy",
        "Properties": {
            "Queues": [{"Ref": "ScheduledFailuresQueue"}],
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "ScheduleDeadLetters",
                        "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": {"Fn::GetAtt": ["ScheduledFailuresQueue", "Arn"]},
                        "Condition": {
                            "ArnEquals": {
                                "aws:SourceArn": [
                                    {
                                        "Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:"
                                        "${AWS::AccountId}:rule/" + schedule_rule_name(stage, name)
                                    }
                                    for name in (*SCHEDULES.values(), "check-aliases", "ses-events")
                                ]
                            }
                        },
                    }
                ],
            },
        },
    }
    return resources


def dashboard(stage: str, names: dict[str, str]) -> dict[str, Any]:
    """API latency and errors, mail outcomes, queues, notifications, DynamoDB throttles, SES
    reputation (infra/dashboard.py lays them out)."""
    queues = [names[q] for q, _, _ in QUEUES.values()]
    dead = [names[d] for _, d, _ in QUEUES.values()]
    dead += [names["outbox_dead_letters"], names["scheduled_failures"]]
    failures = names["scheduled_failures"]
    return board.dashboard(f"agora-{stage}", queues, dead, list(SCHEDULES.values()), failures)


def monitoring_resources(
    stage: str, names: dict[str, str], tables: dict[str, str]
) -> dict[str, Any]:
    """Everything above; `tables` maps each table's logical id to its name."""
    return {
        **queue_alarms(stage, names),
        **digest_alarms(stage, names),
        **latency_alarms(stage),
        **reputation_alarms(stage),
        **event_alarms(stage),
        **schedule_names(stage),
        "Dashboard": dashboard(stage, names),
    }
