"""`make deploy` (CONTRACT §3): arguments checked before anything is built, then the package
uploaded and a change set of the stack `agora-<stage>` made with the stack parameters (moto's
CloudFormation cannot run the SAM transform, so the change set is made, not executed, here)."""

from __future__ import annotations

import argparse
import json
import os
import re

import pytest

from agora_local.embedded_aws import start_moto_server, stop_moto_server
from infra.deploy import PACKAGE, main
from tests.support import suite_key_pair

GOOD = {"--stage": "prod", "--base-url": "https://c.example.org", "--alarm-email": "ops@c.org"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--base-url": "community.example.org"}, "BASE_URL must be"),
        ({"--base-url": ""}, "BASE_URL must be"),
        ({"--alarm-email": ""}, "ALARM_EMAIL must be"),
        ({"--alarm-email": "ops"}, "ALARM_EMAIL must be"),
        ({"--stage": "qa"}, "STAGE must be dev or prod"),
        ({"--mail-sender-domain": "not a domain"}, "MAIL_SENDER_DOMAIN must be"),
        ({"--ses-daily-quota": "lots"}, "SES_DAILY_QUOTA must be"),
        ({"--ses-daily-quota": "0"}, "SES_DAILY_QUOTA must be"),
        ({"--monthly-budget-usd": "-5"}, "MONTHLY_BUDGET_USD must be"),
        ({"--page-email": "pager"}, "PAGE_EMAIL must be"),
        ({"--backup-region": "Europe"}, "BACKUP_REGION must be"),
        ({"--stage": "dev", "--backup-region": "eu-west-1"}, "BACKUP_REGION is a prod"),
    ],
)
def test_bad_arguments_are_one_line_before_any_work(capsys, change, message):
    argv = [item for pair in {**GOOD, **change}.items() for item in pair]
    assert main(["--check", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_good_arguments_pass_the_check(capsys):
    assert main(["--check", *[item for pair in GOOD.items() for item in pair]]) == 0


# A deploy keeps what it is not given (issue 57): leaving out MAIL_SENDER_DOMAIN sent it empty,
# which replaced the SES identity (create-only) and deleted the verified one; PAGE_EMAIL too.

DEPLOYED_STACK = {
    "BaseUrl": "https://c.example.org",
    "AlarmEmail": "ops@c.org",
    "MailSenderDomain": "mail.c.org",
    "PageEmail": "pager@c.org",
    "SesDailyQuota": "150000",
    "MonthlyBudgetUsd": "400",
    "ManageApiGatewayAccount": "true",
    "TableNames": "agora-prod-posts.20261126T080000Z",
    "RollbackOnAlarms": "false",
    "DeployAllAtOnce": "true",
    "SettingsDigest": "a" * 64,
}


def _arguments(*extra: str) -> argparse.Namespace:
    from infra.deploy import parser

    return parser().parse_args([item for pair in GOOD.items() for item in pair] + list(extra))


@pytest.mark.fast
def test_a_deploy_not_given_an_optional_setting_keeps_the_deployed_value():
    from infra.deploy_parameters import stack_parameters

    chosen = stack_parameters(_arguments(), DEPLOYED_STACK)
    assert sorted(chosen.kept) == sorted(
        ["MailSenderDomain", "PageEmail", "SesDailyQuota", "MonthlyBudgetUsd",
         "ManageApiGatewayAccount", "TableNames"]
    )  # fmt: skip
    # The canary's switches are this deploy's only: back to a canary with its alarms.
    assert chosen.given == {
        "BaseUrl": "https://c.example.org",
        "AlarmEmail": "ops@c.org",
        "RollbackOnAlarms": "true",
        "DeployAllAtOnce": "false",
    }
    assert chosen.notes == []
    assert chosen.values(DEPLOYED_STACK)["MailSenderDomain"] == "mail.c.org"


@pytest.mark.fast
def test_a_setting_given_is_set_and_one_given_empty_is_emptied():
    from infra.deploy_parameters import stack_parameters

    chosen = stack_parameters(
        _arguments("--page-email", "", "--ses-daily-quota", "200000", "--no-api-gateway-account",
                   "--monthly-budget-usd", ""),
        DEPLOYED_STACK,
    )  # fmt: skip
    assert chosen.given["PageEmail"] == "" and chosen.given["SesDailyQuota"] == "200000"
    assert chosen.given["ManageApiGatewayAccount"] == "false"
    # An empty number is no number: kept.
    assert "MonthlyBudgetUsd" in chosen.kept and "MonthlyBudgetUsd" not in chosen.given


@pytest.mark.fast
def test_a_first_deploy_not_given_a_setting_takes_the_template_default():
    from infra.deploy_parameters import stack_parameters

    chosen = stack_parameters(_arguments("--stage", "dev"), None)
    assert chosen.given == {"BaseUrl": "https://c.example.org", "AlarmEmail": "ops@c.org"}
    assert chosen.kept == []


@pytest.mark.fast
@pytest.mark.parametrize(
    "arguments",
    [
        ["--mail-sender-domain", "other.org"],
        ["--mail-sender-domain", ""],  # empty: the host of BASE_URL, another domain
    ],
)
def test_replacing_the_sending_identity_is_refused_unless_asked_and_says_what_it_does(arguments):
    from infra.deploy_parameters import ParameterError, stack_parameters

    with pytest.raises(ParameterError) as refused:
        stack_parameters(_arguments(*arguments), DEPLOYED_STACK)
    message = str(refused.value)
    assert "deletes the verified identity mail.c.org" in message
    assert "REPLACE_SENDER_IDENTITY=1" in message and "Nothing was changed" in message
    chosen = stack_parameters(_arguments(*arguments, "--replace-sender-identity"), DEPLOYED_STACK)
    [note] = chosen.notes
    assert "mail.c.org is replaced by" in note and "DKIM" in note


@pytest.mark.fast
def test_the_backup_region_is_a_prod_setting_kept_like_the_others():
    from infra.deploy_parameters import ParameterError, stack_parameters

    chosen = stack_parameters(_arguments("--backup-region", "eu-west-1"), DEPLOYED_STACK)
    assert chosen.given["BackupRegion"] == "eu-west-1"
    kept = stack_parameters(_arguments(), {**DEPLOYED_STACK, "BackupRegion": "eu-west-1"})
    assert "BackupRegion" in kept.kept
    with pytest.raises(ParameterError, match="prod"):
        stack_parameters(_arguments("--stage", "dev", "--backup-region", "eu-west-1"), None)


@pytest.mark.fast
def test_a_new_base_url_host_replaces_an_identity_named_after_it():
    from infra.deploy_parameters import ParameterError, stack_parameters

    stack = {**DEPLOYED_STACK, "MailSenderDomain": ""}
    # The same host, or MailSenderDomain set to it: the same identity, nothing replaced.
    assert stack_parameters(_arguments(), stack).notes == []
    same = _arguments("--mail-sender-domain", "c.example.org")
    assert stack_parameters(same, stack).notes == []
    moved = _arguments("--base-url", "https://club.example.net")
    with pytest.raises(ParameterError, match="c.example.org is replaced by club.example.net"):
        stack_parameters(moved, stack)


@pytest.mark.slow
def test_deploy_uploads_the_package_and_makes_a_change_set_with_the_parameters(monkeypatch):
    import boto3

    from infra import yaml_text
    from infra.deploy import deploy

    if not (PACKAGE / "sam.yaml").exists():
        if os.environ.get("CI"):
            pytest.fail("build/package/sam.yaml is missing: make test runs make package first")
        pytest.skip("run `make package` first (make test does)")
    server = start_moto_server(suite_key_pair())
    port = server.get_host_and_port()[1]
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
        session = boto3.session.Session(region_name="us-east-1")
        args = argparse.Namespace(
            stage="dev",
            base_url="https://community.example.org",
            alarm_email="ops@example.org",
            mail_sender_domain="example.org",
            review=True,
            api_gateway_account=True,  # moto's account has no API Gateway logging role
            ses_daily_quota="50000",
            monthly_budget_usd="",  # not given: the stack's default, or the last deploy's
        )
        deploy(args, session)
        s3 = session.client("s3")
        bucket = "agora-deploy-123456789012-us-east-1"
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
        [code] = [k for k in keys if k.endswith(".zip")]
        [template_key] = [k for k in keys if k.endswith(".yaml")]
        uploaded = s3.get_object(Bucket=bucket, Key=code)["Body"].read()
        assert uploaded == (PACKAGE / "deployment.zip").read_bytes()
        template = yaml_text.load(s3.get_object(Bucket=bucket, Key=template_key)["Body"].read())
        assert template["Resources"]["APIHandler"]["Properties"]["CodeUri"] == {
            "Bucket": bucket,
            "Key": code,
        }
        cloudformation = session.client("cloudformation")
        [summary] = cloudformation.list_change_sets(StackName="agora-dev")["Summaries"]
        change_set = cloudformation.describe_change_set(
            StackName="agora-dev", ChangeSetName=summary["ChangeSetName"]
        )
        parameters = {p["ParameterKey"]: p["ParameterValue"] for p in change_set["Parameters"]}
        # Every function's version is named after it (infra.rollout, tests/infra/test_restore.py).
        assert re.fullmatch("[0-9a-f]{64}", parameters.pop("SettingsDigest"))
        assert parameters == {
            "BaseUrl": "https://community.example.org",
            "AlarmEmail": "ops@example.org",
            "MailSenderDomain": "example.org",
            "SesDailyQuota": "50000",
            "ManageApiGatewayAccount": "true",
        }
    finally:
        stop_moto_server(server)


# A failed first create (ROLLBACK_COMPLETE) and what make deploy does about it, and termination
# protection (moto's CloudFormation has no UpdateTerminationProtection: a botocore hook answers
# that one call the way CloudFormation does, and records it).

TABLES = ("agora-prod-users", "agora-prod-posts")
LEFT_BY_FAILED_CREATE = {
    "Resources": {
        f"Table{n}": {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": name}}
        for n, name in enumerate(TABLES)
    }
}


@pytest.fixture
def aws(monkeypatch):
    import boto3
    from moto import mock_aws

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        dynamodb = session.client("dynamodb")
        for name in TABLES:
            dynamodb.create_table(
                TableName=name,
                KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
                DeletionProtectionEnabled=True,
            )
        cloudformation = session.client("cloudformation")
        queue = {"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}
        cloudformation.create_stack(StackName="agora-prod", TemplateBody=json.dumps(queue))
        yield session


def test_a_failed_first_create_with_empty_tables_is_cleared_for_the_next_create(aws):
    from infra.deploy import _stack_status, clear_failed_first_create

    deleted = clear_failed_first_create(aws, "agora-prod", LEFT_BY_FAILED_CREATE)
    assert deleted == sorted(TABLES)
    assert aws.client("dynamodb").list_tables()["TableNames"] == []
    assert _stack_status(aws.client("cloudformation"), "agora-prod") is None


def test_tables_holding_data_are_never_deleted_and_deploy_says_which(aws):
    from infra.deploy import DeployError, _stack_status, clear_failed_first_create

    aws.client("dynamodb").put_item(TableName="agora-prod-posts", Item={"id": {"S": "1"}})
    with pytest.raises(DeployError, match="agora-prod-posts") as refused:
        clear_failed_first_create(aws, "agora-prod", LEFT_BY_FAILED_CREATE)
    assert "agora-prod-users" not in str(refused.value)
    assert sorted(aws.client("dynamodb").list_tables()["TableNames"]) == sorted(TABLES)
    assert _stack_status(aws.client("cloudformation"), "agora-prod") == "CREATE_COMPLETE"


def test_prod_stack_gets_termination_protection():
    import boto3
    from botocore.awsrequest import AWSResponse
    from botocore.compat import HTTPHeaders

    from infra.deploy import protect

    sent: list[bytes] = []

    class Raw:
        def stream(self, **_):
            yield (
                b"<UpdateTerminationProtectionResponse><UpdateTerminationProtectionResult>"
                b"<StackId>agora-prod</StackId></UpdateTerminationProtectionResult>"
                b"</UpdateTerminationProtectionResponse>"
            )

    def answer(request, **_):
        sent.append(request.body if isinstance(request.body, bytes) else request.body.encode())
        return AWSResponse("http://cloudformation.invalid/", 200, HTTPHeaders(), Raw())

    # Not under moto, whose stubber answers before any hook: this one call never leaves.
    cloudformation = boto3.session.Session(
        region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    ).client("cloudformation", endpoint_url="http://cloudformation.invalid")
    cloudformation.meta.events.register_first(
        "before-send.cloudformation.UpdateTerminationProtection", answer
    )
    protect(cloudformation, "agora-prod")
    [body] = sent
    assert b"EnableTerminationProtection=true" in body and b"StackName=agora-prod" in body


# Data that survives a bad deploy (issue 38): a change set that would replace or delete a table
# or the token secret is refused and deleted; old versions are pruned; the account-wide API
# Gateway setting is made only when asked.

STACK_WITH_DATA = {
    "Resources": {
        "PostsTable": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "TableName": "agora-prod-posts",
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
            },
        },
        "Jobs": {"Type": "AWS::SQS::Queue"},
    }
}


def _changed(cloudformation, template: dict, name: str = "next") -> dict:
    cloudformation.create_change_set(
        StackName="agora-prod",
        ChangeSetName=name,
        ChangeSetType="UPDATE",
        TemplateBody=json.dumps(template),
    )
    return cloudformation.describe_change_set(StackName="agora-prod", ChangeSetName=name)


@pytest.fixture
def stack_with_data(monkeypatch):
    import boto3
    from moto import mock_aws

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        session.client("cloudformation").create_stack(
            StackName="agora-prod", TemplateBody=json.dumps(STACK_WITH_DATA)
        )
        yield session


@pytest.mark.fast
def test_data_losses_name_replaced_and_deleted_tables_and_the_secret_only():
    from infra.deploy import data_losses

    def change(kind, action, replacement=None, logical="X"):
        resource = {"ResourceType": kind, "Action": action, "LogicalResourceId": logical}
        if replacement:
            resource["Replacement"] = replacement
        return {"Type": "Resource", "ResourceChange": resource}

    assert data_losses([
        change("AWS::DynamoDB::Table", "Modify", "True", "PostsTable"),
        change("AWS::SecretsManager::Secret", "Modify", "Conditional", "TokenSecret"),
        change("AWS::DynamoDB::Table", "Remove", logical="UsersTable"),
        change("AWS::DynamoDB::Table", "Modify", "False", "GroupsTable"),
        change("AWS::DynamoDB::Table", "Add", logical="NewTable"),
        change("AWS::SQS::Queue", "Remove", logical="Queue"),
        change("AWS::Lambda::Function", "Modify", "True", "APIHandler"),
    ]) == ["PostsTable (replaced)", "TokenSecret (replaced)", "UsersTable (deleted)"]  # fmt: skip


def test_a_change_set_that_deletes_a_table_is_refused_and_deleted(stack_with_data):
    from infra.deploy import DeployError, refuse_data_loss

    aws = stack_with_data
    cloudformation = aws.client("cloudformation")
    without_table = {"Resources": {"Jobs": STACK_WITH_DATA["Resources"]["Jobs"]}}
    described = _changed(cloudformation, without_table)
    with pytest.raises(DeployError, match=r"PostsTable \(deleted\).*ALLOW_REPLACE=1"):
        refuse_data_loss(cloudformation, "agora-prod", "next", described, allow=False)
    assert cloudformation.list_change_sets(StackName="agora-prod")["Summaries"] == []
    # Told to, it lets the same change through (and leaves the change set to be executed).
    described = _changed(cloudformation, without_table, "allowed")
    refuse_data_loss(cloudformation, "agora-prod", "allowed", described, allow=True)
    assert len(cloudformation.list_change_sets(StackName="agora-prod")["Summaries"]) == 1


def test_a_change_set_that_replaces_a_table_is_refused(stack_with_data):
    """A new table name replaces the table. moto's change sets do not say Replacement, so a
    botocore hook adds what CloudFormation answers for it."""
    from infra.deploy import DeployError, refuse_data_loss

    aws = stack_with_data
    cloudformation = aws.client("cloudformation")

    def as_cloudformation_says(parsed, **_):
        for change in parsed.get("Changes", []):
            resource = change["ResourceChange"]
            if resource["LogicalResourceId"] == "PostsTable" and resource["Action"] == "Modify":
                resource["Replacement"] = "True"

    cloudformation.meta.events.register(
        "after-call.cloudformation.DescribeChangeSet", as_cloudformation_says
    )
    renamed = json.loads(json.dumps(STACK_WITH_DATA))
    renamed["Resources"]["PostsTable"]["Properties"]["TableName"] = "agora-prod-posts-2"
    described = _changed(cloudformation, renamed)
    said = {
        c["ResourceChange"]["LogicalResourceId"]: c["ResourceChange"] for c in described["Changes"]
    }
    assert said["PostsTable"]["Replacement"] == "True"
    with pytest.raises(DeployError, match=r"PostsTable \(replaced\)"):
        refuse_data_loss(cloudformation, "agora-prod", "next", described, allow=False)
    assert cloudformation.list_change_sets(StackName="agora-prod")["Summaries"] == []


@pytest.mark.fast
def test_the_stack_policy_denies_replacing_or_deleting_data_unless_allowed():
    from infra.deploy import PROTECTED_TYPES, stack_policy

    [allow, deny] = json.loads(stack_policy())["Statement"]
    assert allow["Effect"] == "Allow" and allow["Action"] == "Update:*"
    assert deny["Effect"] == "Deny" and set(deny["Action"]) == {"Update:Replace", "Update:Delete"}
    assert deny["Condition"]["StringEquals"]["ResourceType"] == list(PROTECTED_TYPES)
    assert [s["Effect"] for s in json.loads(stack_policy(True))["Statement"]] == ["Allow"]


def test_old_versions_are_pruned_but_the_last_three_and_the_aliased(monkeypatch):
    import boto3
    from moto import mock_aws

    from infra.deploy import prune_versions

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        role = session.client("iam").create_role(RoleName="fn", AssumeRolePolicyDocument="{}")[
            "Role"
        ]["Arn"]
        function = {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Runtime": "python3.12",
                "Handler": "index.handler",
                "Role": role,
                "Code": {"ZipFile": "def handler(event, context):\n    return 1\n"},
            },
        }
        cloudformation = session.client("cloudformation")
        cloudformation.create_stack(
            StackName="agora-prod", TemplateBody=json.dumps({"Resources": {"Api": function}})
        )
        [name] = [
            r["PhysicalResourceId"]
            for r in cloudformation.describe_stack_resources(StackName="agora-prod")[
                "StackResources"
            ]
        ]
        lambdas = session.client("lambda")
        for n in range(6):
            lambdas.update_function_configuration(FunctionName=name, Description=f"v{n}")
            lambdas.publish_version(FunctionName=name)
        lambdas.create_alias(FunctionName=name, Name="live", FunctionVersion="2")

        deleted = prune_versions(session, "agora-prod")

        left = [
            v["Version"] for v in lambdas.list_versions_by_function(FunctionName=name)["Versions"]
        ]
        assert sorted(left) == ["$LATEST", "2", "4", "5", "6"]
        assert sorted(arn.rsplit(":", 1)[1] for arn in deleted) == ["1", "3"]


def test_no_account_wide_api_gateway_role_unless_asked(monkeypatch):
    import boto3
    from moto import mock_aws

    from infra.deploy import DeployError, parser, require_api_gateway_logging_role

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        with pytest.raises(DeployError, match="API_GATEWAY_ACCOUNT=1"):
            require_api_gateway_logging_role(session)
        session.client("apigateway").update_account(
            patchOperations=[
                {"op": "replace", "path": "/cloudwatchRoleArn", "value": "arn:aws:iam::1:role/x"}
            ]
        )
        require_api_gateway_logging_role(session)  # the account's own role: nothing to ask
    args = parser().parse_args(["--stage", "prod", "--api-gateway-account"])
    assert args.api_gateway_account and not args.allow_replace and not args.no_rollback_alarms
