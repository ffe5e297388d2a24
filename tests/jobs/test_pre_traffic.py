"""CodeDeploy's PreTraffic hook (issues 38, 48): the new version answers its health, a read, and,
signed in as the stack's canary, a read of each resource and a write it undoes, before any
traffic moves, or the deploy stops; CodeDeploy is told either way. The "new version" here is the
app itself, called in process with the proxy event the hook sends (moto behind it); a fault
passed to the fake Lambda stands in for a broken version's answer to one call."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from chalicelib.jobs import migrate, pre_traffic
from chalicelib.services import canary
from tests.infra.test_privileges import allowed, recorder  # noqa: F401
from tests.support import REPO_ROOT

TOKEN_SECRET_ARN = (
    "arn:aws:secretsmanager:us-east-1:123456789012:secret:agora-dev-token-secret-AbCdEf"
)

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
    """Lambda's Invoke, answered by the app's handler (`answer` may stand in for it; `fault`
    may answer one call instead of the app: a proxy answer, or None to let the app answer)."""

    def __init__(self, answer: Any = None, fault: Any = None) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.answer = answer
        self.fault = fault

    def invoke(self, FunctionName: str, Payload: bytes) -> dict:  # noqa: N803 - boto3's names
        event = json.loads(Payload)
        self.calls.append((FunctionName, event))
        if self.answer is not None:
            return self.answer(event)
        from app import app

        faulty = self.fault(FunctionName, event) if self.fault else None
        answered = faulty if faulty is not None else app(event, Context())
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(answered).encode())}


class CodeDeploy:
    def __init__(self) -> None:
        self.told: list[dict] = []

    def put_lifecycle_event_hook_execution_status(self, **status: str) -> dict:
        self.told.append(status)
        return {"lifecycleEventHookExecutionId": status["lifecycleEventHookExecutionId"]}


SECRET = "agora-prod-canary-secret"
SERVING = "arn:aws:lambda:us-east-1:123456789012:function:agora-prod-APIHandler:live"
KEY_PATH = f"/api/v1/en_US/user/{canary.USER_ID}/feed-key"


@pytest.fixture
def secrets(aws, monkeypatch):
    """The stack's canary secret, named to the functions as the stack names it."""
    from chalicelib import aws as agora_aws

    client = agora_aws.client("secretsmanager")
    client.create_secret(Name=SECRET, SecretString="a-generated-canary-password-0123456789")
    monkeypatch.setenv(canary.SECRET_VARIABLE, SECRET)
    return client


@pytest.fixture
def canary_account(community, secrets):
    """A community, and the canary account the stack's migrate function made."""
    community.group("garden")
    community.load()
    answer = migrate.handle_invocation(None, secrets)
    assert answer["done"] and "created" in answer["lines"][-1], answer
    return secrets


def proxy_answer(status: int, body: Any) -> dict:
    return {"statusCode": status, "headers": {}, "body": json.dumps(body)}


def hook(lambdas: AppAsLambda, secrets: Any) -> tuple[dict, CodeDeploy]:
    codedeploy = CodeDeploy()
    told = pre_traffic.handle(HOOK_EVENT, lambdas, codedeploy, VERSION, secrets)
    assert [t["status"] for t in codedeploy.told] == [told["status"]]
    return told, codedeploy


def test_a_working_version_passes_every_check_and_undoes_its_write(canary_account):
    from chalicelib.store.feed_keys import FeedKeyRepository

    lambdas = AppAsLambda()
    told, codedeploy = hook(lambdas, canary_account)
    assert told == {"status": "Succeeded", "failures": []}
    assert codedeploy.told == [
        {"deploymentId": "d-1", "lifecycleEventHookExecutionId": "hook-1", "status": "Succeeded"}
    ]
    # The version itself, never the serving alias: it signed in.
    assert {function for function, _ in lambdas.calls} == {VERSION}
    calls = [(event["httpMethod"], event["path"]) for _, event in lambdas.calls]
    assert calls == [
        ("GET", "/api/v1/en_US/openapi.json"),
        ("GET", f"/api/v1/en_US/feed/{pre_traffic.PROBE_GROUP}"),
        ("POST", "/api/v1/en_US/security/login"),
        ("GET", "/api/v1/en_US/group/list"),
        ("GET", f"/api/v1/en_US/post/{pre_traffic.PROBE_POST}"),
        ("GET", f"/api/v1/en_US/post/list/{pre_traffic.PROBE_GROUP}"),
        ("GET", f"/api/v1/en_US/event/list/upcoming/{pre_traffic.PROBE_GROUP}"),
        ("GET", KEY_PATH),
        ("DELETE", KEY_PATH),
        ("DELETE", KEY_PATH),
    ]
    # The write is undone: the canary has no feed key left.
    assert FeedKeyRepository().of_user(canary.USER_ID) is None


def test_a_version_whose_read_answers_500_fails(canary_account):
    def post_read_fails(function, event):
        if event["resource"] == "/api/v1/en_US/post/{postId}":
            return proxy_answer(500, {"success": False, "message": "boom", "errors": []})
        return None

    told, _ = hook(AppAsLambda(fault=post_read_fails), canary_account)
    assert told["status"] == "Failed"
    assert told["failures"] == [
        f"GET /api/v1/en_US/post/{pre_traffic.PROBE_POST}: 500 (expected (404,)): "
        '{"success": false, "message": "boom", "errors": []}'
    ]


def test_a_version_whose_revoke_leaves_the_key_fails_as_not_undone(canary_account):
    from chalicelib.store.feed_keys import FeedKeyRepository

    revokes: list[str] = []

    def revoke_answers_but_keeps_the_key(function, event):
        if event["httpMethod"] == "DELETE" and not revokes:
            revokes.append(event["path"])
            revoked = {"type": "feedKeyRevoked", "userId": canary.USER_ID, "revoked": True}
            return proxy_answer(
                200, {"success": True, "message": "", "errors": [], "object": revoked}
            )
        return None

    told, _ = hook(AppAsLambda(fault=revoke_answers_but_keeps_the_key), canary_account)
    assert told["status"] == "Failed"
    assert len(told["failures"]) == 1 and "not undone" in told["failures"][0]
    # The second revoke (the app's own) is what removed the key the faulty one left.
    assert FeedKeyRepository().of_user(canary.USER_ID) is None


@pytest.mark.parametrize(
    ("resource", "answer"),
    [
        # The group list's status, in the envelope, without its key fields.
        ("/api/v1/en_US/group/list", {"success": True, "message": "", "errors": [], "object": []}),
        # The write answered, but another user's key: the shape is the envelope, the field wrong.
        (
            pre_traffic.FEED_KEY,
            {
                "success": True,
                "message": "",
                "errors": [],
                "object": {"type": "feedKey", "userId": "someone-else", "key": "k"},
            },
        ),
        # A sign-in answered outside the envelope.
        ("/api/v1/en_US/security/login", "a-token-not-in-an-envelope"),
    ],
)
def test_a_version_answering_the_wrong_shape_fails(canary_account, resource, answer):
    def wrong_shape(function, event):
        return proxy_answer(200, answer) if event["resource"] == resource else None

    told, _ = hook(AppAsLambda(fault=wrong_shape), canary_account)
    assert told["status"] == "Failed"
    assert any("wrong shape" in line for line in told["failures"]), told


def test_the_canary_refused_by_the_new_version_only_fails_it(canary_account):
    def new_version_refuses(function, event):
        if function == VERSION and event["resource"] == pre_traffic.LOGIN:
            return proxy_answer(401, {"success": False, "message": "no", "errors": [{}]})
        return None

    lambdas = AppAsLambda(fault=new_version_refuses)
    told, _ = hook(lambdas, canary_account)
    assert told["status"] == "Failed" and "401" in told["failures"][0]
    logins = [f for f, e in lambdas.calls if e["resource"] == pre_traffic.LOGIN]
    assert logins == [VERSION, VERSION, SERVING]


def test_before_migrate_made_the_account_the_signed_in_checks_wait(community, secrets):
    """The deploy that brings the canary runs its migrate after the hook: both versions refuse
    the sign-in, and the version is judged on the unsigned checks."""
    community.load()
    lambdas = AppAsLambda()
    told, _ = hook(lambdas, secrets)
    assert told == {"status": "Succeeded", "failures": []}
    logins = [f for f, e in lambdas.calls if e["resource"] == pre_traffic.LOGIN]
    assert logins == [VERSION, VERSION, SERVING] and len(lambdas.calls) == 5


def test_migrate_makes_the_canary_once_with_the_secrets_password_and_no_role(community, secrets):
    from chalicelib.auth import verify_password
    from chalicelib.store.users import UserRecord

    community.group("garden")
    community.load()
    first = migrate.handle_invocation(None, secrets)["lines"][-1]
    again = migrate.handle_invocation(None, secrets)["lines"][-1]
    assert "created" in first and "nothing changed" in again
    user = UserRecord.get(canary.USER_ID)
    assert user.memberships == {}
    assert verify_password(user.password_hash, "a-generated-canary-password-0123456789")
    assert [u.id for u in UserRecord.scan() if u.email == canary.EMAIL] == [canary.USER_ID]
    # A rotated secret: the account takes the new password, and still no role.
    secrets.put_secret_value(SecretId=SECRET, SecretString="a-rotated-canary-password-9876543210")
    assert "password set" in migrate.handle_invocation(None, secrets)["lines"][-1]
    user = UserRecord.get(canary.USER_ID)
    assert verify_password(user.password_hash, "a-rotated-canary-password-9876543210")
    assert user.memberships == {}


def test_migrate_without_a_canary_secret_makes_no_account(community, monkeypatch):
    from chalicelib.store.users import UserRecord

    community.load()
    monkeypatch.delenv(canary.SECRET_VARIABLE, raising=False)
    assert migrate.handle_invocation(None)["done"]
    assert [u for u in UserRecord.scan() if u.email == canary.EMAIL] == []


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


def test_the_hook_reads_the_canary_secret_and_nothing_else(canary_account, recorder):  # noqa: F811
    recorder.calls.clear()
    told, _ = hook(AppAsLambda(), canary_account)
    assert told["status"] == "Succeeded"
    # Its own AWS calls only: the API's (in process here) are the API's grant's business.
    own = {c for c in recorder.calls if c[0].startswith("secretsmanager:")}
    assert own == {
        (
            "secretsmanager:GetSecretValue",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:agora-dev-canary-secret-AbCdEf",
        )
    }
    assert all(allowed("pre-traffic", *call) for call in own)
    assert not allowed("pre-traffic", "secretsmanager:GetSecretValue", TOKEN_SECRET_ARN)
    assert not allowed("api_handler", *next(iter(own)))


# Within its own timeout (issue 57): against a hanging version the hook reported after 81 s, past
# its 60 s (botocore's retries of each call), and CodeDeploy waited out the hook's hour.


@pytest.fixture
def hanging_lambda(monkeypatch):
    """An endpoint that takes every connection and never answers: a version that hangs."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            accepted.append(connection)

    threading.Thread(target=serve, daemon=True).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.getsockname()[1]}")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    yield accepted
    server.close()
    for connection in accepted:
        connection.close()


class Secrets:
    def get_secret_value(self, SecretId: str) -> dict:  # noqa: N803 - boto3's names
        return {"SecretString": "a-generated-canary-password-0123456789"}


def test_a_hanging_version_fails_the_hook_within_its_deadline_without_retries(
    hanging_lambda, monkeypatch
):
    import time

    monkeypatch.setenv(canary.SECRET_VARIABLE, SECRET)
    codedeploy = CodeDeploy()
    started = time.monotonic()
    told = pre_traffic.handle(HOOK_EVENT, None, codedeploy, VERSION, Secrets(), budget_s=6)
    took = time.monotonic() - started
    # One call, waited for 3 s (half the budget), not retried; the rest not run.
    assert took < 6, took
    assert len(hanging_lambda) == 1
    assert told["status"] == "Failed" and [t["status"] for t in codedeploy.told] == ["Failed"]
    first, rest = told["failures"]
    assert "ReadTimeoutError" in first and "timed out" in rest and "check(s) not run" in rest


def test_a_slow_version_is_not_asked_past_the_deadline(canary_account):
    import time

    def slow(event):
        time.sleep(1.5)
        return proxy_answer(200, {"openapi": "3.0", "paths": {"/": {}}})

    codedeploy = CodeDeploy()
    started = time.monotonic()
    told = pre_traffic.handle(
        HOOK_EVENT, AppAsLambda(slow), codedeploy, VERSION, canary_account, budget_s=6
    )
    assert time.monotonic() - started < 6
    assert told["status"] == "Failed"
    assert "not run: the hook's deadline" in told["failures"][-1]


@pytest.mark.fast
def test_the_hook_answers_codedeploy_inside_its_own_timeout():
    config = json.loads((REPO_ROOT / ".chalice" / "config.json").read_text())
    timeout = config["lambda_functions"]["pre-traffic"]["lambda_timeout"]
    # The last call starts only if it can end by the budget; then the report's two tries.
    assert pre_traffic.BUDGET_S + pre_traffic.REPORT_S < timeout
    assert pre_traffic.CONNECT_S + pre_traffic.CALL_S < pre_traffic.BUDGET_S


def test_a_crowd_failing_the_canarys_sign_in_cannot_lock_the_hook_out(canary_account):
    """Others may fail to sign in as the canary from as many addresses as they like: the
    account's ceiling then refuses everyone else (429), never the hook, whose sign-in comes from
    a source only it has (services/canary.py HOOK_SOURCE)."""
    from chalicelib import deps
    from chalicelib.errors import TooManyRequests
    from chalicelib.services.security import FAILURE_WINDOW, MAX_ACCOUNT_FAILURES, MAX_FAILURES

    security = deps.security_service()
    now, attempts = security.clock(), security.attempts
    for n in range(MAX_ACCOUNT_FAILURES):  # failed guesses, counted as a sign-in counts them
        attempts.take_attempt(
            canary.EMAIL, f"203.0.113.{n}", now, FAILURE_WINDOW, MAX_FAILURES, MAX_ACCOUNT_FAILURES
        )
    with pytest.raises(TooManyRequests):
        security.login(canary.EMAIL, "another guess", "198.51.100.7")

    told, _ = hook(AppAsLambda(), canary_account)

    assert told == {"status": "Succeeded", "failures": []}
    with pytest.raises(TooManyRequests):  # the crowd is still held
        security.login(canary.EMAIL, "a third guess", "198.51.100.8")


@pytest.mark.fast
def test_the_canary_variables_are_not_warned_of_as_unknown_settings():
    """Issue 57: every cold start of the hook and of migrate logged that AGORA_PRE_TRAFFIC_VERSION
    and AGORA_CANARY_SECRET were "not an Agora setting"."""
    from chalicelib.settings import unknown_variables

    given = {pre_traffic.VERSION_VARIABLE: VERSION, canary.SECRET_VARIABLE: SECRET}
    assert unknown_variables(given) == []
    assert unknown_variables({"AGORA_CANARY_SECRETS": "x"}) != []  # a misspelling still is
