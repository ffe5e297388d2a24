"""`make deploy STAGE=… BASE_URL=… ALARM_EMAIL=…`: deploys what `make package` built.

    python -m infra.deploy --stage prod --base-url https://community.example.org \
        --alarm-email ops@example.org [--mail-sender-domain example.org] [--check] [--review]

Uploads the zip and the template to a bucket of this account (`agora-deploy-<account>-<region>`,
made on first use), then creates or updates the stack `agora-<stage>` through a change set, and
prints its outputs (the API's address, the alarm topic, the DNS records SES wants). Only boto3,
with the standard AWS variables (AWS_PROFILE or keys, AWS_DEFAULT_REGION): no AWS CLI needed.
`--check` validates the arguments only (make deploy runs it before the slow packaging).

Data first: a change set that would replace or delete a table or the token secret is refused
and deleted (`--allow-replace`, make deploy ALLOW_REPLACE=1, lets it through), and the stack
policy says the same to anyone updating the stack another way. After a deploy, each function
keeps its last 3 versions (and any an alias names); older ones are deleted.

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

from infra.deploy_parameters import KEPT_PARAMETERS, ParameterError, stack_parameters
from infra.rollout import SETTINGS_DIGEST, settings_digest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "build" / "package"
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"]
# What holds data no deploy may lose by accident: replaced (a new, empty one under the old name's
# place) or removed. A change set touching one so is refused unless --allow-replace.
PROTECTED_TYPES = ("AWS::DynamoDB::Table", "AWS::SecretsManager::Secret")
# Published versions each function keeps after a deploy (besides any an alias points at).
KEEP_VERSIONS = 3


def stack_policy(allow_replace: bool = False) -> str:
    """Every update is allowed except replacing or deleting a table or the token secret."""
    import json

    statements: list[dict[str, Any]] = [
        {"Effect": "Allow", "Action": "Update:*", "Principal": "*", "Resource": "*"}
    ]
    if not allow_replace:
        statements.append(
            {
                "Effect": "Deny",
                "Action": ["Update:Replace", "Update:Delete"],
                "Principal": "*",
                "Resource": "*",
                "Condition": {"StringEquals": {"ResourceType": list(PROTECTED_TYPES)}},
            }
        )
    return json.dumps({"Statement": statements})


def data_losses(changes: list[dict[str, Any]]) -> list[str]:
    """The change set's replacements and removals of what holds data, one phrase each."""
    lost = []
    for change in changes:
        resource = change.get("ResourceChange", {})
        if resource.get("ResourceType") not in PROTECTED_TYPES:
            continue
        action, replacement = resource.get("Action"), resource.get("Replacement")
        if action == "Remove":
            lost.append(f"{resource['LogicalResourceId']} (deleted)")
        elif action == "Modify" and replacement in ("True", "Conditional"):
            lost.append(f"{resource['LogicalResourceId']} (replaced)")
    return lost


def refuse_data_loss(
    cloudformation: Any, stack: str, change_set: str, described: dict[str, Any], allow: bool
) -> None:
    """Delete the change set and stop when it would replace or delete a table or the secret."""
    changes = list(described.get("Changes", []))
    token = described.get("NextToken")
    while token:
        more = cloudformation.describe_change_set(
            StackName=stack, ChangeSetName=change_set, NextToken=token
        )
        changes += more.get("Changes", [])
        token = more.get("NextToken")
    lost = data_losses(changes)
    if not lost or allow:
        return
    cloudformation.delete_change_set(StackName=stack, ChangeSetName=change_set)
    raise DeployError(
        f"{stack}: the change would lose data: {', '.join(lost)}; the change set was deleted. "
        "Keep the resource's name and key schema, or back it up first and run make deploy "
        "again with ALLOW_REPLACE=1"
    )


def prune_versions(session: Any, stack: str, keep: int = KEEP_VERSIONS) -> list[str]:
    """Delete each function's published versions but the newest `keep` and those an alias
    names (a canary's two); answers the versions deleted (their ARNs)."""
    cloudformation = session.client("cloudformation")
    lambdas = session.client("lambda")
    functions = [
        r["PhysicalResourceId"]
        for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack)
        for r in page["StackResourceSummaries"]
        if r["ResourceType"] == "AWS::Lambda::Function" and r.get("PhysicalResourceId")
    ]
    deleted = []
    for function in functions:
        versions = [
            v
            for page in lambdas.get_paginator("list_versions_by_function").paginate(
                FunctionName=function
            )
            for v in page["Versions"]
            if v["Version"] != "$LATEST"
        ]
        aliased: set[str] = set()
        for page in lambdas.get_paginator("list_aliases").paginate(FunctionName=function):
            for alias in page["Aliases"]:
                aliased.add(alias["FunctionVersion"])
                weights = alias.get("RoutingConfig", {}).get("AdditionalVersionWeights", {})
                aliased.update(weights)
        newest = sorted(versions, key=lambda v: int(v["Version"]), reverse=True)
        for version in newest[keep:]:
            if version["Version"] in aliased:
                continue
            lambdas.delete_function(FunctionName=function, Qualifier=version["Version"])
            deleted.append(version["FunctionArn"])
    return deleted


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
    check_optional(args)


# Each optional setting's argument: its make variable, the shape its value must have, what it is.
OPTIONAL_SHAPES = (
    ("ses_daily_quota", "SES_DAILY_QUOTA", r"[1-9][0-9]{0,9}", "a whole number above 0"),
    ("monthly_budget_usd", "MONTHLY_BUDGET_USD", r"[1-9][0-9]{0,9}", "a whole number above 0"),
    ("page_email", "PAGE_EMAIL", r"[^@\s]+@[^@\s]+\.[^@\s]+", "an address that is paged"),
    ("backup_region", "BACKUP_REGION", r"[a-z]{2}(-[a-z]+)+-[0-9]", "a region such as eu-west-1"),
    ("mail_sender_domain", "MAIL_SENDER_DOMAIN", r"[A-Za-z0-9.-]+\.[A-Za-z]{2,}", "a domain name"),
)


def check_optional(args: argparse.Namespace) -> None:
    """An optional setting given must have its shape (given empty, it is emptied or kept)."""
    for argument, name, shape, what in OPTIONAL_SHAPES:
        value = getattr(args, argument, None) or ""
        if value and not re.fullmatch(shape, str(value)):
            raise DeployError(f"{name} must be {what} (got {value!r})")
    if getattr(args, "backup_region", None) and args.stage != "prod":
        raise DeployError("BACKUP_REGION is a prod stack's (the daily copy out of the region)")


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


def with_settings_digest(
    template: dict[str, Any], given: dict[str, str], previous: dict[str, str]
) -> dict[str, str]:
    """The parameters given, and SettingsDigest: every function's version is named after the
    functions and the values they read (infra.rollout), those kept from the stack included, so
    that a changed setting publishes a version of every function and moves its alias."""
    kept = {k: previous[k] for k in KEPT_PARAMETERS if k in previous}
    return {**given, SETTINGS_DIGEST: settings_digest(template, {**kept, **given})}


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

    check_arguments(args)
    template = packaged_template(args.stage)
    session = session or boto3.session.Session()
    upload_url, change_set = _upload_stack(session, args.stage, template)
    stack = f"agora-{args.stage}"
    cloudformation = session.client("cloudformation")
    if _stack_status(cloudformation, stack) == "ROLLBACK_COMPLETE":
        clear_failed_first_create(session, stack, template)
    exists = _stack_exists(cloudformation, stack)
    cloudformation.create_change_set(
        StackName=stack,
        ChangeSetName=change_set,
        ChangeSetType="UPDATE" if exists else "CREATE",
        TemplateURL=upload_url,
        Parameters=_change_set_parameters(session, cloudformation, stack, args, template, exists),
        Capabilities=CAPABILITIES,
    )
    print(f"{stack}: change set {change_set} ({'update' if exists else 'create'})", flush=True)
    described = _wait_change_set(cloudformation, stack, change_set)
    allow_replace = bool(getattr(args, "allow_replace", False))
    if described is None:
        print(f"{stack}: nothing changed")
    else:
        refuse_data_loss(cloudformation, stack, change_set, described, allow_replace)
        if args.review:
            print(f"{stack}: review the change set in the CloudFormation console, then execute it")
            return {}
        _execute_change_set(session, cloudformation, stack, change_set, exists, allow_replace)
    if args.stage == "prod":
        protect(cloudformation, stack)
    # Changed or not: an alias an earlier deploy by another path left behind is said here.
    require_live_aliases(session, stack)
    # Every deploy, changed or not: a migration an earlier deploy left unfinished goes on.
    run_migrations(cloudformation, migrate_client(session), stack)
    outputs = {
        o["OutputKey"]: o["OutputValue"]
        for o in cloudformation.describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    }
    for key, value in outputs.items():
        print(f"{key}: {value}")
    return outputs


def _upload_stack(session: Any, stage: str, template: dict[str, Any]) -> tuple[str, str]:
    """The code and the template with it, uploaded to the account's deploy bucket: answers the
    template's URL and the change set's name (after both contents)."""
    from infra import yaml_text

    region = session.region_name
    if not region:
        raise DeployError("no AWS region: set AWS_DEFAULT_REGION (or AWS_PROFILE with a region)")
    account = session.client("sts").get_caller_identity()["Account"]
    s3 = session.client("s3")
    bucket = ensure_bucket(s3, account, region)
    code = (PACKAGE / "deployment.zip").read_bytes()
    digest = hashlib.sha256(code).hexdigest()[:16]
    code_key = upload(s3, bucket, f"{stage}/deployment-{digest}.zip", code)
    body = yaml_text.dump(with_code_in(template, bucket, code_key), sort_keys=False).encode()
    template_key = upload(
        s3, bucket, f"{stage}/template-{hashlib.sha256(body).hexdigest()[:16]}.yaml", body
    )
    template_url = f"https://{bucket}.s3.{region}.amazonaws.com/{template_key}"
    return template_url, f"deploy-{digest}-{hashlib.sha256(body).hexdigest()[:8]}"


def _change_set_parameters(
    session: Any,
    cloudformation: Any,
    stack: str,
    args: argparse.Namespace,
    template: dict[str, Any],
    exists: bool,
) -> list[dict[str, Any]]:
    """The stack's parameters for this deploy. What the deploy is not given keeps its deployed
    value (infra.deploy_parameters); a change of the SES sending identity is refused unless
    asked, and said."""
    previous = _stack_parameter_values(cloudformation, stack) if exists else {}
    try:
        chosen = stack_parameters(args, previous if exists else None)
    except ParameterError as error:
        raise DeployError(f"{stack}: {error}") from None
    for note in chosen.notes:
        print(f"{stack}: {note}", flush=True)
    if chosen.values(previous).get("ManageApiGatewayAccount") != "true":
        require_api_gateway_logging_role(session)
    kept = [{"ParameterKey": k, "UsePreviousValue": True} for k in chosen.kept]
    parameters = with_settings_digest(template, chosen.given, previous)
    given = [{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()]
    return given + kept


def _execute_change_set(
    session: Any, cloudformation: Any, stack: str, change_set: str, exists: bool,
    allow_replace: bool,
) -> None:  # fmt: skip
    """Run the change set and wait for the stack; then delete the versions no alias runs."""
    if exists:
        # The stack policy would refuse what --allow-replace let through: lifted for this
        # update only, and put back below whatever happens.
        cloudformation.set_stack_policy(
            StackName=stack, StackPolicyBody=stack_policy(allow_replace)
        )
    cloudformation.execute_change_set(StackName=stack, ChangeSetName=change_set)
    waiter = "stack_update_complete" if exists else "stack_create_complete"
    try:
        cloudformation.get_waiter(waiter).wait(
            StackName=stack, WaiterConfig={"Delay": 10, "MaxAttempts": 360}
        )
    except Exception:
        raise DeployError(f"{stack} failed: {_first_failure(cloudformation, stack)}") from None
    finally:
        if _stack_exists_quietly(cloudformation, stack):
            cloudformation.set_stack_policy(StackName=stack, StackPolicyBody=stack_policy())
    for arn in prune_versions(session, stack):
        print(f"{stack}: deleted the old version {arn}", flush=True)


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


def stack_functions(session: Any, stack: str) -> list[str]:
    """The names of the stack's aliased functions (infra.operations.FUNCTIONS)."""
    from infra.operations import FUNCTIONS

    cloudformation = session.client("cloudformation")
    return [
        r["PhysicalResourceId"]
        for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack)
        for r in page["StackResourceSummaries"]
        if r["LogicalResourceId"] in FUNCTIONS and r.get("PhysicalResourceId")
    ]


def require_live_aliases(session: Any, stack: str) -> None:
    """Fail loudly when an alias `live` runs other code or another environment than its
    function's $LATEST (infra/alias_check.py): the stack was updated, but a function's callers
    still run what was there before."""
    from infra.alias_check import behind

    found = behind(session.client("lambda"), stack_functions(session, stack))
    if found:
        raise DeployError(
            f"{stack}: the stack is updated but {len(found)} alias(es) live do not run it: "
            + "; ".join(found)
            + ". A deploy by another path than make deploy (or make restore) published no "
            "version: run make deploy again"
        )
    print(f"{stack}: every alias live runs its function's $LATEST", flush=True)


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


def require_api_gateway_logging_role(session: Any) -> None:
    """Access logs need the account's API Gateway logging role; the stack sets it only when
    asked, since it is one setting for every API of the account and region."""
    role = session.client("apigateway").get_account().get("cloudwatchRoleArn")
    if not role:
        raise DeployError(
            "this account has no API Gateway logging role (its CloudWatch log role ARN), which "
            "the API's access logs need: run make deploy again with API_GATEWAY_ACCOUNT=1 to let "
            "the stack set it for the account and region (any other API there logs through it)"
        )


def _stack_parameter_values(cloudformation: Any, stack: str) -> dict[str, str]:
    [found] = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    return {p["ParameterKey"]: p.get("ParameterValue", "") for p in found.get("Parameters", [])}


def _stack_exists_quietly(cloudformation: Any, stack: str) -> bool:
    status = _stack_status(cloudformation, stack)
    return status is not None and status not in ("ROLLBACK_COMPLETE", "DELETE_COMPLETE")


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
    # Each optional setting: left out (None), the stack keeps its deployed value.
    parser.add_argument("--mail-sender-domain", default=None)
    parser.add_argument("--page-email", default=None, help="paged address (default: alarm email)")
    parser.add_argument("--ses-daily-quota", default=None, help="the account's SES 24-hour quota")
    parser.add_argument("--monthly-budget-usd", default=None, help="the month's budget, in USD")
    parser.add_argument(
        "--backup-region", default=None, help="prod: the region the tables are copied to daily"
    )
    parser.add_argument(
        "--mail-inbound-domain", default=None, help="the domain SES receives for (mail by push)"
    )
    parser.add_argument(
        "--mail-inbound-rule-set", default=None, help="an active SES rule set to add the rule to"
    )
    parser.add_argument(
        "--replace-sender-identity",
        action="store_true",
        help="let a changed sending domain replace the SES identity (mail fails until verified)",
    )
    parser.add_argument("--check", action="store_true", help="validate the arguments only")
    parser.add_argument(
        "--review", action="store_true", help="create the change set, leave executing it to you"
    )
    parser.add_argument(
        "--allow-replace",
        action="store_true",
        help="let the change replace or delete a table or the token secret (data is lost)",
    )
    parser.add_argument(
        "--api-gateway-account",
        action="store_const",
        const=True,
        default=None,
        help="let the stack set the account's API Gateway logging role (every API's)",
    )
    parser.add_argument(
        "--no-api-gateway-account",
        dest="api_gateway_account",
        action="store_const",
        const=False,
        help="stop setting it (left out: kept as deployed)",
    )
    parser.add_argument(
        "--all-at-once",
        action="store_true",
        help="a prod deploy moves the API at once, with no rollback alarm (an emergency fix)",
    )
    parser.add_argument(
        "--no-rollback-alarms",
        action="store_true",
        help="a prod canary ignores the new version's alarms (to land a fix)",
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
