"""What a deploy runs, as AWS runs it: the API itself (as API Gateway calls it), `migrate` (make
deploy invokes it after the stack update) and CodeDeploy's PreTraffic hook, which calls the API's
new version and tells CodeDeploy."""

from __future__ import annotations

import json

from tests.rehearsal import triggers


def body(answer: dict) -> dict:
    return json.loads(answer["body"])


def test_the_api_answers_as_api_gateway_calls_it(stage):
    login = "/api/v1/en_US/security/login"
    signed = stage.invoke(
        "APIHandler",
        triggers.api_call("POST", login, body={"email": "ann@agora.example", "password": "agora-demo-admin"}),
    )  # fmt: skip
    assert signed.error is None and signed.result["statusCode"] == 200, signed.log[-3000:]
    token = body(signed.result)["object"]
    listed = stage.invoke(
        "APIHandler", triggers.api_call("GET", "/api/v1/en_US/group/list", token=token)
    )
    assert listed.result["statusCode"] == 200, listed.log[-3000:]
    assert body(listed.result)["object"]["groups"]

    refused = stage.invoke(
        "APIHandler",
        triggers.api_call("POST", login, body={"email": "ann@agora.example", "password": "wrong-password"}),
    )  # fmt: skip
    assert refused.result["statusCode"] == 401
    assert body(refused.result)["success"] is False and "Traceback" not in refused.result["body"]


def test_migrate_brings_the_items_up_to_date_and_makes_the_canary(stage):
    migrated = stage.invoke("Migrate", {})
    assert migrated.error is None, migrated.log[-3000:]
    assert migrated.result["done"] is True, migrated.log[-3000:]
    again = stage.invoke("Migrate", {})
    assert again.result["done"] is True


def test_the_pre_traffic_hook_checks_the_new_version_and_tells_codedeploy(stage):
    stand_in = stage.stand_in
    stand_in.told.clear()
    hooked = stage.invoke("PreTraffic", triggers.codedeploy_hook())
    assert hooked.error is None, hooked.log[-3000:]
    assert hooked.result == {"status": "Succeeded", "failures": []}, hooked.log[-3000:]
    [told] = stand_in.told
    assert told["status"] == "Succeeded" and told["deploymentId"] == "d-REHEARSAL1"
    assert (
        "arn:aws:lambda:us-east-1:123456789012:function:agora-dev-APIHandler:1" in stand_in.invoked
    )


def test_the_pre_traffic_hook_fails_a_broken_version(stage):
    stand_in = stage.stand_in
    stand_in.told.clear()
    stand_in.broken_version = True
    try:
        hooked = stage.invoke("PreTraffic", triggers.codedeploy_hook())
    finally:
        stand_in.broken_version = False
    assert hooked.error is None, hooked.log[-3000:]
    assert hooked.result["status"] == "Failed" and hooked.result["failures"]
    [told] = stand_in.told
    assert told["status"] == "Failed"
