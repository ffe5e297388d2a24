"""What every job shares: a deadline so that a run stops cleanly before Lambda's time limit."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from chalicelib import metrics
from chalicelib.auth import REFERENCE_PREFIX, signing_keys
from chalicelib.logs import get_logger
from chalicelib.settings import MissingSetting, get_settings

# Stop starting new work this long before Lambda would kill the function (or a tenth of the
# function's time, for short ones).
SAFETY_MARGIN_MS = 30_000


@dataclass
class Deadline:
    """`expired()` turns true when the run must stop and leave the rest for the next run."""

    remaining_ms: Callable[[], int]
    margin_ms: int = -1
    # Expired by Agora's own stop (make run's), not by a run's time running out: what it cuts
    # short is never a mailbox's doing (issue 56), so no streak is kept of it.
    stopping: bool = False

    def __post_init__(self) -> None:
        if self.margin_ms < 0:
            self.margin_ms = min(SAFETY_MARGIN_MS, self.remaining_ms() // 10)

    def expired(self) -> bool:
        return self.remaining_ms() <= self.margin_ms

    @classmethod
    def from_lambda(cls, context: Any) -> Deadline:
        if context is not None and hasattr(context, "get_remaining_time_in_millis"):
            return cls(context.get_remaining_time_in_millis)
        return cls.unbounded()

    @classmethod
    def after_seconds(cls, seconds: float) -> Deadline:
        end = time.monotonic() + seconds
        return cls(lambda: int((end - time.monotonic()) * 1000), margin_ms=0)

    @classmethod
    def unbounded(cls) -> Deadline:
        return cls(lambda: 10**12, margin_ms=0)


def require_token_secret() -> None:
    """Refuse to start, with one line naming the setting, when the token secret cannot be read.

    Every notification and digest carries an unsubscribe link signed with it: without it a mail
    job would fail once per mail (CONTRACT §2). Called before any mail is touched.
    """

    setting = get_settings().token_secret_setting
    try:
        signing_keys().keys()
    except Exception as error:
        code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
        secret_id = setting.removeprefix(REFERENCE_PREFIX)
        if code == "ResourceNotFoundException":
            raise MissingSetting(
                f"AGORA_TOKEN_SECRET: Secrets Manager has no secret {secret_id} (set "
                "AGORA_TOKEN_SECRET, or point AWS_ENDPOINT_URL at `make run`, which makes it)"
            ) from None
        if code in ("AccessDeniedException", "DecryptionFailure", "InvalidRequestException"):
            raise MissingSetting(
                f"AGORA_TOKEN_SECRET: Secrets Manager would not give {secret_id} ({code})"
            ) from None
        raise


def each_message(records: Iterable[Any], handle: Callable[[str], Any]) -> dict[str, Any]:
    """Handle each SQS record's body on its own and answer Lambda's partial batch response
    (FunctionResponseTypes ReportBatchItemFailures, infra/operations.py): only the messages that
    failed are delivered again, never the whole batch."""

    failures = []
    for record in records:
        message_id = record.to_dict().get("messageId", "")
        try:
            handle(record.body)
        except Exception:
            get_logger("jobs").exception(
                "message failed; SQS delivers it again", extra={"messageId": message_id}
            )
            failures.append({"itemIdentifier": message_id})
    return {"batchItemFailures": failures}


def heartbeat(job: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """A scheduled job's "it ran" signal: the metric ScheduledRunCompleted (dimension Job) once
    its run returns. Its alarm treats missing data as breaching (infra/alarms.py), so a disabled
    schedule, a run that never starts or one that always fails is seen, not only one that raised."""

    def decorate(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
        @functools.wraps(function)
        def run(event: Any) -> Any:
            result = function(event)
            metrics.emit("ScheduledRunCompleted", 1, Job=job)
            return result

        return run

    return decorate


class PartsFailed(Exception):
    """Some parts of a scheduled run failed after the rest was done; one line each. Raised so
    that the invocation fails: Lambda retries it and then sends it to its on-failure queue."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(f"{len(lines)} part(s) failed: " + "; ".join(lines)[:2000])
        self.lines = lines
