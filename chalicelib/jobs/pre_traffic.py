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

Within its own timeout (issue 57: against a hanging version it reported after 81 s, past its
60 s, and CodeDeploy then waited out the hook's hour with the stack locked): the checks stop at
BUDGET_S, each call waits at most CONNECT_S + CALL_S and is never retried, no call starts that
could not end by the deadline, a call that timed out ends the checks (a hanging version answers
none), and CodeDeploy is told within REPORT_S after.
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

# The hook's timeout is 60 s (.chalice/config.json): checks by BUDGET_S, then the report.
BUDGET_S = 40.0
CONNECT_S = 2.0
CALL_S = 10.0
REPORT_S = 14.0  # CodeDeploy's client: two tries of CONNECT_S + 5 s at most

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
            "identity": {"sourceIp": canary.HOOK_SOURCE},
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


class Deadline:
    """The time the checks have left; a call that timed out spends it (the version hangs)."""

    def __init__(self, budget_s: float) -> None:
        import time

        self._clock = time.monotonic
        self.until = self._clock() + budget_s
        # What one call may wait for its answer (the version's client's read timeout).
        self.call_s = min(CALL_S, budget_s / 2)
        self.timed_out: str | None = None

    def left(self) -> float:
        return self.until - self._clock()

    def bounded(self, invoke: Invoke) -> Invoke:
        """`invoke`, refused when it could not end by the deadline or a call timed out."""

        def call(event: dict[str, Any]) -> dict[str, Any]:
            if self.timed_out is not None:
                raise TimeoutError(f"not run: {self.timed_out}")
            if self.left() < CONNECT_S + self.call_s:  # it could end past the deadline
                raise TimeoutError("not run: the hook's deadline (it must answer CodeDeploy)")
            try:
                return invoke(event)
            except Exception as error:
                if "timeout" in type(error).__name__.lower() or "timed out" in str(error):
                    self.timed_out = f"an earlier call timed out ({type(error).__name__})"
                raise

        return call


def bounded_client(service: str, read_timeout: float, attempts: int = 1) -> Any:
    """A client whose call ends within CONNECT_S + read_timeout per try, `attempts` tries."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=CONNECT_S,
        read_timeout=max(read_timeout, 1.0),
        retries={"total_max_attempts": attempts},
    )
    return boto3.session.Session(botocore_session=aws.session()).client(service, config=config)


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
    budget_s: float = BUDGET_S,
) -> dict[str, Any]:
    """Run the checks against the new version within `budget_s` and tell CodeDeploy; answers
    what was told."""

    deadline = Deadline(budget_s)
    version = version or os.environ.get(VERSION_VARIABLE, "")
    if lambda_client is None:
        lambda_client = bounded_client("lambda", deadline.call_s)
    if secrets is None:
        secrets = bounded_client("secretsmanager", 5.0)
    failures = _failures(version, lambda_client, secrets, deadline)
    status = "Failed" if failures else "Succeeded"
    log = get_logger("deploy")
    for line in failures:
        log.error("pre-traffic check failed", extra={"check": line, "version": version})
    if codedeploy is None:
        codedeploy = bounded_client("codedeploy", 5.0, attempts=2)
    codedeploy.put_lifecycle_event_hook_execution_status(
        deploymentId=event["DeploymentId"],
        lifecycleEventHookExecutionId=event["LifecycleEventHookExecutionId"],
        status=status,
    )
    log.info("pre-traffic hook", extra={"status": status, "version": version})
    return {"status": status, "failures": failures}


def _failures(version: str, lambda_client: Any, secrets: Any, deadline: Deadline) -> list[str]:
    """The unsigned checks run whatever the secret; a secret that cannot be read fails too."""
    if not version:
        return [f"{VERSION_VARIABLE} is not set: the hook does not know the new version"]
    failures, password = [], None
    try:
        password = canary_password(lambda: secrets)
    except Exception as error:  # noqa: BLE001 - every failure is the hook's answer
        failures.append(f"the canary's secret: {type(error).__name__}: {error}")
    invoke = deadline.bounded(lambda_invoker(lambda_client, version))
    serving = deadline.bounded(lambda_invoker(lambda_client, serving_alias(version)))
    found = [*check(invoke, password, serving), *failures]
    # One line for the checks a timeout or the deadline left out, not one per check.
    not_run = [line for line in found if ": TimeoutError: not run:" in line]
    if not_run:
        found = [line for line in found if line not in not_run]
        found.append(f"{len(not_run)} check(s) {not_run[0].split(': TimeoutError: ', 1)[1]}")
    return found
