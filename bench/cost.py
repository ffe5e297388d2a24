"""`make cost`: what a month of Agora costs on AWS for three community sizes, into docs/benchmarks.md.

Prices come from bench/prices.json (published on-demand list prices with their date and source).
DynamoDB work per call comes from bench/results.json (`make bench`'s measured figures) where a
figure exists, and the scheduled work from `make simulate`'s day of 10,000 mailboxes (polls, KMS
Decrypts) and of 100,000 digests (the fan-out's workers); how many mailboxes one invocation polls
and how many digest workers send come from the code. Every other quantity is an
assumption written in TRAFFIC or SIZES below, and the page shows them beside the table. Nothing here reaches the network: the suite runs it
(tests/fast/test_cost.py) and checks that the page holds what it writes.

`python -m bench.cost` rewrites the page's cost block; `--check` only says whether it is current.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report import read_section, write_section

BENCH_DIR = Path(__file__).resolve().parent
PRICES_PATH = BENCH_DIR / "prices.json"
RESULTS_PATH = BENCH_DIR / "results.json"
PAGE = BENCH_DIR.parent / "docs" / "benchmarks.md"
INFRA_PATH = BENCH_DIR.parent / "infra" / "prod.yaml"
BLOCK_START = "<!-- cost:start -->"
BLOCK_END = "<!-- cost:end -->"
MINUTES_PER_MONTH = 30 * 24 * 60
LAMBDA_GB = 0.5  # .chalice/config.json: lambda_memory_size 512


@dataclass(frozen=True)
class Size:
    name: str
    members: int
    groups: int
    mailboxes: int
    posts: int
    comments: int
    events: int
    # Daily digests a member gets a month on top of TRAFFIC's mails (0: TRAFFIC's mix alone).
    digests_per_member: float = 0


SIZES = [
    Size("small club", 60, 3, 1, 2_000, 6_000, 300),
    Size("10,000 members", 10_000, 1_000, 100, 100_000, 300_000, 10_000),
    Size("100,000 members", 100_000, 10_000, 10_000, 1_000_000, 3_000_000, 100_000),
]
# The same large community where every member takes the daily digest (`make simulate`'s day of
# 100,000 digests, every day): 30 digests a member a month, TRAFFIC's instant mail besides.
EVERY_MEMBER_DIGEST = Size(
    "100,000 members, all on daily digests",
    100_000, 10_000, 10_000, 1_000_000, 3_000_000, 100_000, digests_per_member=30,
)  # fmt: skip
COLUMNS = [*SIZES, EVERY_MEMBER_DIGEST]

# Assumed traffic (not measured): (key, value, what it says).
TRAFFIC: list[tuple[str, float, str]] = [
    ("active_share", 0.3, "share of members who use the site in a month"),
    ("sign_ins", 4, "sign-ins per active member a month"),
    ("single_reads", 40, "single-record reads (a post, an event) per active member a month"),
    ("page_reads", 40, "list pages (posts, events, comments, calendar) per active member a month"),
    ("writes", 3, "writes (post, comment, event, settings) per active member a month"),
    (
        "mails_out",
        8,
        "mails sent per member a month (digests and notifications; see the last column)",
    ),
    ("mails_in", 20, "mails posted through each mailbox a month"),
    ("write_rru", 2, "read units of one write (its group and its author)"),
    ("write_wru", 3, "write units of one write (the record, an index entry, a counter)"),
    ("api_ms", 40, "Lambda milliseconds of one API call, before its DynamoDB requests"),
    ("ddb_ms", 8, "Lambda milliseconds per DynamoDB request"),
    ("cold_share", 0.02, "share of API calls that start a container (billed init)"),
    ("poll_ms", 600, "Lambda milliseconds of a POP3 poll that finds no new mail (TLS, login)"),
    (
        "poll_invocation_ms",
        2000,
        "Lambda milliseconds of an invocation polling its mailboxes side by side (the slowest)",
    ),
    ("mail_ms", 150, "Lambda milliseconds per mail posted"),
    ("sqs_ms", 20, "Lambda milliseconds per SQS SendMessageBatch of the dispatch"),
    ("mails_per_job", 10, "mails sent by one notification job (one SQS message, one invocation)"),
    ("digest_share", 0.5, "share of the mails sent that are daily digests"),
    ("mail_out_ms", 60, "Lambda milliseconds per mail sent"),
    ("log_bytes", 900, "CloudWatch log bytes per invocation (our JSON line, Lambda's 3 lines)"),
    (
        "poll_wru",
        6,
        "write units of one mailbox poll: the lease's put and delete, the mailbox's update, its "
        "enabled-index entry, its due-index entry moved (delete and put)",
    ),
    (
        "poll_log_bytes",
        800,
        "log bytes of one mailbox poll: its 'mailbox polled' line and its MailHandled metric "
        "(an EMF line, about 300 bytes), beside its invocation's",
    ),
    ("item_kb", 1.0, "mean stored item size in KB, indexes included"),
    ("sqs_idle_receives", 650_000, "empty SQS long polls a month per queue Lambda reads (4)"),
    ("access_log_bytes", 700, "API Gateway access-log bytes per API call (one JSON line)"),
    (
        "ses_event_bytes",
        3000,
        "log bytes of a mail's SES events (sent and delivered, a JSON event each: "
        "infra/mail_events.py)",
    ),
    ("recipient_log_bytes", 300, "log bytes per notification recipient (sent, or why not)"),
    (
        "audit_item_kb",
        0.5,
        "stored KB of one audit entry (one per write and per mail posted, kept 400 days, written "
        "in the write's transaction: 2 write units)",
    ),
    (
        "kms_requests_per_table",
        8_640,
        "KMS requests a month per table for DynamoDB's encryption at rest (its AWS managed key: "
        "about one a table every 5 minutes)",
    ),
    (
        "push_share",
        0.5,
        "share of the mail in that arrives by push (SES receiving, its own line; the polls are "
        "the all-POP3 day's, make simulate's push days show what push saves of them)",
    ),
    ("push_mail_kb", 60, "KB of a pushed mail, stored 14 days in the inbound bucket"),
]
# Custom metrics are billed per name and dimension values: those of chalicelib/metrics.py that
# take more than one value, and how many (ServerErrors: the live version and a deploy's new one).
SERVER_ERROR_VERSIONS = 2

# Figures of bench/results.json the model reads, and what stands in when one is missing.
MEASURED_DEFAULTS = {
    "ddb_requests_per_call_event_get": 1.0,
    "ddb_requests_per_call_posts_page": 2.0,
    "ddb_requests_per_call_events_page": 2.0,
    "ddb_requests_per_call_deleted_page": 2.0,
    "ddb_requests_per_call_calendar_month": 2.0,
    "ddb_items_events_page_10k_over_100": 15.0,
    "ddb_items_comments_page_10k_over_100": 25.0,
    "ddb_requests_per_mail": 3.0,
    # A good sign-in: the Query of the user and one conditional UpdateItem of the attempt
    # (tests/api/test_request_counts.py, issue 28).
    "ddb_requests_sign_in": 2.0,
    "mail_dispatch_10k_ddb_requests": 4.0,
    "cold_start_over_stack": 250.0,
    # `make simulate`: a day of 10,000 mailboxes. Unmeasured, the fixed rhythm: every mailbox
    # polled every 5 minutes, each poll decrypting its password.
    "mail_day_polls": 2_880_000.0,
    "mail_day_kms_calls": 2_880_000.0,
    # `make simulate`: 100,000 digests through the fan-out. Unmeasured, the bound the issue sets.
    "digest_100k_s": 1.1 * 100_000 / 14,
}
# The size of `make simulate`'s days.
SIMULATED_MAILBOXES = 10_000
SIMULATED_DIGESTS = 100_000
PAGE_CALLS = [
    "ddb_requests_per_call_posts_page",
    "ddb_requests_per_call_events_page",
    "ddb_requests_per_call_deleted_page",
    "ddb_requests_per_call_calendar_month",
]


def load_prices(path: Path = PRICES_PATH) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def load_measured(path: Path = RESULTS_PATH) -> tuple[dict[str, float], list[str]]:
    """The figures the model reads, and the names of those that were not measured."""
    found: dict[str, float] = {}
    if path.exists():
        for figure in json.loads(path.read_text(encoding="utf-8"))["figures"]:
            if figure["name"] in MEASURED_DEFAULTS and figure["value"] is not None:
                found[figure["name"]] = float(figure["value"])
    missing = [name for name in MEASURED_DEFAULTS if name not in found]
    return {**MEASURED_DEFAULTS, **found}, missing


def code_figures() -> dict[str, float]:
    """What the code sets: mailboxes one poll invocation takes (1 where the poller takes one), the
    digest batch, and the digest workers (billed while they wait for their moments)."""
    from chalicelib.jobs import mail_poll
    from chalicelib.mail.outgoing import SENDERS
    from chalicelib.services.notify.digests import BATCH_SIZE

    return {
        "mailboxes_per_message": float(getattr(mail_poll, "MAILBOXES_PER_MESSAGE", 1)),
        "digest_batch": float(BATCH_SIZE),
        "digest_workers": float(SENDERS["deliver-digests"].workers or 1),
    }


def infra_counts(path: Path = INFRA_PATH) -> dict[str, int]:
    """What the prod template bills by the month: alarms by the metrics each reads (a metric-math
    alarm pays for each of its metrics), composite alarms, secrets, keys, tables; and the custom
    metrics the code emits (`custom_metrics`)."""
    from infra import yaml_text

    resources = (
        yaml_text.load(path.read_text(encoding="utf-8"))["Resources"] if path.exists() else {}
    )
    kinds = [r.get("Type") for r in resources.values()]
    alarm_metrics = sum(
        max(1, sum("MetricStat" in m for m in r["Properties"].get("Metrics", [])))
        for r in resources.values()
        if r.get("Type") == "AWS::CloudWatch::Alarm"
    )
    return {
        "alarms": kinds.count("AWS::CloudWatch::Alarm"),
        "alarm_metrics": alarm_metrics,
        "composite_alarms": kinds.count("AWS::CloudWatch::CompositeAlarm"),
        "secrets": kinds.count("AWS::SecretsManager::Secret"),
        "keys": kinds.count("AWS::KMS::Key"),
        "tables": kinds.count("AWS::DynamoDB::Table"),
        "metrics": custom_metrics(),
    }


def custom_metrics() -> int:
    """The custom metrics a stage emits: each of chalicelib/metrics.py's names once per value of
    its own dimension (MailHandled's outcomes, MailboxPollFailed's reasons, ScheduledRunCompleted's
    jobs, ServerErrors' versions, RejectionNoticeNotSent's reasons), and check-aliases' AliasesBehind."""
    import re

    from chalicelib.mail.pop3 import FAILURE_REASONS
    from chalicelib.metrics import METRICS
    from chalicelib.services.mail_in.notices import NOT_SENT_REASONS
    from infra.alarms import MAIL_OUTCOMES
    from infra.alias_check import METRIC

    app = (BENCH_DIR.parent / "app.py").read_text(encoding="utf-8")
    values = {
        "MailHandled": len(MAIL_OUTCOMES),
        "MailboxPollFailed": len(FAILURE_REASONS),
        "ScheduledRunCompleted": len(set(re.findall(r'heartbeat\("([a-z-]+)"\)', app))),
        "ServerErrors": SERVER_ERROR_VERSIONS,
        "RejectionNoticeNotSent": len(NOT_SENT_REASONS),
    }
    return sum(values.get(name, 1) for name in METRICS) + len({METRIC})


def monthly_cost(
    size: Size,
    prices: dict[str, Any],
    measured: dict[str, float],
    infra: dict[str, int],
    code: dict[str, float] | None = None,
    push_share: float | None = None,
) -> dict[str, float]:
    """Dollars a month by line; `lambda_compute` at x86 prices, `lambda_compute_arm` beside it.
    `code`: what the code sets (`code_figures()`, unless a test says); `push_share`: the share of
    mail in by push instead of TRAFFIC's (make simulate's push days, with their polls)."""
    p = {name: price["usd"] for name, price in prices["prices"].items()}
    t = {key: value for key, value, _ in TRAFFIC}
    m = measured
    active = size.members * t["active_share"]

    # API calls and their DynamoDB work.
    sign_ins = active * t["sign_ins"]
    singles = active * t["single_reads"]
    pages = active * t["page_reads"]
    writes = active * t["writes"]
    api_calls = sign_ins + singles + pages + writes
    page_requests = sum(m[name] for name in PAGE_CALLS) / len(PAGE_CALLS)
    page_items = (
        m["ddb_items_events_page_10k_over_100"] + m["ddb_items_comments_page_10k_over_100"]
    ) / 2
    # Strongly consistent reads of items under 4 KB: one read unit per item read (a bound).
    rru = singles * m["ddb_requests_per_call_event_get"] + pages * page_items
    rru += sign_ins * 1 + writes * t["write_rru"]
    wru = writes * t["write_wru"] + sign_ins * max(m["ddb_requests_sign_in"] - 1, 0)
    api_requests = (
        sign_ins * m["ddb_requests_sign_in"]
        + singles * m["ddb_requests_per_call_event_get"]
        + pages * page_requests
        + writes * (t["write_rru"] + 1)
    )
    api_ms = api_calls * t["api_ms"] + api_requests * t["ddb_ms"]
    api_ms += api_calls * t["cold_share"] * m["cold_start_over_stack"]

    # Mail in: the 5-minute dispatch Queries what is due; the polls of a simulated day (mail
    # follows, failures back off), several mailboxes to an SQS message and an invocation.
    code = code or code_figures()
    dispatches = MINUTES_PER_MONTH / 5
    fleet = size.mailboxes / SIMULATED_MAILBOXES
    polls = m["mail_day_polls"] * 30 * fleet
    per_message = code["mailboxes_per_message"]
    poll_invocations = polls / per_message
    mails_in = size.mailboxes * t["mails_in"]
    dispatch_requests = max(1.0, m["mail_dispatch_10k_ddb_requests"] * size.mailboxes / 10_000)
    # The due index is read where mailboxes are due: about one item per poll (half a unit per
    # 4 KB, eventually consistent), at least one unit a dispatch.
    rru += max(dispatches, polls * t["item_kb"] / 8)
    # A poll: GetItem (its settings), then its writes (t["poll_wru"]: the lease's PutItem and
    # DeleteItem, the mailbox's UpdateItem and the index entries it moves).
    rru += polls
    wru += polls * t["poll_wru"]
    mail_requests = mails_in * m["ddb_requests_per_mail"]
    rru += mail_requests / 2
    wru += mail_requests / 2
    send_batches = math.ceil(poll_invocations / dispatches / 10) * dispatches
    dispatch_ms = dispatches * dispatch_requests * t["ddb_ms"] + send_batches * t["sqs_ms"]
    # Side by side: an invocation lasts as long as its slowest poll.
    poll_ms = t["poll_ms"] if per_message <= 1 else t["poll_invocation_ms"]
    mail_ms = poll_invocations * poll_ms + mails_in * t["mail_ms"] + dispatch_ms
    # Each message: sent ten a request, received and deleted.
    sqs_requests = send_batches + poll_invocations * 2
    # A warm container decrypts a mailbox's password once (the simulated day counts the calls).
    kms_requests = m["mail_day_kms_calls"] * 30 * fleet

    # Mail out: the digests through the fan-out (batches of users on a queue, workers paced by
    # the one sending rate: billed while they wait, as the simulated day's), instant
    # notifications in jobs of a few mails each, first on the sending clock (no wait of their
    # own unless a burst queues them). Every mail takes its moment with one UpdateItem.
    instants = size.members * t["mails_out"] * (1 - t["digest_share"])
    digests = size.members * (size.digests_per_member or t["mails_out"] * t["digest_share"])
    mails_out = digests + instants
    digest_worker_ms = m["digest_100k_s"] * code["digest_workers"] * 1000 / SIMULATED_DIGESTS
    digest_messages = digests / code["digest_batch"]
    jobs = instants / t["mails_per_job"]
    digest_runs = 30
    # send (ten a request for the digests), receive, delete; the idle polls of four queues.
    sqs_requests += jobs * 3 + digest_messages * 2.1 + 4 * t["sqs_idle_receives"]
    instant_ms = t["mail_out_ms"] + t["ddb_ms"]
    out_ms = digests * max(t["mail_out_ms"], digest_worker_ms) + instants * instant_ms
    out_ms += digest_runs * 1000
    rru += mails_out * 2  # the member and their subscription
    wru += mails_out * 2  # the digest or notification state, the sending clock

    # The audit log (CONTRACT §12): an entry per write and per mail posted, in the same
    # transaction (a transactional write costs two units), kept 400 days.
    audited = writes + mails_in
    wru += audited * 2

    invocations = api_calls + dispatches + poll_invocations + jobs + digest_messages
    invocations += digest_runs + 1  # +1 purge
    invocations += 30 * 24  # check-aliases, hourly
    gb_seconds = (api_ms + mail_ms + out_ms) / 1000 * LAMBDA_GB
    log_gb = invocations * t["log_bytes"] / 1e9
    # Each poll's own lines besides its invocation's: "mailbox polled" and its MailHandled metric.
    log_gb += polls * t["poll_log_bytes"] / 1e9
    # The API's access log: one line per call.
    log_gb += api_calls * t["access_log_bytes"] / 1e9
    # Each mail's SES events, and each instant notification's line per recipient.
    log_gb += (mails_out * t["ses_event_bytes"] + instants * t["recipient_log_bytes"]) / 1e9

    stored_items: float = (
        size.members * 3 + size.groups * 4 + size.posts + size.comments + size.events
    )
    stored_items += size.mailboxes * (1 + 12 * t["mails_in"] * 2)  # a year of mail log + markers
    storage_gb = stored_items * t["item_kb"] / 1e6
    storage_gb += audited * 400 / 30 * t["audit_item_kb"] / 1e6
    # Encryption at rest with the AWS managed key: KMS requests by table, no key fee.
    table_kms = infra["tables"] * t["kms_requests_per_table"]

    return {
        "dynamodb_requests": rru / 1e6 * p["dynamodb_read_request_unit_million"]
        + wru / 1e6 * p["dynamodb_write_request_unit_million"],
        "dynamodb_storage": storage_gb * p["dynamodb_storage_gb_month"],
        "dynamodb_pitr": storage_gb * p["dynamodb_pitr_gb_month"],
        "api_gateway": api_calls / 1e6 * p["api_gateway_rest_request_million"],
        "lambda_requests": invocations / 1e6 * p["lambda_request_million"],
        "lambda_compute": gb_seconds * p["lambda_gb_second_x86"],
        "lambda_compute_arm": gb_seconds * p["lambda_gb_second_arm"],
        "sqs": sqs_requests / 1e6 * p["sqs_request_million"],
        "ses": mails_out / 1000 * p["ses_thousand_mails"],
        "cloudwatch_logs": log_gb
        * (p["cloudwatch_logs_ingested_gb"] + p["cloudwatch_logs_stored_gb_month"]),
        "cloudwatch_metrics_alarms": infra["metrics"] * p["cloudwatch_metric_month"]
        + infra["alarm_metrics"] * p["cloudwatch_alarm_month"]
        + infra["composite_alarms"] * p["cloudwatch_composite_alarm_month"],
        "secrets_manager": infra["secrets"] * p["secrets_manager_secret_month"]
        + api_calls * t["cold_share"] / 1e4 * p["secrets_manager_api_10k"],
        "kms": infra["keys"] * p["kms_key_month"]
        + (kms_requests + table_kms) / 1e4 * p["kms_request_10k"],
        "eventbridge": writes / 1e6 * p["eventbridge_event_million"],
        "mail_push": _mail_push(
            mails_in * (t["push_share"] if push_share is None else push_share), p, t
        ),
        # Not dollars: what the table's notes show.
        "_api_calls": api_calls,
        "_mails_out": mails_out,
        "_invocations": invocations,
        "_gb_seconds": gb_seconds,
        "_polls": polls,
        "_poll_invocations": poll_invocations,
        "_kms_requests": kms_requests,
        "_table_kms_requests": table_kms,
    }


LINES = [
    ("dynamodb_requests", "DynamoDB on-demand requests"),
    ("dynamodb_storage", "DynamoDB storage (the audit log's 400 days included)"),
    ("dynamodb_pitr", "DynamoDB point-in-time recovery"),
    ("api_gateway", "API Gateway (REST)"),
    ("lambda_requests", "Lambda invocations"),
    ("lambda_compute", "Lambda GB-seconds (x86)"),
    ("sqs", "SQS"),
    ("ses", "SES"),
    ("cloudwatch_logs", "CloudWatch Logs"),
    ("cloudwatch_metrics_alarms", "CloudWatch metrics and alarms"),
    ("secrets_manager", "Secrets Manager"),
    ("kms", "KMS"),
    ("eventbridge", "EventBridge"),
    ("mail_push", "SES receiving and S3 (mail by push)"),
]


def month_total(costs: dict[str, float]) -> float:
    """The month's x86 total of `monthly_cost`'s lines (the table's bold row)."""
    return sum(costs[key] for key, _ in LINES)


def _mail_push(pushed: float, p: dict[str, float], t: dict[str, float]) -> float:
    """SES receiving (a mail and its 256 KB chunks), the raw mail's PUT, GET and 14 days in S3,
    and the two invocations (verdict, receive) each pushed mail adds."""
    chunks = pushed * math.ceil(t["push_mail_kb"] / 256)
    stored_gb = pushed * t["push_mail_kb"] / 1e6 * 14 / 30
    return (
        pushed / 1000 * (p["ses_receive_thousand_mails"] + p["s3_put_thousand"])
        + chunks / 1000 * p["ses_receive_thousand_chunks"]
        + pushed / 1000 * p["s3_get_thousand"]
        + stored_gb * p["s3_storage_gb_month"]
        + 2 * pushed / 1e6 * p["lambda_request_million"]
    )


def dollars(value: float) -> str:
    if value < 0.1:
        return f"${value:.4f}"
    return f"${value:,.2f}" if value < 1000 else f"${value:,.0f}"


def count(value: float) -> str:
    return f"{value:,.0f}"


def cost_block(
    prices: dict[str, Any],
    measured: dict[str, float],
    missing: list[str],
    infra: dict[str, int],
) -> str:
    costs = [monthly_cost(size, prices, measured, infra) for size in COLUMNS]
    lines = [
        _sources(prices, missing, infra),
        "",
        *_cost_table(costs),
        "",
        *_sizes_table(),
        "",
        "| assumption | value |",
        "|---|---:|",
        *(f"| {what} | {value:,g} |" for _, value, what in TRAFFIC),
        "",
        *_alternatives(prices["hosted_alternatives"]),
    ]
    return "\n".join(lines)


def _sources(prices: dict[str, Any], missing: list[str], infra: dict[str, int]) -> str:
    """Where the prices and the measured work come from, and what CloudWatch bills."""
    return (
        f"Prices of {prices['taken_on']} ({prices['region']}, on-demand list prices, no free "
        "tier: `bench/prices.json`); DynamoDB work per call, and the polls, KMS calls and digest "
        "workers of a simulated day (`make simulate`), from `bench/results.json`"
        + (f" (not measured, assumed: {', '.join(f'`{n}`' for n in missing)})" if missing else "")
        + f". CloudWatch bills {infra['metrics']} custom metrics (`chalicelib/metrics.py`, by "
        f"dimension value), {infra['alarms']} alarms reading {infra['alarm_metrics']} metrics "
        f"and {infra['composite_alarms']} composite alarms (the prod template)."
    )


# The counts under the cost table: label -> the key of `monthly_cost`'s answer.
COUNTS = (
    ("mails sent", "_mails_out"),
    ("API calls", "_api_calls"),
    ("mailbox polls", "_polls"),
    ("poll invocations", "_poll_invocations"),
    ("KMS requests (mailbox passwords)", "_kms_requests"),
    ("KMS requests (tables' encryption)", "_table_kms_requests"),
    ("Lambda invocations", "_invocations"),
    ("Lambda GB-seconds", "_gb_seconds"),
)


def _cost_table(costs: list[dict[str, float]]) -> list[str]:
    """Each cost line and the totals by size, then what was counted."""
    lines = [
        "| monthly cost | " + " | ".join(size.name for size in COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for key, label in LINES:
        lines.append(f"| {label} | " + " | ".join(dollars(c[key]) for c in costs) + " |")
    x86 = [sum(c[key] for key, _ in LINES) for c in costs]
    arm = [
        total - c["lambda_compute"] + c["lambda_compute_arm"]
        for total, c in zip(x86, costs, strict=True)
    ]
    members = [v / size.members for v, size in zip(x86, COLUMNS, strict=True)]
    lines.append("| **total (x86)** | " + " | ".join(f"**{dollars(v)}**" for v in x86) + " |")
    lines.append("| total (arm64) | " + " | ".join(dollars(v) for v in arm) + " |")
    lines.append("| per member | " + " | ".join(dollars(v) for v in members) + " |")
    for label, key in COUNTS:
        lines.append(f"| {label} | " + " | ".join(count(c[key]) for c in costs) + " |")
    return lines


def _sizes_table() -> list[str]:
    lines = [
        "| size | members | groups | mailboxes | posts | comments | events |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for size in SIZES:
        lines.append(
            f"| {size.name} | {count(size.members)} | {count(size.groups)} | "
            f"{count(size.mailboxes)} | {count(size.posts)} | {count(size.comments)} | "
            f"{count(size.events)} |"
        )
    return lines


def _alternatives(alternatives: dict[str, Any]) -> list[str]:
    """The hosted alternatives with a citable list price, or where none was found."""
    if not alternatives["found"]:
        return [
            "Hosted alternatives (" + "; ".join(alternatives["searched"]) + "): no citable "
            "list price was found, so none is compared here (see `bench/prices.json`)."
        ]
    lines = [
        "| hosted alternative | plan | members | per month | source |",
        "|---|---|---:|---:|---|",
    ]
    for found in alternatives["found"]:
        lines.append(
            f"| {found['name']} | {found['plan']} | {found['members']} | "
            f"{dollars(found['usd_month'])} | {found['source']} ({found['taken_on']}) |"
        )
    return lines


def current_block() -> str:
    measured, missing = load_measured()
    return cost_block(load_prices(), measured, missing, infra_counts())


def page_block(path: Path = PAGE) -> str | None:
    return read_section(path, BLOCK_START, BLOCK_END)


def write_page(block: str, path: Path = PAGE) -> bool:
    return write_section(path, BLOCK_START, BLOCK_END, block)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cost", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is not current")
    arguments = parser.parse_args(argv)
    block = current_block()
    if arguments.check:
        if page_block() != block:
            print(
                "docs/benchmarks.md's cost table is not current: run `make cost`", file=sys.stderr
            )
            return 1
        return 0
    print(block)
    if not write_page(block):
        print(
            f"{PAGE.relative_to(BENCH_DIR.parent)} has no {BLOCK_START} … {BLOCK_END} block",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
