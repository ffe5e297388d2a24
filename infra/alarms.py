"""Every alarm of the stack, in one table (`declared`): what it is called, what it reads, its
threshold and period, who it pages, what it means and what to do. The template's alarms are
these and no other (tests/fast/test_alarm_table.py); the rest is derived from them: each alarm's
topics and one composite per cause of CAUSES (infra.paging), the API's rollback alarms
(`rollback`, infra.rollout), the dashboard's queues and schedules (QUEUES, SCHEDULES), the
schedules' rule names (infra.monitoring). What they are made of: infra/cloudwatch.py.

A new alarm is a row here (`alarm(...)`, or an entry of a family's table: another queue, stream
source, schedule or heartbeat is one line), then `python -m infra.build`. Who is woken: a ticket
(`agora-<stage>-alarms`) for every alarm; a page (`agora-<stage>-page`) for a cause of CAUSES,
one composite over the alarms that cause fires together, or for an alarm that is a cause alone
(ITSELF). A page is a rate or a silence, never a single error (issues 48, 57).
"""

from __future__ import annotations

from typing import Any

from chalicelib.jobs.mail_push import INBOUND_PREFIX
from infra import alias_check
from infra.cloudwatch import (
    ITSELF,
    TICKET,
    Alarm,
    agora,
    alarm,
    concurrency_share,
    drain_silence,
    dynamodb_throttles,
    each_reason,
    error_share,
    mail_failed,
    mailboxes_failing,
    metric,
    notifications_all_failing,
    oldest,
    p99,
    queued,
    ses_quota_share,
    version_dimensions,
)
from infra.disaster import OUTAGE_MINUTES
from infra.inbound import INBOUND_DAYS
from infra.operations import FUNCTIONS, function_timeouts

# Mailbox polls cut short by their run's end (MailboxPollCutShort): so many an hour, hours in a row.
# One slow mailbox counts about 3 an hour once backed off (its third in a row is its timeout).
CUT_SHORT_PER_HOUR = 3
CUT_SHORT_HOURS = 3
# The queues with their dead-letter queues: logical stem -> (queue key, dead-letter key, how old
# the oldest message may grow before somebody should look, in seconds).
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
SCHEDULES = {
    "DispatchMailPolls": "dispatch-mail-polls",
    "PurgeComments": "purge-comments",
    "SendDigests": "send-digests",
}
# Scheduled job (app.py's name) -> (alarm period in seconds, periods without a completed run
# before the alarm fires). Sized to the schedule: 3 missed 5-minute rounds; a daily run 2 hours
# late. CloudWatch looks back 7 days at most, so the monthly purge's is a daily check instead:
# the days since its last completed run (jobs/comment_purge.py), alarmed past PURGE_AGE_DAYS.
HEARTBEATS = {"dispatch-mail-polls": (300, 3), "send-digests": (3600, 26)}
# Their silence stops something for everyone: the cause each pages under.
HEARTBEAT_CAUSES = {
    "dispatch-mail-polls": "MailInStoppedAlarm",
    "send-digests": "DigestsStoppedAlarm",
}
PURGE_AGE_DAYS = 32
# Stream-triggered function -> (its source table's stem, the age in seconds worth a look).
# Records leave a DynamoDB stream after 24 hours: an hour leaves time to fix the cause.
STREAM_SOURCES = {"DrainOutbox": ("outbox", 3600)}
# The outbox drain runs when the outbox is written (its stream): silent while writes go on, for
# this many seconds twice in a row, is a disabled or broken trigger.
DRAIN_SILENCE_SECONDS = 900

# API latency the members would notice (p99 over 5 minutes, ms), and the API function's own.
API_LATENCY_P99_MS = 3000
API_DURATION_P99_MS = 5000
# A job whose p99 comes this close to its timeout is about to be killed mid-run.
JOB_DURATION_SHARE = 0.8
# 5xx answers of one API version in a minute that roll its deploy back (one may be an AWS
# failure that outlasted the retries; two in a minute of a canary's 10% are the version's).
API_VERSION_5XX = 2
# The API's error rate: a share of five minutes' calls answered 5xx, twice running, once there
# are calls enough to speak of a share; the function's own failures likewise.
API_ERROR_SHARE = 0.05
API_ERROR_CALLS = 20
# A quiet API's 5xx (issue 48: 5 in 5 minutes never fires for a club's few calls an hour): at
# least this share of an hour's calls, and at least this many calls.
QUIET_5XX_SHARE = 0.5
QUIET_5XX_CALLS = 2
# The share of API calls answered 4xx, over 3 consecutive 5-minute periods with calls.
API_4XX_SHARE = 0.25
# The share of enabled mailboxes whose polls fail at their own server that tickets (15 minutes
# long), and the fewest failing mailboxes that count as a share: one broken mailbox is its
# group's business (its lastError, its administrators' email), never the operator's. At the
# second share, mail in stopped for everyone: a page.
MAILBOXES_FAILING_PERCENT = 5
MAILBOXES_FAILING_AT_LEAST = 2
MAILBOXES_ALL_FAILING_PERCENT = 90
# Mail that could not be handled, as a share of the mail handled in an hour (one tenant's DNS
# is its administrators' business), and the fewest failures that count.
MAIL_FAILED_SHARE = 0.2
MAIL_FAILED_AT_LEAST = 3
MAIL_OUTCOMES = ("posted", "commented", "ignored", "rejected", "failed")
# Rejected mail whose proven sender was never told why (RejectionNoticeNotSent), by the reasons
# that are the operator's: SES refusing the notice, no group to send it as, its event told again
# after its claim of the day expired (a redrive later than the claims are kept), a DNS failure
# while proving the sender. `suppressed` is not (the address bounced or complained: telling it is what
# must not happen). One in an hour is a stranger's address SES refuses or a resolver's hiccup,
# which the mail log's `noticeSent` shows its administrators; UNTOLD_PER_HOUR in an hour is
# something shared (the SES sandbox, a sender identity gone, the function's DNS): a ticket, as a
# notice is a courtesy, not the mail itself (one a sender a day, so a few an hour is many).
UNTOLD_REASONS = ("refused", "no-group", "expired", "unchecked")
UNTOLD_PER_HOUR = 3
# Notifications stopped for everyone: this many failed and none sent, three 5 minutes running.
NOTIFICATIONS_ALL_FAILING = 5
# SES reviews an account at a 5% bounce rate and a 0.1% complaint rate, and pauses it at 10%
# and 0.5%: the tickets warn at the first pair, the pages near the pause.
SES_BOUNCE_WARNING = 0.04
SES_COMPLAINT_WARNING = 0.001
SES_BOUNCE_PAUSE_NEAR = 0.08
SES_COMPLAINT_PAUSE_NEAR = 0.004
# The SES 24-hour sending quota (200 in the sandbox, a stack parameter): a ticket, then a page.
SES_QUOTA_SHARE = 0.8
SES_QUOTA_REACHED = 0.95
# A share of the account's concurrency the stack's functions may claim before somebody looks
# (a new account has 10 in all; the usual quota is 1,000).
CONCURRENCY_SHARE = 0.8

# The causes that page (infra.paging): composite -> what it means and what to do first. Its
# members are the alarms whose `pages` names it, in the table's order.
CAUSES = {
    "ApiDownAlarm": "Members cannot use the API: a share of its calls answered 5xx (5% of five "
    "minutes' calls twice running, or half of a quiet hour's), its function failed 5% of its "
    "invocations, or it is slower than 3 s at p99. Open the member alarms to see which, then "
    "the API function's log (filter level = ERROR). Right after a deploy, CodeDeploy rolls a "
    "new version back by itself.",
    "MailInStoppedAlarm": "Mail in stopped for everyone: the mail polls' dispatch has not run "
    "for 15 minutes, or 90% of the enabled mailboxes fail at their servers. Open the member "
    "alarms; each says what to do.",
    "NotificationsStoppedAlarm": "Notifications stopped for everyone: the outbox drain is "
    "silent while the outbox is written, or for 15 minutes every notification failed and none "
    "was sent. Open the member alarms; each says what to do.",
    "DigestsStoppedAlarm": "Daily digests stopped for everyone: send-digests has not completed "
    "a run for 26 hours, or queued digests waited 4 hours (deliver-digests is not sending). "
    "Open the member alarms; each says what to do.",
    "SesSendingAtRiskAlarm": "SES is about to stop, or has stopped, every mail of the account: "
    "95% of the 24-hour quota is sent, or the bounce rate neared the 10% or the complaint rate "
    "the 0.5% at which SES pauses sending. Open the member alarms; each says what to do.",
    "OutboxLossAlarm": "Notifications and domain events are being lost: outbox records the "
    "drain gave up on, or outbox stream records an hour old (the stream keeps them 24 hours). "
    "Open the member alarms; each says what to do.",
    "DeadLettersExpiringAlarm": "Dead letters are a week old and SQS deletes them at 14 days: "
    "mailbox polls, notifications, digests or SES feedback that failed five times. Open the "
    "member alarms; each names its queue and what to do.",
}


def declared(stage: str, names: dict[str, str], tables: dict[str, str]) -> list[Alarm]:
    """The stage's alarms (`names` its queues and topics, `tables` its tables by logical id)."""
    p = f"agora-{stage}"
    every = [
        *function_alarms(p),
        *api_alarms(p),
        *run_alarms(p),
        *queue_alarms(p, names),
        *mail_alarms(p, names),
        *ses_alarms(p, names),
        *account_alarms(p, tables),
    ]
    return [found for found in every if stage in found.stages]


def function_alarms(p: str) -> list[Alarm]:
    """Each function's current version, by the minute: the same alarm rolls a deploy back and,
    once the alias has moved, watches all its work (every trigger calls the alias). Throttles
    are one account-wide alarm (account_alarms)."""
    timeouts = function_timeouts()
    # fmt: off
    return [
        *(
            alarm(f"{logical}ErrorsAlarm", f"{p}-{name}-errors",
                  metric("AWS/Lambda", "Errors", version_dimensions(logical)),
                  f"The {name} function's current version failed (an exception or a timeout). "
                  "Its log group /aws/lambda/<function> has the stack trace. During a deploy "
                  "this rolls the new version back.",
                  period=60, rollback=logical == "APIHandler", EvaluationPeriods=5,
                  DatapointsToAlarm=1)
            for logical, name in FUNCTIONS.items()
        ),
        alarm("APIHandlerDurationAlarm", f"{p}-api-duration-p99",
              p99("AWS/Lambda", "Duration", version_dimensions("APIHandler")),
              f"p99 duration of api is over {API_DURATION_P99_MS} ms. API calls are slow: look "
              "for a slow AWS dependency in the X-Ray traces (prod) or the log's request "
              "durations; a list that reads more than one page is a bug.",
              threshold=API_DURATION_P99_MS, period=60, rollback=True, EvaluationPeriods=5,
              DatapointsToAlarm=3),
        *(
            alarm(f"{logical}DurationAlarm", f"{p}-{name}-duration-p99",
                  p99("AWS/Lambda", "Duration", version_dimensions(logical)),
                  f"p99 duration of {name} is over {limit} ms. {name} runs close to its "
                  f"{timeouts[logical]} s timeout and will be killed mid-run: read its log for "
                  "what grew (mailbox size, batch size), and raise the timeout in "
                  ".chalice/config.json or make the job stop earlier.",
                  threshold=limit, period=60, EvaluationPeriods=5, DatapointsToAlarm=1)
            for logical, name in FUNCTIONS.items()
            if logical != "APIHandler"
            for limit in [int(timeouts[logical] * 1000 * JOB_DURATION_SHARE)]
        ),
        # The routing layer answers every exception with a 500, so Lambda's Errors stays 0 when
        # the API fails: the answers themselves, counted by the version that gave them.
        alarm("APIHandlerServerErrorsAlarm", f"{p}-api-version-5xx",
              agora("ServerErrors", {"Stage": p, "Version":
                                     version_dimensions("APIHandler")["ExecutedVersion"]}),
              f"The api function's current version answered {API_VERSION_5XX} or more calls in "
              "a minute with a 5xx status (metric ServerErrors of its version): the log group "
              "/aws/lambda/<function> has each one's stack trace (filter level = ERROR). During "
              "a deploy this rolls the new version back.",
              threshold=API_VERSION_5XX, period=60, rollback=True, EvaluationPeriods=5,
              DatapointsToAlarm=1),
        alarm("CheckAliasesErrorsAlarm", f"{p}-check-aliases-errors",
              metric("AWS/Lambda", "Errors", {"FunctionName": f"{p}-check-aliases"}),
              "check-aliases failed, so nothing sees whether each alias live runs $LATEST: its "
              f"log group /aws/lambda/{p}-check-aliases has the error.", period=3600),
        # Two hours running: a check that lands inside a deploy (a function updated, its alias
        # not moved yet) is no bypass (infra/alias_check.py's metric).
        alarm("AliasesBehindAlarm", f"{p}-aliases-behind", agora(alias_check.METRIC, {"Stage": p}),
              "An alias live ran other code or another environment than its function's $LATEST "
              "two hours running: a deploy that bypassed make deploy (sam deploy, aws "
              "cloudformation deploy, the console) published no version. check-aliases' log "
              "names each function. Run make deploy (docs/deploy.md: the one supported path).",
              period=3600, Statistic="Maximum", EvaluationPeriods=2, DatapointsToAlarm=2),
    ]
    # fmt: on


def api_alarms(p: str) -> list[Alarm]:
    api = {"ApiName": p, "Stage": "api"}
    twice: dict[str, Any] = {"EvaluationPeriods": 2, "DatapointsToAlarm": 2}
    # fmt: off
    return [
        alarm("Api5xxAlarm", f"{p}-api-5xx", metric("AWS/ApiGateway", "5XXError", api),
              "The API answered 5xx (500: an unexpected error, logged with its stack trace; "
              "503: AWS failures that outlasted the retries; 502/504: the function failed or "
              "timed out).", threshold=5),
        alarm("ApiErrorRateAlarm", f"{p}-api-error-rate",
              error_share(("AWS/ApiGateway", "5XXError", "Count", api),
                          "share of the calls answered 5xx", least=API_ERROR_CALLS),
              f"{API_ERROR_SHARE:.0%} or more of the API's calls (at least {API_ERROR_CALLS} in "
              "five minutes) were answered 5xx, two five minutes running: 500 is an unexpected "
              "error (its stack trace in the API's log), 503 an AWS service that failed past "
              "the retries, 502/504 the function crashed or timed out.",
              threshold=API_ERROR_SHARE, pages="ApiDownAlarm", **twice),
        alarm("ApiQuiet5xxAlarm", f"{p}-api-5xx-quiet",
              error_share(("AWS/ApiGateway", "5XXError", "Count", api),
                          "share of the hour's calls answered 5xx", 3600, QUIET_5XX_CALLS),
              f"At least {QUIET_5XX_SHARE:.0%} of an hour's API calls (and at least "
              f"{QUIET_5XX_CALLS}) were answered 5xx: a quiet API that is down, which the "
              "5-minute count never sees. Read the API function's log (filter level = ERROR).",
              threshold=QUIET_5XX_SHARE, pages="ApiDownAlarm"),
        alarm("ApiFunctionErrorRateAlarm", f"{p}-api-function-error-rate",
              error_share(("AWS/Lambda", "Errors", "Invocations",
                           {"FunctionName": {"Ref": "APIHandler"}}),
                          "share of the invocations that failed", least=API_ERROR_CALLS),
              f"The API function failed (crashed or timed out) in {API_ERROR_SHARE:.0%} or more "
              f"of its invocations (at least {API_ERROR_CALLS} in five minutes), two five "
              "minutes running. Its log group /aws/lambda/<function> has each failure.",
              threshold=API_ERROR_SHARE, pages="ApiDownAlarm", **twice),
        alarm("ApiLatencyAlarm", f"{p}-api-latency-p99", p99("AWS/ApiGateway", "Latency", api),
              f"p99 latency of the API, as API Gateway measures it, is over "
              f"{API_LATENCY_P99_MS} ms in 3 of 5 minutes. Right after a deploy, CodeDeploy "
              "rolls back by itself; otherwise compare with the api function's duration alarm "
              "(the function is slow) and look for a throttled table or a slow AWS call in the "
              "X-Ray traces.", threshold=API_LATENCY_P99_MS, period=60, pages="ApiDownAlarm",
              EvaluationPeriods=5, DatapointsToAlarm=3),
        alarm("Api4xxAlarm", f"{p}-api-4xx-share",
              metric("AWS/ApiGateway", "4XXError", api, Statistic="Average"),
              f"More than {API_4XX_SHARE:.0%} of API calls were answered 4xx for 15 minutes: a "
              "client (the console, an integration) sends what the API refuses, or somebody "
              "guesses passwords or paths. The access log (/aws/apigateway/"
              f"{p}-access) has each call's status, path and caller IP.", threshold=API_4XX_SHARE,
              ComparisonOperator="GreaterThanThreshold", EvaluationPeriods=3),
        # The stage's throttle, counted by a metric filter on the access log (infra.watch): a
        # filter's metric has no service dimension.
        alarm("ApiThrottledAlarm", f"{p}-api-429",
              metric("Agora", "ApiThrottled", {"Stage": p}),
              "API Gateway answered 429 to 10 or more calls in 5 minutes: a client passed the "
              "stage's throttle (100 requests/s, bursts of 200). The access log's `ip` and "
              "`userAgent` of status 429 name the client; raise the limit in infra/build.py "
              "(RestAPI MethodSettings) only for a legitimate one.", threshold=10),
        # Route 53's checkers (infra.disaster), whose metrics are in us-east-1 only.
        alarm("RegionOutageAlarm", f"{p}-region-outage",
              metric("AWS/Route53", "HealthCheckStatus",
                     {"HealthCheckId": {"Ref": "ApiHealthCheck"}}, Statistic="Minimum"),
              "Route 53's checkers in several regions could not read the API's OpenAPI "
              f"document for {OUTAGE_MINUTES} minutes: the API is unreachable from outside, "
              "the whole region may be down (AWS Health Dashboard). Within the region: the "
              "api-down page's alarms. A region outage: docs/deploy.md 'Region outage' (RPO 24 "
              "hours, RTO 4 hours: restore the copies in BackupRegion and make deploy there).",
              period=60, pages=ITSELF, stages=("prod",), condition="InUsEast1",
              ComparisonOperator="LessThanThreshold", EvaluationPeriods=OUTAGE_MINUTES),
    ]
    # fmt: on


def run_alarms(p: str) -> list[Alarm]:
    """Scheduled runs: a heartbeat per frequent schedule (missing data breaching, so a disabled
    rule or a run that never starts is seen), the monthly purge, runs EventBridge missed."""
    # fmt: off
    return [
        *(
            alarm(f"{''.join(part.title() for part in job.split('-'))}HeartbeatAlarm",
                  f"{p}-{job}-heartbeat", agora("ScheduledRunCompleted", {"Stage": p, "Job": job}),
                  f"{job} has not completed a run for {period * periods // 60} minutes (metric "
                  "ScheduledRunCompleted): its schedule is disabled or deleted, the function "
                  f"fails or times out before the end, or it is not invoked at all. Read {job}'s "
                  "log and its errors and schedule-failed alarms; run it once by hand from the "
                  "CLI.", period=period, pages=HEARTBEAT_CAUSES[job],
                  ComparisonOperator="LessThanThreshold", EvaluationPeriods=periods,
                  TreatMissingData="breaching")
            for job, (period, periods) in HEARTBEATS.items()
        ),
        alarm("PurgeCommentsHeartbeatAlarm", f"{p}-purge-comments-heartbeat",
              agora("PurgeRunAgeDays", {"Stage": p}, Statistic="Maximum"),
              f"The monthly purge of deleted comments has not completed for {PURGE_AGE_DAYS} "
              "days, or the daily check (send-digests' run) did not report it for two days "
              "(metric PurgeRunAgeDays, missing data breaching): its schedule is disabled, it "
              "fails or times out (its errors and schedule-failed alarms, the scheduled-failures "
              "queue). Run `python -m chalicelib.cli purge-comments`; deleted comments are kept "
              "until it runs (CONTRACT §8).", threshold=PURGE_AGE_DAYS, period=86400,
              EvaluationPeriods=2, DatapointsToAlarm=2, TreatMissingData="breaching"),
        alarm("PurgeCommentsBacklogAlarm", f"{p}-purge-comments-backlog",
              agora("CommentPurgeBacklog", {"Stage": p}, Statistic="Maximum"),
              "The monthly purge stopped at its 900 s deadline and left deleted comments (metric "
              "CommentPurgeBacklog, up to 10,000 counted; purge-comments' log says how many): it "
              "is not recorded complete, and the next run goes on from the oldest. Run `python "
              "-m chalicelib.cli purge-comments` (no deadline) to finish now; if it repeats, a "
              "month's deletions outgrow the function's timeout.", period=3600),
        *(
            alarm(f"{logical}ScheduleFailedAlarm", f"{p}-{name}-schedule-failed",
                  # the rule's fixed name (infra.monitoring)
                  metric("AWS/Events", "FailedInvocations", {"RuleName": f"{p}-{name}"}),
                  f"EventBridge could not invoke {name} on its schedule (after its own "
                  "retries): the run did not happen. Read the function's errors and throttles "
                  "alarms and its log; run it once by hand (`python -m chalicelib.cli …`) if the "
                  "missed run matters.")
            for logical, name in SCHEDULES.items()
        ),
    ]
    # fmt: on


def queue_alarms(p: str, names: dict[str, str]) -> list[Alarm]:
    """Dead letters (a queue that should stay empty), and how long messages wait."""
    move = "then move the messages back with `aws sqs start-message-move-task`"
    # fmt: off
    return [
        alarm("MailboxDeadLettersAlarm", f"{p}-mailbox-dead-letters", queued(names["dead_letters"]),
              f"{names['dead_letters']} holds messages that failed 5 times (a mailbox poll). "
              f"Read the function's log for the error, fix it, {move}."),
        alarm("NotificationDeadLettersAlarm", f"{p}-notification-dead-letters",
              queued(names["notify_dead_letters"]),
              f"{names['notify_dead_letters']} holds messages that failed 5 times (a "
              f"notification chunk). Read the function's log for the error, fix it, {move}."),
        alarm("SesFeedbackDeadLettersAlarm", f"{p}-ses-feedback-dead-letters",
              queued(names["feedback_dead_letters"]),
              f"{names['feedback_dead_letters']} holds SES bounce or complaint notifications "
              "that failed 5 times, so those addresses are not suppressed yet. Read the "
              f"ses-feedback function's log for the error, fix it, {move}."),
        alarm("DigestDeadLettersAlarm", f"{p}-digest-dead-letters",
              queued(names["digest_dead_letters"]),
              f"{names['digest_dead_letters']} holds digest batches that failed 5 times: some "
              "of their users' digests were not sent (the others were). Read deliver-digests' "
              "log ('digest failed'), fix the cause, then move the messages back with `aws sqs "
              "start-message-move-task` (a digest already sent is not sent again)."),
        alarm("OutboxDeadLettersAlarm", f"{p}-outbox-dead-letters",
              queued(names["outbox_dead_letters"]),
              f"{names['outbox_dead_letters']} holds the stream position of outbox records that "
              "drain-outbox failed to deliver after all retries: their notifications or domain "
              "events were not sent. Read drain-outbox's log for the error and fix it; then run "
              "the message's records again from the stream (they stay 24 hours) or from the "
              "outbox table.", pages="OutboxLossAlarm"),
        alarm("ScheduledFailuresAlarm", f"{p}-scheduled-failures",
              queued(names["scheduled_failures"]),
              f"{names['scheduled_failures']} holds scheduled invocations (dispatch-mail-polls, "
              "purge-comments, send-digests) that failed after their retries. Each message "
              "names the function and the error; read that function's log, fix the cause, then "
              "run the job again from the CLI (poll-mail, purge-comments, send-digests) and "
              "purge the queue."),
        alarm("InboundMailDeadLettersAlarm", f"{p}-inbound-dead-letters",
              queued(names["inbound_dead_letters"]),
              f"{names['inbound_dead_letters']} holds SES receipts of mails that receive-mail "
              "failed to handle after Lambda's retries: each message names the SES message id, "
              f"whose raw mail stays {INBOUND_DAYS} days in the inbound bucket under "
              f"{INBOUND_PREFIX}<id>. Read receive-mail's log for the error and fix it, then "
              "invoke receive-mail again with the message's event (the mail's log entry keeps "
              "it from becoming two posts)."),
        *(
            alarm(f"{logical}QueueAgeAlarm", f"{names[queue]}-age", oldest(names[queue]),
                  f"The oldest message on {names[queue]} waited more than {age // 60} minutes: "
                  "its function is failing (see its errors alarm), throttled, or capped too low "
                  "for the work. Read the function's log; raise the trigger's "
                  "MaximumConcurrency if it only keeps up too slowly.", threshold=age,
                  pages="DigestsStoppedAlarm" if logical == "Digest" else TICKET,
                  EvaluationPeriods=2)
            for logical, (queue, _, age) in QUEUES.items()
        ),
        *(
            alarm(f"{logical}DeadLetterAgeAlarm", f"{names[dead]}-age", oldest(names[dead]),
                  f"A message has sat in {names[dead]} for a week; dead letters are deleted "
                  "after 14 days. Fix the cause and move them back (`aws sqs "
                  "start-message-move-task`), or purge them on purpose.",
                  threshold=DEAD_LETTER_AGE_SECONDS, period=3600,
                  pages="DeadLettersExpiringAlarm")
            for logical, (_, dead, _) in QUEUES.items()
        ),
    ]
    # fmt: on


def mail_alarms(p: str, names: dict[str, str]) -> list[Alarm]:
    """Mail in, the outbox and its drain, notifications and domain events, digests."""
    # fmt: off
    return [
        alarm("MailboxesFailingAlarm", f"{p}-mailboxes-failing",
              mailboxes_failing(p, MAILBOXES_FAILING_AT_LEAST),
              f"At least {MAILBOXES_FAILING_PERCENT}% of the enabled mailboxes (and at least "
              f"{MAILBOXES_FAILING_AT_LEAST}) failed at their own mail servers for 15 minutes: "
              "not one group's typo (each group's administrators are told of theirs) but "
              "something shared. Read poll-mailbox's log (message = 'mailbox poll failed') for "
              "the reasons: many `timeout` or `connection` from one provider is that provider "
              "or our addresses being blocked by it; many `tls` is a certificate change; many "
              "`refused` or `dns` is name resolution in the function's network.",
              threshold=MAILBOXES_FAILING_PERCENT),
        alarm("MailboxesAllFailingAlarm", f"{p}-mailboxes-all-failing",
              mailboxes_failing(p, MAILBOXES_FAILING_AT_LEAST),
              f"{MAILBOXES_ALL_FAILING_PERCENT}% or more of the enabled mailboxes (at least 2) "
              "failed at their mail servers for 15 minutes: mail in stopped for everyone, so "
              "the cause is ours (the function's network, name resolution, our addresses "
              "blocked), not the mailboxes'. Read poll-mailbox's log (message = 'mailbox poll "
              "failed') for the reasons.", threshold=MAILBOXES_ALL_FAILING_PERCENT,
              pages="MailInStoppedAlarm"),
        alarm("MailboxPollsCutShortAlarm", f"{p}-mailbox-polls-cut-short",
              agora("MailboxPollCutShort", {"Stage": p}),
              f"Mailbox polls were cut short by the end of their run (poll-mailbox's deadline) "
              f"at least {CUT_SHORT_PER_HOUR} times an hour for {CUT_SHORT_HOURS} hours (metric "
              "MailboxPollCutShort): a mail server too slow to finish a poll within a run, or "
              "the poller slowed itself (DynamoDB or KMS throttles, a timeout too short). Read "
              "poll-mailbox's log (message = 'mailbox poll cut short') for the mailboxes: one "
              "mailbox is recorded as timing out at its third in a row (its lastError, the "
              "back-off, its administrators' email); many at once is ours: the function's "
              "duration, throttles and timeout.", threshold=CUT_SHORT_PER_HOUR, period=3600,
              EvaluationPeriods=CUT_SHORT_HOURS, DatapointsToAlarm=CUT_SHORT_HOURS),
        alarm("MailFailedAlarm", f"{p}-mail-failed",
              mail_failed(p, MAIL_OUTCOMES, MAIL_FAILED_AT_LEAST),
              f"{MAIL_FAILED_SHARE:.0%} or more of the mail handled in an hour (and at least "
              f"{MAIL_FAILED_AT_LEAST}) could not be handled (status `failed` in the mail log, "
              "metric MailHandled Outcome=failed): something shared, not one group's mailbox. "
              "Read poll-mailbox's log and the mailboxes' logs at "
              "/connector/email-to-post/{groupId}/log or /connector/email-to-comment/log.",
              threshold=MAIL_FAILED_SHARE),
        alarm("SendersUntoldAlarm", f"{p}-senders-untold",
              each_reason(p, "RejectionNoticeNotSent", UNTOLD_REASONS, 3600),
              f"{UNTOLD_PER_HOUR} or more rejected mails' senders in an hour were due a notice "
              "of why (CONTRACT §9) and were not told (metric RejectionNoticeNotSent, Reason "
              f"{', '.join(UNTOLD_REASONS)}; the dashboard shows each): `refused` is SES "
              "refusing the notice (the sandbox, an unverified or paused sender identity), "
              "`no-group` a notice of a group deleted since, `expired` a notice told again "
              "after its claim of the day expired (a redrive of the outbox later than the claims "
              "are kept), `unchecked` a DNS failure while "
              "checking the sender's DKIM (the function's name resolution). Read drain-outbox's "
              "log (`rejection notice not sent`) and poll-mailbox's and receive-mail's "
              "(`rejection notice: sender not checked`), and SES's sending status.",
              threshold=UNTOLD_PER_HOUR),
        alarm("DrainOutboxSilentAlarm", f"{p}-drain-outbox-silent",
              drain_silence(p, DRAIN_SILENCE_SECONDS),
              f"The outbox ({p}-outbox) was written but drain-outbox did not run for "
              f"{DRAIN_SILENCE_SECONDS * 2 // 60} minutes: notifications and domain events are "
              "not sent. Its stream trigger is disabled or deleted, or the function cannot "
              "start (its throttles, its role). Check the event source mapping's state (`aws "
              "lambda list-event-source-mappings`) and drain-outbox's log. (A drain that runs "
              "and fails is its errors and iterator-age alarms.)",
              pages="NotificationsStoppedAlarm", EvaluationPeriods=2, DatapointsToAlarm=2),
        # A partial-batch failure is not a Lambda error: a stuck drain only shows as records
        # growing older in the stream (24 hours, then they are gone).
        *(
            alarm(f"{logical}IteratorAgeAlarm", f"{p}-{table}-stream-iterator-age",
                  metric("AWS/Lambda", "IteratorAge", {"FunctionName": {"Ref": logical}},
                         Statistic="Maximum"),
                  f"The oldest record of the {p}-{table} stream waiting for {logical} is more "
                  f"than {seconds // 60} minutes old: the function keeps failing a record (a "
                  "partial batch failure is not a Lambda error) or is throttled. Records leave "
                  f"the stream after 24 hours. Read its log (/aws/lambda/<{logical} function>, "
                  '`filter level = "ERROR"`) and its dead-letter queue.', threshold=seconds * 1000,
                  pages="OutboxLossAlarm" if logical == "DrainOutbox" else TICKET,
                  EvaluationPeriods=2)
            for logical, (table, seconds) in STREAM_SOURCES.items()
        ),
        alarm("NotificationFailedAlarm", f"{p}-notification-failed",
              agora("NotificationFailed", {"Stage": p}),
              "Notifications could not be sent or stored (SES or DynamoDB refused): they are "
              "retried by the outbox drain, and none is sent twice. If it lasts, read "
              "drain-outbox's and deliver-notifications' logs (`notification failed`) and check "
              "SES's sending status."),
        alarm("NotificationsAllFailingAlarm", f"{p}-notifications-all-failing",
              notifications_all_failing(p, NOTIFICATIONS_ALL_FAILING),
              f"For 15 minutes every notification failed ({NOTIFICATIONS_ALL_FAILING} or more "
              "each five minutes, metric NotificationFailed) and none was sent "
              "(NotificationsSent): notifications stopped for everyone (SES refuses the sender, "
              "the quota, DynamoDB). Read deliver-notifications' and drain-outbox's logs "
              "(`notification failed`) and SES's sending status; the drain retries them.",
              pages="NotificationsStoppedAlarm", EvaluationPeriods=3, DatapointsToAlarm=3),
        alarm("EventPublishFailedAlarm", f"{p}-event-publish-failed",
              agora("EventPublishFailed", {"Stage": p}),
              "Domain events were refused by EventBridge after three tries: the outbox drain "
              "delivers them again. If it lasts, check the event bus and drain-outbox's log "
              "(`domain events not delivered`); consumers drop repeats by "
              "detail.domainEventId."),
        alarm("PutEventsFailedAlarm", f"{p}-put-events-failed",
              metric("AWS/Events", "PutEventsApproximateFailedCount"),
              "EventBridge refused PutEvents calls in this account and region (throttling or an "
              "error): domain events did not reach the organisation's systems. drain-outbox "
              "publishes them: read its log (/aws/lambda/<DrainOutbox function>, `filter "
              "message like /domain events/`), its EventPublishFailed alarm, and the account's "
              "PutEvents quota."),
        hourly(p, "digests-failed", "DigestsFailed",
               "A daily digest could not be sent to a user (the others were). deliver-digests' "
               "log (send-digests' when run from the CLI) has one 'digest failed' line per user "
               "with the error (often SES: a sandbox account, an unverified sender, the sending "
               "quota). The user's items wait for the next run."),
        hourly(p, "digest-run-stopped-early", "DigestRunsStoppedEarly",
               "The daily digest run reached its time limit before every user was queued; the "
               "rest are sent by the next run, a day late. If it repeats, raise send-digests' "
               "timeout or memory in .chalice/config.json, or run `python -m chalicelib.cli "
               "send-digests`."),
        hourly(p, "digests-left-over", "DigestsLeftOver",
               "Daily digests were not sent on their day: a batch was still on "
               f"{names['digest_queue']} when its day ended, or `send-digests` stopped at its "
               "time limit. Their items go in the next day's digest. More members with digests "
               "than AGORA_MAIL_SEND_RATE sends in a day, or deliver-digests failing (see its "
               "errors alarm): ask AWS for a higher SES sending rate and raise "
               "AGORA_MAIL_SEND_RATE."),
    ]
    # fmt: on


def hourly(p: str, kebab: str, metric_name: str, about: str) -> Alarm:
    """A ticket when one of our metrics (`metric_name`, by Stage) counts anything in an hour:
    `agora-<stage>-<kebab>`, its logical id the kebab's words titled (`digests-failed`:
    DigestsFailedAlarm)."""
    logical = "".join(word.title() for word in kebab.split("-")) + "Alarm"
    return alarm(logical, f"{p}-{kebab}", agora(metric_name, {"Stage": p}), about, period=3600)


def ses_alarms(p: str, names: dict[str, str]) -> list[Alarm]:
    """SES publishes its reputation and sending for the whole account and region, not per
    configuration set: its review, its pause, the 24-hour quota; and SNS's delivery of its
    bounces and complaints to the stack's queue."""
    # fmt: off
    return [
        alarm("SesBounceRateAlarm", f"{p}-ses-bounce-rate",
              metric("AWS/SES", "Reputation.BounceRate", Statistic="Maximum"),
              f"The account's SES bounce rate is {SES_BOUNCE_WARNING:.0%} or more; at 5% SES puts "
              "the account under review and may pause sending. Check that ses-feedback works (its "
              "dead letters, its errors): it suppresses bounced addresses. Look for a list of "
              "stale addresses that was imported.", threshold=SES_BOUNCE_WARNING, period=3600),
        alarm("SesComplaintRateAlarm", f"{p}-ses-complaint-rate",
              metric("AWS/SES", "Reputation.ComplaintRate", Statistic="Maximum"),
              f"The account's SES complaint rate reached {SES_COMPLAINT_WARNING:.1%}, where SES "
              "reviews the account (it pauses sending above 0.5%). Members mark our mail as spam: "
              "check that ses-feedback suppresses complainers and that notification volume and "
              "the unsubscribe link are as intended.", threshold=SES_COMPLAINT_WARNING,
              period=3600),
        alarm("SesQuotaAlarm", f"{p}-ses-quota",
              ses_quota_share(),
              f"SES sent {SES_QUOTA_SHARE:.0%} or more of the account's 24-hour quota (parameter "
              "SesDailyQuota): past it, every notification and digest fails. Request a higher "
              "quota in the SES console (Account dashboard), and set SesDailyQuota to it.",
              threshold=SES_QUOTA_SHARE),
        alarm("SesQuotaReachedAlarm", f"{p}-ses-quota-reached",
              ses_quota_share(),
              f"SES sent {SES_QUOTA_REACHED:.0%} or more of the account's 24-hour quota "
              "(parameter SesDailyQuota): every notification and digest past it fails. Request "
              "a higher quota in the SES console (Account dashboard), then make deploy "
              "SES_DAILY_QUOTA=<it>.", threshold=SES_QUOTA_REACHED,
              pages="SesSendingAtRiskAlarm"),
        *(
            alarm(f"Ses{kind.title()}PauseNearAlarm", f"{p}-ses-{kind}-pause-near",
                  metric("AWS/SES", f"Reputation.{kind.title()}Rate", Statistic="Maximum"),
                  f"The account's SES {kind} rate reached {threshold:.1%}; at {pause} SES pauses "
                  "the account's sending, every mail of every group. Check that ses-feedback "
                  f"suppresses (its alarms), stop any bulk sending, and read the {kind}s' "
                  "addresses in ses-feedback's log.", threshold=threshold, period=3600,
                  pages="SesSendingAtRiskAlarm")
            for kind, threshold, pause in (("bounce", SES_BOUNCE_PAUSE_NEAR, "10%"),
                                           ("complaint", SES_COMPLAINT_PAUSE_NEAR, "0.5%"))
        ),
        alarm("SesFeedbackDeliveryAlarm", f"{p}-ses-feedback-delivery-failed",
              metric("AWS/SNS", "NumberOfNotificationsFailed",
                     {"TopicName": names["feedback_topic"]}),
              f"SNS could not deliver SES bounces or complaints from {names['feedback_topic']} "
              f"to its queue: they wait in {names['feedback_undelivered']} (the subscription's "
              "redrive), and those addresses are not suppressed. Check the queue's policy (it "
              "must allow the topic) and that the queue exists; move the messages to "
              f"{names['feedback_queue']} when fixed."),
    ]
    # fmt: on


def account_alarms(p: str, tables: dict[str, str]) -> list[Alarm]:
    """The account's Lambda concurrency and throttles (one alarm, not one per function), and
    DynamoDB throttles of the stage's tables and their indexes in one Metrics Insights query (a
    request counts once when any part of it was throttled); the tables `make restore` switched
    the stack onto (parameter TableNames) are named too."""
    # fmt: off
    return [
        alarm("AccountConcurrencyAlarm", f"{p}-account-concurrency",
              concurrency_share(),
              f"The account's Lambda functions claimed {CONCURRENCY_SHARE:.0%} or more of its "
              "concurrency quota: the next surge throttles the API and every job (this stack's "
              "and any other in the account). Ask AWS for a higher 'Concurrent executions' "
              "quota (Service Quotas), or lower the SQS triggers' MaximumConcurrency.",
              threshold=CONCURRENCY_SHARE, EvaluationPeriods=2),
        alarm("AccountThrottlesAlarm", f"{p}-lambda-throttles",
              metric("AWS/Lambda", "Throttles"),
              "Lambda refused to start a function in this account: its concurrency is used up. "
              "The dashboard's 'Function errors and throttles' shows which; ask AWS for a higher "
              "'Concurrent executions' quota, or lower the SQS triggers' MaximumConcurrency (the "
              "SQS and stream triggers retry; the API answered 429 or 502)."),
        alarm("DynamoDbThrottlesAlarm", f"{p}-dynamodb-throttles",
              dynamodb_throttles(tables),
              "DynamoDB throttled requests to a table of this stage or one of its indexes (the "
              "dashboard's throttle widget names the table and the index). On-demand tables "
              "throttle when traffic more than doubles its previous peak within 30 minutes, or "
              "on a hot key: read the throttled functions' logs for the key, and pre-warm the "
              "table before a known surge."),
    ]
    # fmt: on
