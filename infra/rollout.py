"""Safe deploys and the API's own logs: function aliases, a gradual rollout of the API in prod
with alarms that roll it back, and API Gateway access logs.

- Every function publishes a version per deploy and moves its alias `live` to it
  (`AutoPublishAlias`); triggers (SQS, schedules, the API) call the alias, so a deploy is one
  switch, and a bad version can be stepped back from in the console.
- In prod the API's alias moves by CodeDeploy, 10% of calls for 10 minutes first
  (`Canary10Percent10Minutes`); the API 5xx, API latency and api-errors alarms roll it back.
  The jobs move at once: nothing measures them within minutes (a schedule may run monthly).
- Access logs: one JSON line per API call in `/aws/apigateway/agora-<stage>-access`, with the
  correlation id (API Gateway's request id, which the API uses when the caller sends no
  `X-Correlation-Id`; see chalicelib/api/routing.py).

Chalice writes the API's integration as `${APIHandler.Arn}` in its OpenAPI body, which calls the
function itself, not the alias: `point_api_at_alias` rewrites the packaged template
(infra/package.py calls it), since the body is generated at package time, not by `infra.build`.
"""

from __future__ import annotations

import json
from typing import Any

from infra.operations import ALIAS, FUNCTIONS

CANARY = "Canary10Percent10Minutes"
# What rolls a prod API deploy back (alarms of infra.operations and infra.monitoring).
ROLLBACK_ALARMS = ("Api5xxAlarm", "ApiLatencyAlarm", "APIHandlerErrorsAlarm")
LOG_RETENTION_DAYS = {"dev": 14, "prod": 90}

# API Gateway's own variables only: an access log cannot read request headers or the body.
ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "correlationId": "$context.requestId",
    "extendedRequestId": "$context.extendedRequestId",
    "time": "$context.requestTime",
    "ip": "$context.identity.sourceIp",
    "userAgent": "$context.identity.userAgent",
    "method": "$context.httpMethod",
    "path": "$context.path",
    "resourcePath": "$context.resourcePath",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integrationLatency",
    "integrationStatus": "$context.integrationStatus",
    "error": "$context.error.message",
}
APIGATEWAY_LOGS_POLICY = (
    "arn:${AWS::Partition}:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"
)


def rollout_resources(stage: str) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    resources: dict[str, Any] = {
        logical: {"Properties": {"AutoPublishAlias": ALIAS}} for logical in FUNCTIONS
    }
    if stage == "prod":
        resources["APIHandler"]["Properties"]["DeploymentPreference"] = {
            "Type": CANARY,
            "Alarms": [{"Ref": alarm} for alarm in ROLLBACK_ALARMS],
        }
    resources["ApiAccessLogGroup"] = {
        "Type": "AWS::Logs::LogGroup",
        "Properties": {
            "LogGroupName": f"/aws/apigateway/{prefix}-access",
            "RetentionInDays": LOG_RETENTION_DAYS[stage],
        },
    }
    resources["RestAPI"] = {
        "DependsOn": ["ApiGatewayAccount"],
        "Properties": {
            "AccessLogSetting": {
                "DestinationArn": {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]},
                "Format": json.dumps(ACCESS_LOG_FORMAT, separators=(",", ":")),
            }
        },
    }
    # API Gateway writes logs through one role per account and region (its "CloudWatch log role
    # ARN" setting). Retained: another stage's stack in the same account may rely on it.
    resources["ApiGatewayLoggingRole"] = {
        "Type": "AWS::IAM::Role",
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
        "Properties": {
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "apigateway.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            },
            "ManagedPolicyArns": [{"Fn::Sub": APIGATEWAY_LOGS_POLICY}],
        },
    }
    resources["ApiGatewayAccount"] = {
        "Type": "AWS::ApiGateway::Account",
        "Properties": {"CloudWatchRoleArn": {"Fn::GetAtt": ["ApiGatewayLoggingRole", "Arn"]}},
    }
    return resources


def point_api_at_alias(template: dict[str, Any]) -> dict[str, Any]:
    """The API's integrations and its invoke permission name the alias, not the function."""

    def rewrite(value: Any) -> Any:
        # SAM resolves `Ref: Function.Alias`, but not `${Function.Alias}` inside a Sub string.
        if (
            isinstance(value, dict)
            and set(value) == {"Fn::Sub"}
            and isinstance(value["Fn::Sub"], str)
        ):
            text = value["Fn::Sub"]
            if "${APIHandler.Arn}" in text:
                return {
                    "Fn::Sub": [
                        text.replace("${APIHandler.Arn}", "${APIHandlerAlias}"),
                        {"APIHandlerAlias": {"Ref": "APIHandler.Alias"}},
                    ]
                }
            return value
        if isinstance(value, list):
            return [rewrite(v) for v in value]
        if isinstance(value, dict):
            return {k: rewrite(v) for k, v in value.items()}
        return value

    resources = template["Resources"]
    resources["RestAPI"] = rewrite(resources["RestAPI"])
    for resource in resources.values():
        properties = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Lambda::Permission" and properties.get("FunctionName") == {
            "Ref": "APIHandler"
        }:
            properties["FunctionName"] = {"Ref": "APIHandler.Alias"}
    return template
