"""boto3 clients, made on first use (nothing at import: cold start) with short timeouts.

Endpoint and region come from botocore's own variables (AWS_ENDPOINT_URL, AWS_DEFAULT_REGION).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, cast

from chalicelib.domain.ports.bus import PutEventsAnswer

_lock = threading.Lock()
# What other modules keep from AWS (PynamoDB connections, secrets), forgotten with the clients.
# They register themselves, so this module imports none of them (no import cycle).
_forgetters: list[Callable[[], None]] = []


# botocore is imported where a client is made (botocore.config alone adds 75 ms to `import app`,
# bench/hidden_imports.py --cost): a route that never calls AWS never loads it.
@functools.cache
def client_config(service: str = "") -> Any:
    from botocore.config import Config

    if service == "events":
        # Domain events go out after the API call's work is done and must not hold it up: one
        # quick try each, services/event_bus.py retries a bounded number of times itself.
        return Config(connect_timeout=1, read_timeout=2, retries={"total_max_attempts": 1})
    # API Gateway gives up after 29 s; botocore's defaults wait 60 s per try.
    return Config(
        connect_timeout=2, read_timeout=5, retries={"max_attempts": 3, "mode": "standard"}
    )


@functools.cache
def _data_loader() -> Any:
    from botocore.loaders import create_loader

    return create_loader()


def session() -> Any:
    """A new botocore session that shares one data loader with every other.

    botocore sessions are not thread-safe, so PynamoDB keeps one per connection and thread, and
    each boto3 client here has its own. A session's loader parses botocore's JSON (the endpoint
    rules, the service's model) on first use: without sharing, every table's first request on a
    cold start paid that again, a tenth of a second or more each. The loader holds only those
    read-only models, so sharing it across threads is safe.
    """
    import botocore.session

    made = botocore.session.get_session()
    made.register_component("data_loader", _data_loader())
    return made


_clients: dict[str, Any] = {}


def client(service: str, endpoint: str | None = None) -> Any:
    """The service's client, made once (`endpoint`: at that address rather than botocore's)."""
    key = f"{service} {endpoint}" if endpoint else service
    found = _clients.get(key)
    if found is not None:
        return found
    with _lock:
        if key not in _clients:
            import boto3

            _clients[key] = boto3.session.Session(botocore_session=session()).client(
                service, endpoint_url=endpoint, config=client_config(service)
            )
        return _clients[key]


def reset() -> None:
    """Forget every client and PynamoDB connection (tests and `make run` move the endpoint)."""
    with _lock:
        _clients.clear()
    # PynamoDB's connections (store/base.py) and cached secrets register with `on_reset`.
    for forget in list(_forgetters):
        forget()


def send_batches(queue_name: str, bodies: list[str], what: str) -> None:
    """Send `bodies` to the queue, ten a request (SQS's SendMessageBatch limit); raises when SQS
    refuses any, naming them as `what` ("notification chunk(s)")."""
    sqs = client("sqs")
    queue_url = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
    for start in range(0, len(bodies), 10):
        batch = bodies[start : start + 10]
        response = sqs.send_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "MessageBody": body} for i, body in enumerate(batch)],
        )
        if response.get("Failed"):
            raise RuntimeError(f"SQS refused {len(response['Failed'])} {what}")


def put_events(entries: list[dict[str, str]]) -> PutEventsAnswer:
    """One PutEvents request; EventBridge's answer (its `FailedEntryCount` says what to retry)."""
    return cast(PutEventsAnswer, dict(client("events").put_events(Entries=entries)))


class QueueSender:
    """Sends message bodies to one SQS queue, ten a request (a fan-out of notification chunks)."""

    def __init__(self, queue_name: str, what: str) -> None:
        self.queue_name = queue_name
        self.what = what

    def send(self, bodies: list[str]) -> None:
        send_batches(self.queue_name, bodies, self.what)


def on_reset(forget: Callable[[], None]) -> Callable[[], None]:
    """Have `reset()` call `forget` too (a cache of what was read through a client)."""
    _forgetters.append(forget)
    return forget


# --- what an AWS failure means to a caller ---------------------------------------------------------

# Error codes of a request AWS refused for load (botocore retries these before giving up).
_THROTTLING_CODES = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TransactionInProgressException",
    "LimitExceededException",
    "RequestTimeout",
    "RequestTimeoutException",
    "InternalServerError",
    "InternalFailure",
    "ServiceUnavailable",
    "KMSInternalException",
}
# Why a transaction's item was cancelled when AWS refused it for load.
_THROTTLED_CANCELLATIONS = {"ThrottlingError", "ProvisionedThroughputExceeded"}


def cause_of(error: BaseException) -> BaseException:
    """The botocore error under a PynamoDB one (PynamoDB wraps it as `cause`)."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error


def error_code(error: BaseException) -> str:
    return (getattr(cause_of(error), "response", None) or {}).get("Error", {}).get("Code", "")


def cancellation_codes(error: BaseException) -> list[str]:
    """The per-item reasons of a cancelled transaction ("" for the items that were fine)."""
    # PynamoDB keeps them parsed on its own error: the `response` of the ClientError it raises
    # holds only `Error`, not `CancellationReasons`.
    parsed = getattr(cause_of(error), "cancellation_reasons", None)
    if parsed:
        return [reason.code if reason is not None else "" for reason in parsed]
    raw = (getattr(cause_of(error), "response", None) or {}).get("CancellationReasons", [])
    return [r.get("Code", "") if r.get("Code") != "None" else "" for r in raw]


def is_cancelled_by_race(error: BaseException) -> bool:
    """A transaction cancelled because another one was writing the same items at the same time
    (`TransactionConflict`), not because of its own conditions: worth running again as it was."""
    if error_code(error) != "TransactionCanceledException":
        return False
    codes = [code for code in cancellation_codes(error) if code]
    return bool(codes) and all(code == "TransactionConflict" for code in codes)


def is_unavailable(error: BaseException) -> bool:
    """True when AWS throttled, failed on its side (5xx) or did not answer in time, after
    botocore's own retries: the request may succeed if sent again (CONTRACT §6: 503)."""
    from botocore.exceptions import BotoCoreError, ClientError

    cause = cause_of(error)
    if isinstance(cause, ClientError):
        response = cause.response or {}
        code = response.get("Error", {}).get("Code", "")
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        if code == "TransactionCanceledException":
            codes = [c for c in cancellation_codes(error) if c]
            return bool(codes) and all(c in _THROTTLED_CANCELLATIONS for c in codes)
        return code in _THROTTLING_CODES or status >= 500
    # Connect and read timeouts, connection resets, an endpoint that does not answer.
    return isinstance(cause, BotoCoreError)
