"""Deployment: the generated infra is current, and the packaged stack matches the code's tables."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import REPO_ROOT
from tests.support.running import free_port

PACKAGED = REPO_ROOT / "build" / "package" / "sam.yaml"


def test_infra_and_policies_are_generated_from_the_current_models():
    from infra.build import main

    assert main(["--check"]) == 0


def test_policies_grant_no_wildcard_action():
    import json

    for stage in ("dev", "prod"):
        policy = json.loads((REPO_ROOT / ".chalice" / f"policy-{stage}.json").read_text())
        for statement in policy["Statement"]:
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            assert all("*" not in action for action in actions), statement["Sid"]
            resources = (
                statement["Resource"]
                if isinstance(statement["Resource"], list)
                else [statement["Resource"]]
            )
            assert all(resource != "*" for resource in resources), statement["Sid"]


def moto_supported(template: dict) -> dict:
    """The packaged template without what moto cannot emulate (the SAM transform's functions and
    API, and the fragments merged into them): tables, key, queues and secret stay."""
    resources = {
        name: resource
        for name, resource in template["Resources"].items()
        if "Type" in resource
        and not resource["Type"].startswith(("AWS::Serverless::", "AWS::Lambda::"))
        and not resource["Type"].startswith("AWS::IAM::")
    }
    return {"AWSTemplateFormatVersion": "2010-09-09", "Resources": resources}


@pytest.mark.slow
def test_packaged_stack_creates_in_moto_and_the_api_works_on_its_tables():
    import boto3
    import yaml
    from moto.server import ThreadedMotoServer

    if not PACKAGED.exists():
        if os.environ.get("CI"):
            pytest.fail("build/package/sam.yaml is missing: make test runs make package first")
        pytest.skip("run `make package` first (make test does)")
    template = moto_supported(yaml.safe_load(PACKAGED.read_text()))
    assert sum(r["Type"] == "AWS::DynamoDB::Table" for r in template["Resources"].values()) >= 10
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        cloudformation = boto3.client(
            "cloudformation", endpoint_url=endpoint, region_name="us-east-1"
        )
        cloudformation.create_stack(StackName="agora-dev", TemplateBody=yaml.safe_dump(template))
        stack = cloudformation.describe_stacks(StackName="agora-dev")["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
        tables = boto3.client(
            "dynamodb", endpoint_url=endpoint, region_name="us-east-1"
        ).list_tables()["TableNames"]
        assert "agora-dev-comments" in tables
        env = {
            **os.environ,
            "AWS_ENDPOINT_URL": endpoint,
            "AGORA_TABLE_PREFIX": "agora-dev-",
            "AGORA_KMS_KEY_ID": "alias/agora-dev",
            "AGORA_MAILBOX_QUEUE": "agora-dev-mailbox-jobs",
            "PYTHONPATH": str(REPO_ROOT),
        }
        smoke = subprocess.run(
            [sys.executable, "-m", "tests.support.smoke"],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert smoke.returncode == 0, smoke.stdout + smoke.stderr[-3000:]
    finally:
        server.stop()
