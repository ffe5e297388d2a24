"""The Lambda runtime, as far as Agora can tell: run as

    python -I -S bootstrap.py TASK_ROOT COMPILED_DIR RESULT_FD

with exactly the function's environment (tests/rehearsal/lambda_service.py builds it). Like
Lambda's Python runtime it imports `_HANDLER` once (the cold start), then answers invocations one
after the other in the same process (a warm container): each request is a JSON line on stdin
(`event`, `request_id`, `timeout_ms`). On RESULT_FD, JSON lines: `{"ready": true}` once the
handler is imported (the init phase is over: an invocation's time starts when it is read), then
for each invocation `{"call": …}` as each AWS call is made (for the policy check, whether or not
the invocation ends in time) and `{"answer": …}`: the handler's result or its error as Lambda
reports it. An invocation past its `timeout_ms` gets no answer: lambda_service kills the
process, as Lambda ends an execution environment at its timeout. The function's own output (its
log lines, its EMF metrics) goes to stdout and stderr, as to CloudWatch Logs.

`-I -S`: no site-packages, no PYTHONPATH, no user site; the code comes from TASK_ROOT, the
extracted deployment.zip, alone, except COMPILED_DIR: the zip's compiled packages are built for
Lambda's Python (3.12) and cannot load in this one, so the same pinned versions are taken from
the test environment (lambda_service.compiled_stand_ins). Only the standard library is imported
here before the handler.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
import uuid

TASK_ROOT, COMPILED, RESULT_FD = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path[:0] = [COMPILED, TASK_ROOT]
os.chdir(TASK_ROOT)

RESULTS = os.fdopen(RESULT_FD, "w", buffering=1)
_WRITING = threading.Lock()  # a handler's threads make calls side by side: one line each


def _send(message: dict) -> None:
    with _WRITING:
        RESULTS.write(json.dumps(message) + "\n")


def _plain(value, depth=0):
    """An AWS call's parameters as JSON can hold them (bytes and deep values summarised)."""
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()} if depth < 8 else "…"
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value] if depth < 8 else "…"
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def _record_calls() -> None:
    """Every AWS call the function makes, whichever client makes it (boto3's or PynamoDB's):
    botocore's one way out, wrapped before the handler is imported."""
    import botocore.client

    send = botocore.client.BaseClient._make_api_call

    def recorded(client, operation_name, api_params):
        model = client.meta.service_model
        call = {
            "service": model.endpoint_prefix,
            "signing_name": model.signing_name,
            "operation": operation_name,
            "params": _plain(api_params),
        }
        if operation_name == "SendRawEmail":  # IAM's ses:FromAddress: the raw message's From
            from email.parser import BytesHeaderParser
            from email.utils import parseaddr

            headers = BytesHeaderParser().parsebytes(bytes(api_params["RawMessage"]["Data"]))
            call["from_address"] = parseaddr(str(headers.get("From", "")))[1]
        _send({"call": call})
        return send(client, operation_name, api_params)

    botocore.client.BaseClient._make_api_call = recorded


class Context:
    """Lambda's context object."""

    def __init__(self, request_id: str, timeout_ms: int) -> None:
        name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.aws_request_id = request_id
        self.function_name = name
        self.function_version = os.environ["AWS_LAMBDA_FUNCTION_VERSION"]
        self.invoked_function_arn = (
            f"arn:aws:lambda:{os.environ['AWS_REGION']}:123456789012:function:{name}:live"
        )
        self.memory_limit_in_mb = int(os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"])
        self.log_group_name = os.environ["AWS_LAMBDA_LOG_GROUP_NAME"]
        self.log_stream_name = os.environ["AWS_LAMBDA_LOG_STREAM_NAME"]
        self.identity = None
        self.client_context = None
        self._ends = time.monotonic() + timeout_ms / 1000

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._ends - time.monotonic()) * 1000))


def _error(error: BaseException) -> dict:
    """What Lambda's Python runtime reports (and logs) for an exception."""
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    print(f"[ERROR] {type(error).__name__}: {error}\n{''.join(lines)}", file=sys.stderr, flush=True)
    return {"errorType": type(error).__name__, "errorMessage": str(error)}


def main() -> None:
    _record_calls()
    module_name, _, function_name = os.environ["_HANDLER"].rpartition(".")
    try:
        module = __import__(module_name)
        handler = getattr(module, function_name)
        init_error = None
    except Exception as error:  # Runtime.ImportModuleError: every invocation fails with it
        init_error = _error(error)
    sys.stdout.flush()
    sys.stderr.flush()
    _send({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        os.environ["_X_AMZN_TRACE_ID"] = f"Root=1-{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:24]}"
        answer: dict = {}
        if init_error is not None:
            answer["error"] = init_error
        else:
            try:
                context = Context(request["request_id"], request["timeout_ms"])
                answer["result"] = json.loads(
                    json.dumps(handler(request["event"], context), default=str)
                )
            except Exception as error:
                answer["error"] = _error(error)
        sys.stdout.flush()
        sys.stderr.flush()
        _send({"answer": answer})


if __name__ == "__main__":
    main()
