"""CodeDeploy's PreTraffic hook of a prod deploy: before any call reaches the API's new version,
ask that version itself, as the stack's canary account (services/canary.py), what a member's
first minute asks. Unsigned: the OpenAPI document (the code imports, routes and answers) and a
feed's read (the tables, the role, the settings). Signed in (its password is the stack's canary
secret, the only secret the hook may read): the group list, a post, a group's events and posts,
then one write it undoes: it makes its own feed key, revokes it, and checks the revoke took (a
second revoke finds none). Anything but the expected status and shape (the envelope and its key
fields) fails the hook, and CodeDeploy keeps every call on the old version.

The canary's account is made by `migrate`, which make deploy runs after the stack update, so
after the hook: on the one deploy that brings the canary (or a stack whose migrate never ran),
no account exists yet. A refused sign-in is therefore asked of the serving version (the alias)
too: refused there as well, the account is not there yet, and the signed-in checks are skipped
(logged); signed in there, the new version's refusal fails it.

The new version is the stack's `APIHandler.Version` (the hook's AGORA_PRE_TRAFFIC_VERSION, set by
infra/rollout.py); the answer goes back with PutLifecycleEventHookExecutionStatus, whatever
happened, so a broken check never leaves the deployment waiting for its hour-long timeout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chalicelib import aws
from chalicelib.logs import get_logger
from chalicelib.services import canary

VERSION_VARIABLE = "AGORA_PRE_TRAFFIC_VERSION"
# The alias every caller uses (infra.operations.ALIAS): during PreTraffic, the serving version.
SERVING_ALIAS = "live"
# Ids nothing has: each read must answer 404 in the envelope after asking DynamoDB.
PROBE_GROUP = "00000000-0000-4000-8000-00000000d091"
PROBE_POST = "00000000-0000-4000-8000-00000000d092"
LOGIN = "/api/v1/en_US/security/login"
FEED_KEY = "/api/v1/en_US/user/{userId}/feed-key"

Invoke = Callable[[dict[str, Any]], dict[str, Any]]
Shape = Callable[[Any], bool]


def _openapi_document(body: Any) -> bool:
    return isinstance(body, dict) and "openapi" in body and bool(body.get("paths"))


def _envelope(body: Any, success: bool) -> bool:
    return (
        isinstance(body, dict)
        and body.get("success") is success
        and isinstance(body.get("message"), str)
        and isinstance(body.get("errors"), list)
    )


def _refusal(key: str | None = None) -> Shape:
    """The API's envelope (CONTRACT §5, §6) of a refusal: success false, a message, no object,
    and, for an unknown id, one error naming its parameter."""

    def shaped(body: Any) -> bool:
        if not (_envelope(body, False) and body.get("object") is None):
            return False
        return key is None or [e.get("key") for e in body["errors"]] == [key]

    return shaped


def _answer(fields: Callable[[Any], bool]) -> Shape:
    """The envelope of a success whose `object` has the key fields `fields` checks."""
    return lambda body: _envelope(body, True) and fields(body.get("object"))


def _token(found: Any) -> bool:
    return isinstance(found, str) and len(found) > 20


def _group_page(found: Any) -> bool:
    return isinstance(found, dict) and "offset" in found and isinstance(found.get("groups"), list)


def _feed_key(found: Any) -> bool:
    return (
        isinstance(found, dict)
        and found.get("type") == "feedKey"
        and found.get("userId") == canary.USER_ID
        and isinstance(found.get("key"), str)
        and bool(found["key"])
    )


def _revoked(was_there: bool) -> Shape:
    return _answer(
        lambda found: (
            isinstance(found, dict)
            and found.get("type") == "feedKeyRevoked"
            and found.get("userId") == canary.USER_ID
            and found.get("revoked") is was_there
        )
    )


@dataclass(frozen=True)
class Probe:
    """One call: (method, path, the route's resource path and its parameters), the statuses
    that mean the version works and the shape its JSON body must have."""

    method: str
    path: str
    resource: str
    parameters: dict[str, str] | None
    expected: tuple[int, ...]
    shaped: Shape
    body: dict[str, Any] | None = None
    token: str | None = None
    # What a wrong shape means, when it means more (the write not undone).
    wrong: str = "of the wrong shape"

    def signed_in(self, token: str) -> Probe:
        return Probe(**{**self.__dict__, "token": token})


CHECKS: tuple[Probe, ...] = (
    Probe(
        "GET",
        "/api/v1/en_US/openapi.json",
        "/api/v1/en_US/openapi.json",
        None,
        (200,),
        _openapi_document,
    ),
    Probe(
        "GET",
        f"/api/v1/en_US/feed/{PROBE_GROUP}",
        "/api/v1/en_US/feed/{groupId}",
        {"groupId": PROBE_GROUP},
        (404,),
        _refusal(),
    ),
)
# Signed in as the canary: one read of each resource a member without a role may ask for.
READS: tuple[Probe, ...] = (
    Probe(
        "GET",
        "/api/v1/en_US/group/list",
        "/api/v1/en_US/group/list",
        None,
        (200,),
        _answer(_group_page),
    ),
    Probe(
        "GET",
        f"/api/v1/en_US/post/{PROBE_POST}",
        "/api/v1/en_US/post/{postId}",
        {"postId": PROBE_POST},
        (404,),
        _refusal("postId"),
    ),
    Probe(
        "GET",
        f"/api/v1/en_US/post/list/{PROBE_GROUP}",
        "/api/v1/en_US/post/list/{groupId}",
        {"groupId": PROBE_GROUP},
        (404,),
        _refusal("groupId"),
    ),
    Probe(
        "GET",
        f"/api/v1/en_US/event/list/upcoming/{PROBE_GROUP}",
        "/api/v1/en_US/event/list/upcoming/{groupId}",
        {"groupId": PROBE_GROUP},
        (404,),
        _refusal("groupId"),
    ),
)
_OWN_FEED_KEY = (FEED_KEY.replace("{userId}", canary.USER_ID), FEED_KEY, {"userId": canary.USER_ID})
# The write and its undoing: the canary's own feed key made, revoked, and gone.
WRITE = Probe("GET", *_OWN_FEED_KEY, (200,), _answer(_feed_key))
UNDO = (
    Probe("DELETE", *_OWN_FEED_KEY, (200,), _revoked(True)),
    Probe("DELETE", *_OWN_FEED_KEY, (200,), _revoked(False), wrong="still there: not undone"),
)


def sign_in(password: str) -> Probe:
    body = {"email": canary.EMAIL, "password": password}
    return Probe("POST", LOGIN, LOGIN, None, (200,), _answer(_token), body=body)


def _refused(invoke: Invoke, password: str) -> bool:
    """The version answers the canary's sign-in with the refusal of a wrong password."""
    refused = Probe("POST", LOGIN, LOGIN, None, (401,), _refusal(), body=sign_in(password).body)
    return ask(invoke, refused)[1] is None


def proxy_event(probe: Probe) -> dict[str, Any]:
    """An API Gateway proxy event as the API's stage sends it."""
    headers = {"Accept": "application/json", "X-Correlation-Id": "pre-traffic"}
    if probe.body is not None:
        headers["Content-Type"] = "application/json"
    if probe.token is not None:
        headers["X-Auth"] = probe.token
    return {
        "resource": probe.resource,
        "path": probe.path,
        "httpMethod": probe.method,
        "headers": headers,
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": probe.parameters,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": probe.resource,
            "httpMethod": probe.method,
            "path": f"/api{probe.path}",
            "stage": "api",
            "requestId": "pre-traffic",
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "body": None if probe.body is None else json.dumps(probe.body),
        "isBase64Encoded": False,
    }


def ask(invoke: Invoke, probe: Probe) -> tuple[Any, str | None]:
    """(the answer's JSON body, None) or (None, the failure's line)."""
    where = f"{probe.method} {probe.path}"
    try:
        answer = invoke(proxy_event(probe))
    except Exception as error:  # noqa: BLE001 - every failure is the hook's answer
        return None, f"{where}: {type(error).__name__}: {error}"
    status = answer.get("statusCode")
    text = str(answer.get("body") or answer.get("errorMessage") or "")
    if status not in probe.expected:
        return None, f"{where}: {status} (expected {probe.expected}): {text[:300]}"
    body = _json(text)
    if not probe.shaped(body):
        return None, f"{where}: {status} {probe.wrong}: {text[:300]}"
    return body, None


def check(invoke: Invoke, password: str | None = None, serving: Invoke | None = None) -> list[str]:
    """Each check's failure, one line each (none: the version may take traffic). `password`:
    the canary's (None: the signed-in checks are not run); `serving`: the version taking the
    traffic now, asked only when the new one refuses the canary's sign-in."""
    failures = [failure for probe in CHECKS if (failure := ask(invoke, probe)[1])]
    if password is not None:
        failures += signed_in_checks(invoke, password, serving)
    return failures


def signed_in_checks(invoke: Invoke, password: str, serving: Invoke | None) -> list[str]:
    signed_in, failure = ask(invoke, sign_in(password))
    if failure is not None:
        # A refusal in the envelope from both versions: no account yet (module docstring).
        if serving is not None and _refused(invoke, password) and _refused(serving, password):
            get_logger("deploy").warning(
                "pre-traffic: the canary cannot sign in on the serving version either: its "
                "account is made by this deploy's migrate; signed-in checks skipped",
                extra={"check": failure},
            )
            return []
        return [failure]
    token = signed_in["object"]
    failures = [failure for probe in READS if (failure := ask(invoke, probe.signed_in(token))[1])]
    made, failure = ask(invoke, WRITE.signed_in(token))
    if failure is not None:
        return [*failures, failure]
    for probe in UNDO:
        if (failure := ask(invoke, probe.signed_in(token))[1]) is not None:
            return [*failures, failure]
    return failures


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def lambda_invoker(client: Any, function: str) -> Invoke:
    """Calls `function` (a version's ARN) synchronously; a crash is its own answer."""

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        result = client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
        payload = json.loads(result["Payload"].read() or b"{}")
        if result.get("FunctionError"):
            return {"statusCode": None, "errorMessage": payload.get("errorMessage", payload)}
        return dict(payload)

    return invoke


def serving_alias(version: str) -> str:
    """The alias of a version's function: `…:function:name:7` → `…:function:name:live`."""
    return f"{version.rsplit(':', 1)[0]}:{SERVING_ALIAS}"


def canary_password(secrets: Callable[[], Any]) -> str:
    """The canary's password: the stack's canary secret (AGORA_CANARY_SECRET, its name)."""
    secret_id = os.environ.get(canary.SECRET_VARIABLE, "")
    if not secret_id:
        raise RuntimeError(f"{canary.SECRET_VARIABLE} is not set: the hook cannot sign in")
    return str(secrets().get_secret_value(SecretId=secret_id)["SecretString"])


def handle(
    event: dict[str, Any],
    lambda_client: Any = None,
    codedeploy: Any = None,
    version: str | None = None,
    secrets: Any = None,
) -> dict[str, Any]:
    """Run the checks against the new version and tell CodeDeploy; answers what was told."""

    version = version or os.environ.get(VERSION_VARIABLE, "")
    failures = _failures(version, lambda_client or aws.client("lambda"), secrets)
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


def _failures(version: str, lambda_client: Any, secrets: Any) -> list[str]:
    """The unsigned checks run whatever the secret; a secret that cannot be read fails too."""
    from chalicelib import aws

    if not version:
        return [f"{VERSION_VARIABLE} is not set: the hook does not know the new version"]
    failures, password = [], None
    try:
        password = canary_password(lambda: secrets or aws.client("secretsmanager"))
    except Exception as error:  # noqa: BLE001 - every failure is the hook's answer
        failures.append(f"the canary's secret: {type(error).__name__}: {error}")
    invoke = lambda_invoker(lambda_client, version)
    serving = lambda_invoker(lambda_client, serving_alias(version))
    return [*check(invoke, password, serving), *failures]
