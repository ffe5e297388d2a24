"""The rehearsal's stage: one moto server (a process of its own, enforcing IAM once the stage is
built), the stack's resources made from the translated template, each function's role as the
template writes it, the operator's data, and the functions themselves (lambda_service)."""

from __future__ import annotations

import base64
import concurrent.futures
import hashlib
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra import yaml_text
from tests.rehearsal import iam
from tests.rehearsal.lambda_service import (
    Invocation,
    LambdaFunction,
    compiled_stand_ins,
    environment,
    extract,
)
from tests.rehearsal.stand_in import StandIn
from tests.support import REPO_ROOT
from tests.support.running import free_port, run_module, this_clock
from tests.support.sam_stack import ACCOUNT, REGION, Resolver, translated

PACKAGE = REPO_ROOT / "build" / "package"
PARAMETERS = {
    "BaseUrl": "https://community.example.org",
    "AlarmEmail": "ops@example.org",
    "MailSenderDomain": "",
    # Mail in by push: SES receiving for this domain (mail-verdict, receive-mail).
    "MailInboundDomain": "in.community.example.org",
}


# What the package is made of (the Makefile's PACKAGE_INPUTS).
PACKAGE_INPUTS = ("Makefile", "app.py", "requirements.txt", "requirements*.lock", ".chalice/*.json",
                  "chalicelib/**/*", "infra/**/*")  # fmt: skip


def packaging() -> bool:
    """A `make package` (or make test's package check, which runs it) is running in this
    clone: its make process lives until the package is written and checked."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in arguments if a]
        if (
            words
            and Path(words[0]).name in ("make", "gmake")
            and any(w == "package" or ".package-checked" in w for w in words[1:])
            and Path(cwd) == REPO_ROOT
        ):
            return True
    return False


def package_ready(timeout: float = 300) -> str | None:
    """None once build/package holds the current code's zip and template; else why not.

    `make test` packages beside the suite when what the package is made of changed: while that
    runs, the rehearsal waits for it rather than read a zip being written. Outside make test,
    `make package` is the way to a current one."""
    deadline = time.monotonic() + timeout
    while packaging() and time.monotonic() < deadline:
        time.sleep(1)
    newest = max(
        path.stat().st_mtime
        for pattern in PACKAGE_INPUTS
        for path in REPO_ROOT.glob(pattern)
        if path.is_file() and "__pycache__" not in path.parts
    )
    zipped, template = PACKAGE / "deployment.zip", PACKAGE / "sam.yaml"
    if not zipped.exists() or not template.exists():
        return "build/package is missing: run `make package` (make test does)"
    if zipped.stat().st_mtime < newest:
        return "build/package is older than the code: run `make package` (make test does)"
    return None


def start_moto(log: Path) -> tuple[subprocess.Popen, str]:
    """moto's server in a process of its own: its IAM enforcement (a process-wide setting)
    reaches no other test."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "inf"},
    )
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/data.json", timeout=1).close()
            return process, endpoint
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise AssertionError(f"moto did not start: {log.read_text()[-2000:]}")


def enforce_iam(endpoint: str) -> None:
    """From the next request on, moto authenticates and authorises every call."""
    request = urllib.request.Request(
        f"{endpoint}/moto-api/reset-auth",
        data=b"0",
        method="POST",
        headers={"Content-Type": "text/plain"},  # a form's body would be parsed away
    )
    urllib.request.urlopen(request, timeout=5).close()


@dataclass
class Stage:
    endpoint: str
    template: dict
    resolver: Resolver
    names: iam.Names
    operator: dict[str, str]  # the operator's keys: the test's own reads and writes
    world: dict[str, Any]
    mailbox: Any
    functions: dict[str, LambdaFunction] = field(default_factory=dict)
    policies: dict[str, list[dict]] = field(default_factory=dict)
    stand_in: StandIn | None = None

    def aws(self, service: str) -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=self.operator["AccessKeyId"],
            aws_secret_access_key=self.operator["SecretAccessKey"],
        )

    def invoke(
        self, logical: str, event: dict[str, Any], remaining_ms: int | None = None
    ) -> Invocation:
        """The function's invocation, and every call it made checked against its role
        (`remaining_ms`: LambdaFunction.invoke's)."""
        function = self.functions[logical]
        done = function.invoke(event, remaining_ms)
        # Lambda writes the function's log with the function's role: its own calls, checked too.
        group, stream = function.env["AWS_LAMBDA_LOG_GROUP_NAME"], function.env["AWS_LAMBDA_LOG_STREAM_NAME"]  # fmt: skip
        writes = [
            {
                "service": "logs",
                "signing_name": "logs",
                "operation": operation,
                "params": {"logGroupName": group, "logStreamName": stream},
            }  # fmt: skip
            for operation in ("CreateLogStream", "PutLogEvents")
        ]
        refused = iam.refused(self.policies[logical], [*done.calls, *writes], self.names)
        assert not refused, f"{logical}'s role does not allow: {refused}\n{done.log[-2000:]}"
        return done

    def as_operator(self, *arguments: str) -> Any:
        """The operator's change of the stage's data: `python -m tests.rehearsal.world
        ARGUMENTS`, with the API function's settings; what it prints last (JSON)."""
        return as_operator(self.template, self.resolver, self.endpoint, self.operator, *arguments)

    def role_client(self, logical: str, service: str) -> Any:
        """A client with the function's role: what Lambda's event source mapping uses."""
        import boto3

        env = self.functions[logical].env
        made = boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=env["AWS_SESSION_TOKEN"],
        )
        policies = self.policies[logical]

        def checked(model: Any, params: dict, **_: Any) -> None:
            call = {"service": model.service_model.endpoint_prefix,
                    "signing_name": model.service_model.signing_name,
                    "operation": model.name, "params": params}  # fmt: skip
            refused = iam.refused(policies, [call], self.names)
            assert not refused, f"{logical}'s role does not allow its trigger: {refused}"

        made.meta.events.register("before-parameter-build", checked)
        return made

    def stop(self) -> None:
        for function in self.functions.values():
            function.stop()
        if self.stand_in is not None:
            self.stand_in.stop()


def packaged() -> dict:
    return yaml_text.load((PACKAGE / "sam.yaml").read_text())


def make_resources(aws: Any, template: dict, names: Resolver) -> dict[str, dict]:
    """The resources the functions touch, made through each service's API as the translated
    template describes them: tables (and streams), queues (and their dead-letter queues), the
    secrets, the KMS key and its alias, the event bus. What each became, by logical id."""
    made: dict[str, dict] = {}
    resources = template["Resources"]
    for logical, resource in resources.items():
        if resource["Type"] == "AWS::DynamoDB::Table":
            made[logical] = _make_table(aws, resource["Properties"])
    _make_queues(aws, resources, made)
    for logical, resource in resources.items():
        make = _MAKERS.get(resource["Type"])
        if make is not None:
            made.update(make(aws, logical, resource, names))
    for resource in resources.values():
        _connect(aws, resource, made)
    return made


_TABLE_KEYS = ("TableName", "KeySchema", "AttributeDefinitions", "GlobalSecondaryIndexes",
               "LocalSecondaryIndexes")  # fmt: skip


def _make_table(aws: Any, properties: dict) -> dict:
    table = {key: properties[key] for key in _TABLE_KEYS if key in properties}
    if "StreamSpecification" in properties:
        table["StreamSpecification"] = {"StreamEnabled": True, **properties["StreamSpecification"]}  # fmt: skip
    described = aws("dynamodb").create_table(BillingMode="PAY_PER_REQUEST", **table)
    description = described["TableDescription"]
    made = {"Ref": table["TableName"], "Arn": description["TableArn"]}
    if "LatestStreamArn" in description:
        made["StreamArn"] = description["LatestStreamArn"]
    return made


def _make_queues(aws: Any, resources: dict, made: dict[str, dict]) -> None:
    queues = {n: r for n, r in resources.items() if r["Type"] == "AWS::SQS::Queue"}
    # Dead-letter queues first: a queue's redrive policy names one.
    for logical in sorted(queues, key=lambda n: "RedrivePolicy" in queues[n]["Properties"]):
        properties = queues[logical]["Properties"]
        attributes = {
            key: str(properties[key])
            for key in ("VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds")
            if key in properties
        }
        if "RedrivePolicy" in properties:
            redrive = dict(properties["RedrivePolicy"])
            target = redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]
            redrive["deadLetterTargetArn"] = made[target]["Arn"]
            attributes["RedrivePolicy"] = json.dumps(redrive)
        url = aws("sqs").create_queue(QueueName=properties["QueueName"], Attributes=attributes)
        arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{properties['QueueName']}"
        made[logical] = {"Ref": url["QueueUrl"], "Arn": arn}


def _make_secret(aws: Any, logical: str, resource: dict, names: Resolver) -> dict[str, dict]:
    secret = aws("secretsmanager").create_secret(
        Name=resource["Properties"]["Name"], SecretString=secrets.token_urlsafe(48)
    )
    return {logical: {"Ref": secret["ARN"]}}


def _make_key(aws: Any, logical: str, resource: dict, names: Resolver) -> dict[str, dict]:
    description = resource["Properties"]["Description"]
    key = aws("kms").create_key(Description=description)["KeyMetadata"]
    return {logical: {"Ref": key["KeyId"], "Arn": key["Arn"]}}


def _make_bus(aws: Any, logical: str, resource: dict, names: Resolver) -> dict[str, dict]:
    name = resource["Properties"]["Name"]
    bus = aws("events").create_event_bus(Name=name)
    return {logical: {"Ref": name, "Arn": bus["EventBusArn"]}}


def _make_bucket(aws: Any, logical: str, resource: dict, names: Resolver) -> dict[str, dict]:
    """SES receiving's bucket (its S3 action writes each mail there), when the stack has it."""
    if not names.condition(resource["Condition"]):
        return {}
    bucket = names.name(logical)
    aws("s3").create_bucket(Bucket=bucket)
    return {logical: {"Ref": bucket, "Arn": f"arn:aws:s3:::{bucket}"}}


def _make_topic(aws: Any, logical: str, resource: dict, names: Resolver) -> dict[str, dict]:
    if "TopicName" not in resource.get("Properties", {}):
        return {}
    topic = aws("sns").create_topic(Name=resource["Properties"]["TopicName"])["TopicArn"]
    return {logical: {"Ref": topic}}


# The resources made after the queues, by type: (aws, logical id, resource, names) -> made.
_MAKERS = {
    "AWS::SecretsManager::Secret": _make_secret,
    "AWS::KMS::Key": _make_key,
    "AWS::Events::EventBus": _make_bus,
    "AWS::S3::Bucket": _make_bucket,
    "AWS::SNS::Topic": _make_topic,
}


def _connect(aws: Any, resource: dict, made: dict[str, dict]) -> None:
    """What joins two made resources: SES's feedback topic delivers to the feedback queue, raw
    (infra/build.py); the KMS alias names the key."""
    properties = resource.get("Properties", {})
    if resource["Type"] == "AWS::SNS::Subscription" and properties["Protocol"] == "sqs":
        aws("sns").subscribe(
            TopicArn=made[properties["TopicArn"]["Ref"]]["Ref"],
            Protocol="sqs",
            Endpoint=made[properties["Endpoint"]["Fn::GetAtt"][0]]["Arn"],
            Attributes={
                "RawMessageDelivery": str(properties.get("RawMessageDelivery", False)).lower()
            },
        )
    if resource["Type"] == "AWS::KMS::Alias":
        target = made[properties["TargetKeyId"]["Ref"]]["Ref"]
        aws("kms").create_alias(AliasName=properties["AliasName"], TargetKeyId=target)


def functions_of(template: dict) -> list[str]:
    return sorted(
        n for n, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function"
    )


def make_roles(aws: Any, template: dict, resolver: Resolver) -> tuple[dict, dict]:
    """Each function's role in moto, holding what moto can enforce of its policies
    (iam.for_moto), and a session of it (Lambda's credentials); the operator, allowed all."""
    credentials, policies = {}, {}
    for logical in functions_of(template):
        role = iam.role_of(template, logical)
        documents = iam.role_policies(template, resolver, logical)
        policies[logical] = documents
        name = f"agora-dev-{role}"
        trust = template["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]
        arn = aws("iam").create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))[
            "Role"
        ]["Arn"]
        for number, document in enumerate(documents):
            aws("iam").put_role_policy(
                RoleName=name,
                PolicyName=f"policy-{number}",
                PolicyDocument=json.dumps(iam.for_moto(document)),
            )
        credentials[logical] = aws("sts").assume_role(RoleArn=arn, RoleSessionName=logical)[
            "Credentials"
        ]
    aws("iam").create_user(UserName="operator")
    aws("iam").put_user_policy(
        UserName="operator",
        PolicyName="all",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
            }  # fmt: skip
        ),
    )
    operator = aws("iam").create_access_key(UserName="operator")["AccessKey"]
    return credentials, policies, operator


def build(tmp: Path, mailbox: Any) -> tuple[Stage, subprocess.Popen]:
    import boto3

    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)  # the translator's pseudo parameters
    from infra.deploy import with_settings_digest

    # As make deploy passes them: SettingsDigest has no default (infra.rollout).
    source = packaged()
    parameters = with_settings_digest(source, PARAMETERS, {})
    template = translated(source, "s3://agora-code/deployment.zip", parameters)
    task_root, compiled = tmp / "task", tmp / "compiled"

    def unpack() -> None:
        extract(PACKAGE / "deployment.zip", task_root)
        compiled_stand_ins(task_root, compiled)

    # The zip is unpacked while moto starts and the operator writes the stage's data.
    unpacking = concurrent.futures.ThreadPoolExecutor(1)
    unpacked = unpacking.submit(unpack)
    server, endpoint = start_moto(tmp / "moto.log")

    def aws(service: str) -> Any:
        return boto3.client(
            service, endpoint_url=endpoint, region_name=REGION,
            aws_access_key_id="setup", aws_secret_access_key="setup",
        )  # fmt: skip

    made = make_resources(aws, template, Resolver(template, parameters, {}))
    resolver = Resolver(template, parameters, made)
    credentials, policies, operator = make_roles(aws, template, resolver)
    secret_arns = {
        r["Properties"]["Name"]: made[n]["Ref"]
        for n, r in template["Resources"].items()
        if r["Type"] == "AWS::SecretsManager::Secret"
    }
    [key] = [n for n, r in template["Resources"].items() if r["Type"] == "AWS::KMS::Key"]
    [alias] = [r["Properties"]["AliasName"] for r in template["Resources"].values()
               if r["Type"] == "AWS::KMS::Alias"]  # fmt: skip
    [stream] = [m["StreamArn"] for m in made.values() if "StreamArn" in m]
    names = iam.Names(secret_arns, made[key]["Arn"], alias, stream)
    world = seed(template, resolver, endpoint, operator, mailbox)
    stage = Stage(endpoint, template, resolver, names, operator, world, mailbox, policies=policies)
    unpacked.result()
    unpacking.shutdown()
    # Lambda's own APIs and CodeDeploy's, for the hook and check-aliases (stand_in.py): each
    # function's $LATEST is the package's code with its template's variables.
    stage.stand_in = StandIn(lambda event: stage.invoke("APIHandler", event))
    code = base64.b64encode(hashlib.sha256((PACKAGE / "deployment.zip").read_bytes()).digest())
    for logical in functions_of(template):
        name = environment(template, resolver, logical, credentials[logical], endpoint)[
            "AWS_LAMBDA_FUNCTION_NAME"
        ]
        variables = template["Resources"][logical]["Properties"].get("Environment", {})
        stage.stand_in.configurations[name] = {
            "FunctionName": name,
            "FunctionArn": str(resolver.attribute(logical, "Arn")),
            "CodeSha256": code.decode(),
            "Environment": {"Variables": resolver.resolve(variables.get("Variables", {}))},
        }
    for logical in functions_of(template):
        env = environment(template, resolver, logical, credentials[logical], endpoint)
        root, runtime = task_root, compiled
        inline = template["Resources"][logical]["Properties"].get("Code", {}).get("ZipFile")
        if inline:
            # Inline code (check-aliases): Lambda writes it as index.py beside its runtime's
            # boto3, which is the full SDK, not the zip's slimmed one.
            root, runtime = tmp / f"{logical}-code", tmp / f"{logical}-runtime"
            root.mkdir()
            (root / "index.py").write_text(inline)
            lambda_runtime(runtime)
        if logical in ("PreTraffic", "CheckAliases"):
            env["AWS_ENDPOINT_URL_LAMBDA"] = stage.stand_in.endpoint
        if logical == "PollMailbox":
            # What the network gives it: its POP3 server (the test's Dovecot) is on loopback,
            # which the stack refuses (CONTRACT §8); a real mailbox is on a public address.
            env["AGORA_MAIL_ALLOW_PRIVATE_HOSTS"] = "1"
        if logical == "PreTraffic":
            env["AWS_ENDPOINT_URL_CODEDEPLOY"] = stage.stand_in.endpoint
        timeout = int(template["Resources"][logical]["Properties"].get("Timeout", 3))
        stage.functions[logical] = LambdaFunction(
            logical, env, timeout, root, runtime, tmp / f"{logical}.log"
        )
    enforce_iam(endpoint)
    return stage, server


def lambda_runtime(into: Path) -> None:
    """What Lambda's Python runtime offers inline code besides the standard library: boto3 and
    its dependencies (the test environment's, the SDK in full)."""
    import importlib.util

    into.mkdir()
    for module in ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six"):
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin, module
        origin = Path(spec.origin)
        source = origin.parent if origin.name == "__init__.py" else origin
        (into / source.name).symlink_to(source)


def seed(template: dict, resolver: Resolver, endpoint: str, operator: dict, mailbox: Any) -> dict:
    """The operator's data (tests/rehearsal/world.py), written with the API function's settings."""
    return as_operator(
        template,
        resolver,
        endpoint,
        operator,
        str(mailbox.server.pop3_port),
        mailbox.user,
        mailbox.password,
    )


def as_operator(
    template: dict, resolver: Resolver, endpoint: str, operator: dict, *arguments: str
) -> Any:
    """What `python -m tests.rehearsal.world ARGUMENTS` prints last (JSON), run by the operator
    with the API function's settings."""
    variables = template["Resources"]["APIHandler"]["Properties"]["Environment"]["Variables"]
    env = {
        **{k: str(resolver.resolve(v)) for k, v in variables.items()},
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": operator["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": operator["SecretAccessKey"],
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPO_ROOT),
        # The test's POP3 server is on loopback, which the stack refuses (CONTRACT §8).
        "AGORA_MAIL_ALLOW_PRIVATE_HOSTS": "1",
        **this_clock(),
    }
    done = run_module("tests.rehearsal.world", *arguments, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
