"""`make deploy STAGE=… BASE_URL=… ALARM_EMAIL=…`: deploys what `make package` built.

    python -m infra.deploy --stage prod --base-url https://community.example.org \
        --alarm-email ops@example.org [--mail-sender-domain example.org] [--check] [--review]

Uploads the zip and the template to a bucket of this account (`agora-deploy-<account>-<region>`,
made on first use), then creates or updates the stack `agora-<stage>` through a change set, and
prints its outputs (the API's address, the alarm topic, the DNS records SES wants). Only boto3,
with the standard AWS variables (AWS_PROFILE or keys, AWS_DEFAULT_REGION): no AWS CLI needed.
`--check` validates the arguments only (make deploy runs it before the slow packaging).

Safety: a prod stack gets termination protection once it exists (`aws cloudformation
update-termination-protection --no-enable-termination-protection` before deleting it on purpose).
A first create that failed leaves the stack in ROLLBACK_COMPLETE and, in prod, the tables it
made (fixed names, Retain): the next `make deploy` deletes that empty stack and the tables it
left, if every one of them is still empty, then creates the stack again. A table holding data
is never deleted: make deploy stops and names it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "build" / "package"
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"]


class DeployError(Exception):
    """One line for the operator: what is wrong and how to fix it."""


def check_arguments(args: argparse.Namespace) -> None:
    if args.stage not in ("dev", "prod"):
        raise DeployError(f"STAGE must be dev or prod (got {args.stage!r})")
    url = urlsplit(args.base_url or "")
    if url.scheme not in ("http", "https") or not url.hostname:
        raise DeployError(
            "BASE_URL must be the community's public address, such as "
            f"https://community.example.org (got {args.base_url!r})"
        )
    if not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", args.alarm_email or ""):
        raise DeployError(
            f"ALARM_EMAIL must be an address that receives the alarms (got {args.alarm_email!r})"
        )
    domain = args.mail_sender_domain or ""
    if domain and not re.fullmatch(r"[A-Za-z0-9.-]+\.[A-Za-z]{2,}", domain):
        raise DeployError(f"MAIL_SENDER_DOMAIN must be a domain name (got {domain!r})")


def packaged_template(stage: str) -> dict[str, Any]:
    from infra import yaml_text

    path = PACKAGE / "sam.yaml"
    if not path.exists() or not (PACKAGE / "deployment.zip").exists():
        raise DeployError(f"nothing to deploy: run `make package STAGE={stage}` first")
    template = yaml_text.load(path.read_text())
    built_for = {
        r.get("Properties", {})
        .get("Environment", {})
        .get("Variables", {})
        .get("AGORA_TABLE_PREFIX")
        for r in template["Resources"].values()
        if r.get("Type") == "AWS::Serverless::Function"
    }
    if built_for != {f"agora-{stage}-"}:
        raise DeployError(
            f"build/package is not the {stage} stage: run `make package STAGE={stage}`"
        )
    return template


def ensure_bucket(s3: Any, account: str, region: str) -> str:
    bucket = f"agora-deploy-{account}-{region}"
    try:
        s3.head_bucket(Bucket=bucket)
        return bucket
    except Exception as error:
        code = getattr(error, "response", {}).get("Error", {}).get("Code")
        if code not in ("404", "NoSuchBucket", "NotFound"):
            raise
    options: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":
        options["CreateBucketConfiguration"] = {"LocationConstraint": region}
    s3.create_bucket(**options)
    s3.put_public_access_block(
        Bucket=bucket,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    return bucket


def upload(s3: Any, bucket: str, key: str, body: bytes) -> str:
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    return key


def with_code_in(template: dict[str, Any], bucket: str, key: str) -> dict[str, Any]:
    for resource in template["Resources"].values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = {"Bucket": bucket, "Key": key}
    return template


def deploy(args: argparse.Namespace, session: Any = None) -> dict[str, str]:
    import boto3

    from infra import yaml_text

    check_arguments(args)
    template = packaged_template(args.stage)
    session = session or boto3.session.Session()
    region = session.region_name
    if not region:
        raise DeployError("no AWS region: set AWS_DEFAULT_REGION (or AWS_PROFILE with a region)")
    account = session.client("sts").get_caller_identity()["Account"]
    s3 = session.client("s3")
    bucket = ensure_bucket(s3, account, region)
    code = (PACKAGE / "deployment.zip").read_bytes()
    digest = hashlib.sha256(code).hexdigest()[:16]
    code_key = upload(s3, bucket, f"{args.stage}/deployment-{digest}.zip", code)
    body = yaml_text.dump(with_code_in(template, bucket, code_key), sort_keys=False).encode()
    template_key = upload(
        s3, bucket, f"{args.stage}/template-{hashlib.sha256(body).hexdigest()[:16]}.yaml", body
    )
    template_url = f"https://{bucket}.s3.{region}.amazonaws.com/{template_key}"

    stack = f"agora-{args.stage}"
    cloudformation = session.client("cloudformation")
    if _stack_status(cloudformation, stack) == "ROLLBACK_COMPLETE":
        clear_failed_first_create(session, stack, template)
    exists = _stack_exists(cloudformation, stack)
    parameters = {
        "BaseUrl": args.base_url,
        "AlarmEmail": args.alarm_email,
        "MailSenderDomain": args.mail_sender_domain or "",
    }
    change_set = f"deploy-{digest}-{hashlib.sha256(body).hexdigest()[:8]}"
    cloudformation.create_change_set(
        StackName=stack,
        ChangeSetName=change_set,
        ChangeSetType="UPDATE" if exists else "CREATE",
        TemplateURL=template_url,
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
        Capabilities=CAPABILITIES,
    )
    print(f"{stack}: change set {change_set} ({'update' if exists else 'create'})", flush=True)
    described = _wait_change_set(cloudformation, stack, change_set)
    if described is None:
        print(f"{stack}: nothing changed")
    elif args.review:
        print(f"{stack}: review the change set in the CloudFormation console, then execute it")
        return {}
    else:
        cloudformation.execute_change_set(StackName=stack, ChangeSetName=change_set)
        waiter = "stack_update_complete" if exists else "stack_create_complete"
        try:
            cloudformation.get_waiter(waiter).wait(
                StackName=stack, WaiterConfig={"Delay": 10, "MaxAttempts": 360}
            )
        except Exception:
            raise DeployError(f"{stack} failed: {_first_failure(cloudformation, stack)}") from None
    if args.stage == "prod":
        protect(cloudformation, stack)
    # Every deploy, changed or not: a migration an earlier deploy left unfinished goes on.
    run_migrations(cloudformation, migrate_client(session), stack)
    outputs = {
        o["OutputKey"]: o["OutputValue"]
        for o in cloudformation.describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    }
    for key, value in outputs.items():
        print(f"{key}: {value}")
    return outputs


# The migrate function runs up to its 900 s timeout: the invoke waits for it, and is not retried
# by botocore (the next invoke goes on from where the last one stopped anyway).
def migrate_client(session: Any) -> Any:
    from botocore.config import Config

    return session.client("lambda", config=Config(read_timeout=960, retries={"max_attempts": 1}))


MIGRATE_INVOCATIONS = 50  # 50 x ~10 minutes: more is a migration that never ends


def run_migrations(cloudformation: Any, lambda_client: Any, stack: str) -> None:
    """Invoke the stack's `migrate` function (its alias: this deploy's code) until it answers
    done, printing what each migration did; stored items then have the shape this code writes."""
    from infra.operations import ALIAS

    function = cloudformation.describe_stack_resource(StackName=stack, LogicalResourceId="Migrate")[
        "StackResourceDetail"
    ]["PhysicalResourceId"]
    for _ in range(MIGRATE_INVOCATIONS):
        answer = lambda_client.invoke(FunctionName=function, Qualifier=ALIAS, Payload=b"{}")
        payload = json.loads(answer["Payload"].read() or b"null")
        if answer.get("FunctionError") or not isinstance(payload, dict):
            message = payload.get("errorMessage") if isinstance(payload, dict) else payload
            raise DeployError(
                f"{stack}: migrate failed ({message}); the stack is updated, and `make deploy` "
                "again goes on with the migrations from where they stopped"
            )
        for line in payload.get("lines", []):
            print(f"{stack}: migrate: {line}", flush=True)
        if payload.get("done"):
            return
    raise DeployError(f"{stack}: migrate was not done after {MIGRATE_INVOCATIONS} invocations")


def protect(cloudformation: Any, stack: str) -> None:
    """Termination protection: deleting the prod stack takes a deliberate step first."""
    cloudformation.update_termination_protection(StackName=stack, EnableTerminationProtection=True)


def _stack_status(cloudformation: Any, stack: str) -> str | None:
    try:
        [found] = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except Exception as error:
        if "does not exist" in str(error):
            return None
        raise
    return str(found["StackStatus"])


def left_tables(session: Any, template: dict[str, Any]) -> dict[str, bool]:
    """The template's named tables that exist already: name -> whether it holds any item."""
    dynamodb = session.client("dynamodb")
    found: dict[str, bool] = {}
    for resource in template["Resources"].values():
        name = resource.get("Properties", {}).get("TableName")
        if resource.get("Type") != "AWS::DynamoDB::Table" or not isinstance(name, str):
            continue
        try:
            dynamodb.describe_table(TableName=name)
        except dynamodb.exceptions.ResourceNotFoundException:
            continue
        # One item is enough to know; DescribeTable's ItemCount lags by hours.
        found[name] = bool(dynamodb.scan(TableName=name, Limit=1, Select="COUNT")["Count"])
    return found


def clear_failed_first_create(session: Any, stack: str, template: dict[str, Any]) -> list[str]:
    """Delete the stack a failed first create left (ROLLBACK_COMPLETE) and the empty tables it
    retained, so that the create can run again; answers the tables deleted."""
    tables = left_tables(session, template)
    holding = sorted(name for name, has_items in tables.items() if has_items)
    if holding:
        raise DeployError(
            f"{stack} failed to create earlier and left tables that hold data "
            f"({', '.join(holding)}): they are not deleted for you. Back them up or delete "
            "them, or import them into the stack (CloudFormation resource import), then run "
            "make deploy again"
        )
    cloudformation = session.client("cloudformation")
    print(f"{stack}: deleting the failed first create (ROLLBACK_COMPLETE)", flush=True)
    cloudformation.delete_stack(StackName=stack)
    cloudformation.get_waiter("stack_delete_complete").wait(
        StackName=stack, WaiterConfig={"Delay": 5, "MaxAttempts": 120}
    )
    dynamodb = session.client("dynamodb")
    for name in sorted(tables):
        print(f"{stack}: deleting the empty table {name} it left behind", flush=True)
        dynamodb.update_table(TableName=name, DeletionProtectionEnabled=False)
        dynamodb.delete_table(TableName=name)
    for name in sorted(tables):
        dynamodb.get_waiter("table_not_exists").wait(TableName=name)
    return sorted(tables)


def _stack_exists(cloudformation: Any, stack: str) -> bool:
    try:
        [found] = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except Exception as error:
        if "does not exist" in str(error):
            return False
        raise
    if found["StackStatus"] == "REVIEW_IN_PROGRESS":
        return False  # a first change set that was never executed
    if found["StackStatus"] == "ROLLBACK_COMPLETE":
        raise DeployError(
            f"{stack} failed to create earlier (ROLLBACK_COMPLETE): delete it in the "
            "CloudFormation console, then run make deploy again"
        )
    return True


def _wait_change_set(cloudformation: Any, stack: str, name: str) -> dict[str, Any] | None:
    import time

    for _ in range(120):
        described = cloudformation.describe_change_set(StackName=stack, ChangeSetName=name)
        status = described["Status"]
        if status == "CREATE_COMPLETE":
            return dict(described)
        if status == "FAILED":
            reason = described.get("StatusReason", "")
            if "didn't contain changes" in reason or "No updates" in reason:
                return None
            raise DeployError(f"{stack}: the change set failed: {reason}")
        time.sleep(2)
    raise DeployError(f"{stack}: the change set was not ready after 4 minutes")


def _first_failure(cloudformation: Any, stack: str) -> str:
    events = cloudformation.describe_stack_events(StackName=stack)["StackEvents"]
    for event in reversed(events):
        if event.get("ResourceStatus", "").endswith("FAILED"):
            return f"{event['LogicalResourceId']}: {event.get('ResourceStatusReason', '')}"
    return "see the stack's events in the CloudFormation console"


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m infra.deploy", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--stage", required=True)
    parser.add_argument("--base-url", default="")
    parser.add_argument("--alarm-email", default="")
    parser.add_argument("--mail-sender-domain", default="")
    parser.add_argument("--check", action="store_true", help="validate the arguments only")
    parser.add_argument(
        "--review", action="store_true", help="create the change set, leave executing it to you"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        check_arguments(args)
        if not args.check:
            deploy(args)
    except DeployError as error:
        print(f"make deploy: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        from chalicelib.cli import explain_aws_failure

        line = explain_aws_failure(error)
        if line is None:
            raise
        print(f"make deploy: {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
