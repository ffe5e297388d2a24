"""CodeDeploy's PreTraffic hook (issue 38): the new version answers its health and one read
before any traffic moves, or the deploy stops; CodeDeploy is told either way. The "new version"
here is the app itself, called in process with the proxy event the hook sends (moto behind it)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from chalicelib.jobs import pre_traffic

HOOK_EVENT = {"DeploymentId": "d-1", "LifecycleEventHookExecutionId": "hook-1"}
VERSION = "arn:aws:lambda:us-east-1:123456789012:function:agora-prod-APIHandler:7"


class Context:
    aws_request_id = "pre-traffic-test"
    function_name = "agora-prod-APIHandler"
    memory_limit_in_mb = 512
    invoked_function_arn = VERSION

    def get_remaining_time_in_millis(self) -> int:
        return 20_000


class AppAsLambda:
    """Lambda's Invoke, answered by the app's handler (`answer` may stand in for it)."""

    def __init__(self, answer: Any = None) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.answer = answer

    def invoke(self, FunctionName: str, Payload: bytes) -> dict:  # noqa: N803 - boto3's names
        event = json.loads(Payload)
        self.calls.append((FunctionName, event))
        if self.answer is not None:
            return self.answer(event)
        from app import app

        return {
            "StatusCode": 200,
            "Payload": io.BytesIO(json.dumps(app(event, Context())).encode()),
        }


class CodeDeploy:
    def __init__(self) -> None:
        self.told: list[dict] = []

    def put_lifecycle_event_hook_execution_status(self, **status: str) -> dict:
        self.told.append(status)
        return {"lifecycleEventHookExecutionId": status["lifecycleEventHookExecutionId"]}


def test_a_working_version_passes_both_checks_and_codedeploy_is_told(aws):
    lambdas, codedeploy = AppAsLambda(), CodeDeploy()
    answer = pre_traffic.handle(HOOK_EVENT, lambdas, codedeploy, VERSION)
    assert answer == {"status": "Succeeded", "failures": []}
    assert codedeploy.told == [
        {"deploymentId": "d-1", "lifecycleEventHookExecutionId": "hook-1", "status": "Succeeded"}
    ]
    # The version itself, not the alias; the health call and the read.
    assert [function for function, _ in lambdas.calls] == [VERSION, VERSION]
    paths = [event["path"] for _, event in lambdas.calls]
    assert paths == ["/api/v1/en_US/openapi.json", f"/api/v1/en_US/feed/{pre_traffic.PROBE_GROUP}"]


@pytest.mark.fast
@pytest.mark.parametrize(
    ("answer", "says"),
    [
        # The read failed: a 500 (a table it cannot read, a bug).
        (
            lambda event: {
                "StatusCode": 200,
                "Payload": io.BytesIO(json.dumps({"statusCode": 500, "body": "boom"}).encode()),
            },
            "500",
        ),
        # The expected status in the wrong shape: an answer outside the envelope.
        (
            lambda event: {
                "StatusCode": 200,
                "Payload": io.BytesIO(
                    json.dumps({"statusCode": 404, "body": "<html>Not Found</html>"}).encode()
                ),
            },
            "wrong shape",
        ),
        # The version crashed at import (a missing dependency): Lambda's FunctionError.
        (
            lambda event: {
                "StatusCode": 200,
                "FunctionError": "Unhandled",
                "Payload": io.BytesIO(json.dumps({"errorMessage": "No module named x"}).encode()),
            },
            "No module named x",
        ),
    ],
)
def test_a_broken_version_fails_the_hook(answer, says):
    codedeploy = CodeDeploy()
    told = pre_traffic.handle(HOOK_EVENT, AppAsLambda(answer), codedeploy, VERSION)
    assert told["status"] == "Failed" and says in " ".join(told["failures"])
    assert [t["status"] for t in codedeploy.told] == ["Failed"]


@pytest.mark.fast
def test_a_hook_that_cannot_call_the_version_still_answers_codedeploy(monkeypatch):
    def refused(event):
        raise RuntimeError("AccessDenied: lambda:InvokeFunction")

    codedeploy = CodeDeploy()
    told = pre_traffic.handle(HOOK_EVENT, AppAsLambda(refused), codedeploy, VERSION)
    assert "AccessDenied" in told["failures"][0]
    monkeypatch.delenv(pre_traffic.VERSION_VARIABLE, raising=False)
    told = pre_traffic.handle(HOOK_EVENT, AppAsLambda(), codedeploy, None)
    assert pre_traffic.VERSION_VARIABLE in told["failures"][0]
    assert [t["status"] for t in codedeploy.told] == ["Failed", "Failed"]
