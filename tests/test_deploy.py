"""`make deploy` (CONTRACT §3): arguments checked before anything is built, then the package
uploaded and a change set of the stack `agora-<stage>` made with the stack parameters (moto's
CloudFormation cannot run the SAM transform, so the change set is made, not executed, here)."""

from __future__ import annotations

import argparse
import os

import pytest

from chalicelib.embedded_aws import start_moto_server, stop_moto_server
from infra.deploy import PACKAGE, main

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
    ],
)
def test_bad_arguments_are_one_line_before_any_work(capsys, change, message):
    argv = [item for pair in {**GOOD, **change}.items() for item in pair]
    assert main(["--check", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_good_arguments_pass_the_check(capsys):
    assert main(["--check", *[item for pair in GOOD.items() for item in pair]]) == 0


@pytest.mark.slow
def test_deploy_uploads_the_package_and_makes_a_change_set_with_the_parameters(monkeypatch):
    import boto3
    import yaml

    from infra.deploy import deploy

    if not (PACKAGE / "sam.yaml").exists():
        if os.environ.get("CI"):
            pytest.fail("build/package/sam.yaml is missing: make test runs make package first")
        pytest.skip("run `make package` first (make test does)")
    server = start_moto_server()
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
        )
        deploy(args, session)
        s3 = session.client("s3")
        bucket = "agora-deploy-123456789012-us-east-1"
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
        [code] = [k for k in keys if k.endswith(".zip")]
        [template_key] = [k for k in keys if k.endswith(".yaml")]
        uploaded = s3.get_object(Bucket=bucket, Key=code)["Body"].read()
        assert uploaded == (PACKAGE / "deployment.zip").read_bytes()
        template = yaml.safe_load(s3.get_object(Bucket=bucket, Key=template_key)["Body"].read())
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
        assert parameters == {
            "BaseUrl": "https://community.example.org",
            "AlarmEmail": "ops@example.org",
            "MailSenderDomain": "example.org",
        }
    finally:
        stop_moto_server(server)
