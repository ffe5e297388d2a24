"""CodeDeploy's PreTraffic hook of a prod deploy: before any call reaches the API's new version,
ask that version itself for one thing that needs no AWS (the OpenAPI document: the code imports,
routes and answers) and one read (a group's feed: the tables, the role, the settings). Anything
but the expected status and shape (the document; the envelope of a refusal) fails the hook, and
CodeDeploy keeps every call on the old version.

The new version is the stack's `APIHandler.Version` (the hook's AGORA_PRE_TRAFFIC_VERSION, set by
infra/rollout.py); the answer goes back with PutLifecycleEventHookExecutionStatus, whatever
happened, so a broken check never leaves the deployment waiting for its hour-long timeout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from chalicelib.logs import get_logger

VERSION_VARIABLE = "AGORA_PRE_TRAFFIC_VERSION"
# A group id no community has: the read must answer 404 in the envelope after asking DynamoDB.
PROBE_GROUP = "00000000-0000-4000-8000-00000000d091"


def _openapi_document(body: Any) -> bool:
    return isinstance(body, dict) and "openapi" in body and bool(body.get("paths"))


def _envelope_refusal(body: Any) -> bool:
    """The API's envelope (CONTRACT §5) of a refusal: success false, a message, no object."""
    return (
        isinstance(body, dict)
        and body.get("success") is False
        and isinstance(body.get("message"), str)
        and body.get("object") is None
    )


# (method, path, resource path, path parameters, statuses that mean the version works, the shape
# its JSON body must have): a 5xx, another status or a wrong shape fails the version.
CHECKS: tuple[
    tuple[str, str, str, dict[str, str] | None, tuple[int, ...], Callable[[Any], bool]], ...
] = (
    (
        "GET",
        "/api/v1/en_US/openapi.json",
        "/api/v1/en_US/openapi.json",
        None,
        (200,),
        _openapi_document,
    ),
    (
        "GET",
        f"/api/v1/en_US/feed/{PROBE_GROUP}",
        "/api/v1/en_US/feed/{groupId}",
        {"groupId": PROBE_GROUP},
        (404,),
        _envelope_refusal,
    ),
)


def proxy_event(
    method: str, path: str, resource: str, parameters: dict[str, str] | None
) -> dict[str, Any]:
    """An API Gateway proxy event as the API's stage sends it."""
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": {"Accept": "application/json", "X-Correlation-Id": "pre-traffic"},
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": parameters,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": resource,
            "httpMethod": method,
            "path": f"/api{path}",
            "stage": "api",
            "requestId": "pre-traffic",
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "body": None,
        "isBase64Encoded": False,
    }


def check(invoke: Callable[[dict[str, Any]], dict[str, Any]]) -> list[str]:
    """Each check's failure, one line each (none: the version may take traffic)."""
    failures = []
    for method, path, resource, parameters, expected, shaped in CHECKS:
        try:
            answer = invoke(proxy_event(method, path, resource, parameters))
        except Exception as error:  # noqa: BLE001 - every failure is the hook's answer
            failures.append(f"{method} {path}: {type(error).__name__}: {error}")
            continue
        status = answer.get("statusCode")
        text = str(answer.get("body") or answer.get("errorMessage") or "")
        if status not in expected:
            failures.append(f"{method} {path}: {status} (expected {expected}): {text[:300]}")
        elif not shaped(_json(text)):
            failures.append(f"{method} {path}: {status} of the wrong shape: {text[:300]}")
    return failures


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def lambda_invoker(client: Any, function: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Calls `function` (a version's ARN) synchronously; a crash is its own answer."""

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        result = client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
        payload = json.loads(result["Payload"].read() or b"{}")
        if result.get("FunctionError"):
            return {"statusCode": None, "errorMessage": payload.get("errorMessage", payload)}
        return dict(payload)

    return invoke


def handle(
    event: dict[str, Any],
    lambda_client: Any = None,
    codedeploy: Any = None,
    version: str | None = None,
) -> dict[str, Any]:
    """Run the checks against the new version and tell CodeDeploy; answers what was told."""
    from chalicelib import aws

    version = version or os.environ.get(VERSION_VARIABLE, "")
    if not version:
        failures = [f"{VERSION_VARIABLE} is not set: the hook does not know the new version"]
    else:
        invoker = lambda_invoker(lambda_client or aws.client("lambda"), version)
        failures = check(invoker)
    status = "Failed" if failures else "Succeeded"
    log = get_logger("deploy")
    for line in failures:
        log.error("pre-traffic check failed", extra={"check": line, "version": version})
    (codedeploy or aws.client("codedeploy")).put_lifecycle_event_hook_execution_status(
        deploymentId=event["DeploymentId"],
        lifecycleEventHookExecutionId=event["LifecycleEventHookExecutionId"],
        status=status,
    )
    log.info("pre-traffic hook", extra={"status": status, "version": version})
    return {"status": status, "failures": failures}
