"""Safe deploys and the API's own logs: function aliases, a gradual rollout of the API in prod
with alarms that roll it back, and API Gateway access logs.

- Every function publishes a version per deploy and moves its alias `live` to it
  (`AutoPublishAlias`); triggers (SQS, schedules, the API) call the alias, so a deploy is one
  switch, and a bad version can be stepped back from in the console.
- In prod the API's alias moves by CodeDeploy, 10% of calls for 10 minutes first
  (`Canary10Percent10Minutes`), after the PreTraffic hook has signed in and read and written
  through the new version; the new version's own errors, 5xx answers and p99 duration roll it
  back. The jobs move at once, with the stack (no CodeDeploy): their failures are alarmed, never
  a rollback, so no job's error can roll an API fix back (issue 48), and nothing measures a
  monthly schedule within minutes anyway. `make deploy ALL_AT_ONCE=1` (parameter
  DeployAllAtOnce) moves the API at once too, with no rollback alarm and no PreTraffic hook: the
  emergency switch.
- Access logs: one JSON line per API call in `/aws/apigateway/agora-<stage>-access`, with the
  correlation id (API Gateway's request id, which the API uses when the caller sends no
  `X-Correlation-Id`; see chalicelib/api/routing.py).

A version sees the stack's settings (issue 48): SAM names each function's `AWS::Lambda::Version`
after a hash of its properties with the stack's parameters unresolved (aws-sam-translator #1640),
so a deploy that changed only `BaseUrl`, `MailSenderDomain` or `TableNames` (make restore)
published no version, and every alias kept the old environment. `AutoPublishCodeSha256` is the
version's whole identity instead: the parameter `SettingsDigest`, a hash of every function's
properties and of the values of the parameters they read (`settings_digest`), which `make deploy`
and `make restore` compute and pass. SAM also appends it to each function's description, so
Lambda publishes a new version even when nothing else of the function changed. (Baking the
values into the template would make `make restore` rewrite and upload the template; reading them
at run time from SSM would add a cache, its grants and a window where functions disagree.)

Chalice writes the API's integration as `${APIHandler.Arn}` in its OpenAPI body, which calls the
function itself, not the alias: `point_api_at_alias` rewrites the packaged template
(infra/package.py calls it), since the body is generated at package time, not by `infra.build`.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from chalicelib.settings import SERVICE
from infra.operations import ALIAS, FUNCTIONS
from infra.privileges import assumed_by

CANARY = "Canary10Percent10Minutes"
# CodeDeploy's PreTraffic hook (app.py `pre-traffic`, chalicelib/jobs/pre_traffic.py). SAM's
# CodeDeploy role may only invoke functions named CodeDeployHook_*.
HOOK = "PreTraffic"
# The parameter every function's version is named after (AutoPublishCodeSha256).
SETTINGS_DIGEST = "SettingsDigest"
# What of a function's properties is not the function itself: how it rolls out.
NOT_THE_FUNCTION = ("DeploymentPreference", "AutoPublishCodeSha256", "AutoPublishAlias")
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


def rollout_resources(stage: str, rollback: list[str]) -> dict[str, Any]:
    """`rollback`: the alarms that roll a prod deploy back (infra.alarms, its `rollback` column):
    the new version's own (ExecutedVersion, Version; 1-minute periods), never the whole API's,
    so an alarm already firing on the old version does not roll back the fix. The hook has
    checked the version before any traffic. The routing layer answers a failure with a 500,
    which is no Lambda error: the version's 5xx answers (ServerErrors) are one of them."""
    prefix = f"agora-{stage}"
    resources: dict[str, Any] = {
        logical: {
            "Properties": {
                "AutoPublishAlias": ALIAS,
                "AutoPublishCodeSha256": {"Ref": SETTINGS_DIGEST},
            }
        }
        for logical in FUNCTIONS
    }
    if stage == "prod":
        # The API alone: the jobs' aliases move with the stack (module docstring).
        resources["APIHandler"]["Properties"]["DeploymentPreference"] = {
            "Type": {"Fn::If": ["DeploysAllAtOnce", "AllAtOnce", CANARY]},
            "Alarms": {
                "Fn::If": [
                    "RollbackOnAlarms",
                    [{"Ref": alarm} for alarm in rollback],
                    # SAM reads a list with no alarm as none (make deploy ROLLBACK_ALARMS=0).
                    [{"Ref": "AWS::NoValue"}],
                ]
            },
            # The emergency switch skips the hook too (CloudFormation takes Fn::If in the
            # alias's UpdatePolicy, where SAM puts it): a deploy that must land now does not
            # wait on a check of the version it replaces the broken one with.
            "Hooks": {
                "PreTraffic": {
                    "Fn::If": ["DeploysAllAtOnce", {"Ref": "AWS::NoValue"}, {"Ref": HOOK}]
                }
            },
        }
    resources.update(hook_resources(stage))
    resources.update(alias_check_resources(stage))
    resources["ApiAccessLogGroup"] = {
        "Type": "AWS::Logs::LogGroup",
        "Properties": {
            "LogGroupName": f"/aws/apigateway/{prefix}-access",
            "RetentionInDays": LOG_RETENTION_DAYS[stage],
        },
    }
    resources["RestAPI"] = {
        "Properties": {
            "AccessLogSetting": {
                "DestinationArn": {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]},
                "Format": json.dumps(ACCESS_LOG_FORMAT, separators=(",", ":")),
            }
        },
    }
    # API Gateway writes access logs through one role per account and region (its "CloudWatch
    # log role ARN" setting), shared by every API of the account: made only when asked
    # (`make deploy API_GATEWAY_ACCOUNT=1`, parameter ManageApiGatewayAccount), since it replaces
    # whatever role another stack set. deploy.py asks when the account has none.
    resources["ApiGatewayLoggingRole"] = {
        "Type": "AWS::IAM::Role",
        "Condition": "ManagesApiGatewayAccount",
        # Kept when the stack goes (another API of the account may log through it), but not
        # left behind by a first create that failed.
        "DeletionPolicy": "RetainExceptOnCreate",
        "UpdateReplacePolicy": "Retain",
        "Properties": {
            "AssumeRolePolicyDocument": assumed_by("apigateway.amazonaws.com"),
            "ManagedPolicyArns": [{"Fn::Sub": APIGATEWAY_LOGS_POLICY}],
        },
    }
    resources["ApiGatewayAccount"] = {
        "Type": "AWS::ApiGateway::Account",
        "Condition": "ManagesApiGatewayAccount",
        "Properties": {"CloudWatchRoleArn": {"Fn::GetAtt": ["ApiGatewayLoggingRole", "Arn"]}},
    }
    return resources


def hook_resources(stage: str) -> dict[str, Any]:
    """The PreTraffic hook: named for SAM's CodeDeploy role, told the API's new version, allowed
    to call that function's versions only. Its log group's grant is infra.operations'."""
    return {
        HOOK: {
            "Properties": {
                "FunctionName": {"Fn::Sub": "CodeDeployHook_${AWS::StackName}-pre-traffic"},
                "Environment": {
                    "Variables": {
                        "AGORA_PRE_TRAFFIC_VERSION": {"Ref": "APIHandler.Version"},
                        "POWERTOOLS_SERVICE_NAME": SERVICE,
                    }
                },
            }
        },
        f"{HOOK}InvokePolicy": {
            "Type": "AWS::IAM::Policy",
            "Properties": {
                "PolicyName": "invoke-the-api-versions",
                "Roles": [{"Ref": f"{HOOK}Role"}],
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "NewApiVersion",
                            "Effect": "Allow",
                            "Action": ["lambda:InvokeFunction"],
                            "Resource": {"Fn::Sub": "${APIHandler.Arn}:*"},
                        }
                    ],
                },
            },
        },
    }


CHECK_ALIASES = "CheckAliases"
CHECK_ALIASES_RATE = "rate(1 hour)"


def alias_check_resources(stage: str) -> dict[str, Any]:
    """check-aliases (infra/alias_check.py, inline: no Agora code, no alias of its own): every
    hour, each alias `live` against its function's $LATEST, as AliasesBehind; its alarm
    (infra.alarms) tickets a deploy that bypassed make deploy (a code or setting change that
    published no version)."""
    from pathlib import Path

    from infra import alias_check

    prefix = f"agora-{stage}"
    name = f"{prefix}-check-aliases"
    source = Path(alias_check.__file__).read_text()
    assert len(source) < 4096, "Lambda's inline code (ZipFile) holds 4 KB"
    functions = [{"Fn::GetAtt": [logical, "Arn"]} for logical in FUNCTIONS]
    failures = {"Fn::GetAtt": ["ScheduledFailuresQueue", "Arn"]}
    return {
        f"{CHECK_ALIASES}LogGroup": {
            "Type": "AWS::Logs::LogGroup",
            "Properties": {
                "LogGroupName": f"/aws/lambda/{name}",
                "RetentionInDays": LOG_RETENTION_DAYS[stage],
            },
        },
        f"{CHECK_ALIASES}Role": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": assumed_by("lambda.amazonaws.com"),
                "Policies": [
                    {
                        "PolicyName": "read-the-aliases",
                        "PolicyDocument": {
                            "Version": "2012-10-17",
                            "Statement": [
                                {
                                    "Sid": "Aliases",
                                    "Effect": "Allow",
                                    "Action": [
                                        "lambda:GetFunctionConfiguration",
                                        "lambda:GetAlias",
                                    ],
                                    "Resource": [
                                        *functions,
                                        *(
                                            {"Fn::Sub": f"${{{logical}.Arn}}:*"}
                                            for logical in FUNCTIONS
                                        ),
                                    ],
                                },
                                {
                                    "Sid": "FailedRuns",
                                    "Effect": "Allow",
                                    "Action": ["sqs:SendMessage"],
                                    "Resource": failures,
                                },
                                {
                                    "Sid": "Metric",
                                    "Effect": "Allow",
                                    "Action": ["cloudwatch:PutMetricData"],
                                    "Resource": "*",
                                    "Condition": {
                                        "StringEquals": {"cloudwatch:namespace": "Agora"}
                                    },
                                },
                                {
                                    "Sid": "Logs",
                                    "Effect": "Allow",
                                    "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                                    "Resource": {"Fn::GetAtt": [f"{CHECK_ALIASES}LogGroup", "Arn"]},
                                },
                            ],
                        },
                    }
                ],
            },
        },
        CHECK_ALIASES: {
            "Type": "AWS::Lambda::Function",
            "DependsOn": [f"{CHECK_ALIASES}LogGroup"],
            "Properties": {
                "FunctionName": name,
                "Description": "Each alias live runs its function's $LATEST (AliasesBehind)",
                "Runtime": "python3.12",
                "Handler": "index.handler",
                "Timeout": 60,
                "MemorySize": 128,
                "Role": {"Fn::GetAtt": [f"{CHECK_ALIASES}Role", "Arn"]},
                "Code": {"ZipFile": source},
                "Environment": {
                    "Variables": {
                        "AGORA_ALIASED_FUNCTIONS": {
                            "Fn::Join": [",", [{"Ref": logical} for logical in FUNCTIONS]]
                        },
                        "AGORA_STACK": prefix,
                        # Powertools' dimension of every Agora metric, which the alarm reads.
                        "AGORA_SERVICE": SERVICE,
                    }
                },
            },
        },
        f"{CHECK_ALIASES}Schedule": {
            "Type": "AWS::Events::Rule",
            "Properties": {
                # Named: the scheduled-failures queue takes its undelivered events (its policy
                # names the rule: infra.monitoring.schedule_names).
                "Name": name,
                "ScheduleExpression": CHECK_ALIASES_RATE,
                "Targets": [
                    {
                        "Id": "check-aliases",
                        "Arn": {"Fn::GetAtt": [CHECK_ALIASES, "Arn"]},
                        "DeadLetterConfig": {"Arn": failures},
                    }
                ],
            },
        },
        # Not retried (the next hour's run is the retry): a failed run's event goes to the
        # scheduled-failures queue, as the scheduled jobs' do, and its errors alarm tickets.
        f"{CHECK_ALIASES}InvokeConfig": {
            "Type": "AWS::Lambda::EventInvokeConfig",
            "Properties": {
                "FunctionName": {"Ref": CHECK_ALIASES},
                "Qualifier": "$LATEST",
                "MaximumRetryAttempts": 0,
                "DestinationConfig": {"OnFailure": {"Destination": failures}},
            },
        },
        f"{CHECK_ALIASES}Permission": {
            "Type": "AWS::Lambda::Permission",
            "Properties": {
                "Action": "lambda:InvokeFunction",
                "FunctionName": {"Ref": CHECK_ALIASES},
                "Principal": "events.amazonaws.com",
                "SourceArn": {"Fn::GetAtt": [f"{CHECK_ALIASES}Schedule", "Arn"]},
            },
        },
    }


def parameters(stage: str) -> dict[str, Any]:
    found = {
        "ManageApiGatewayAccount": {
            "Type": "String",
            "AllowedValues": ["true", "false"],
            "Default": "false",
            "Description": "true: the stack sets the account's API Gateway logging role (for "
            "every API of the account and region); make deploy API_GATEWAY_ACCOUNT=1",
        },
        # No default, and a whole digest: a deploy that does not compute it is refused (a
        # stack update that keeps the previous value publishes nothing: check-aliases sees it).
        SETTINGS_DIGEST: {
            "Type": "String",
            "AllowedPattern": "^[0-9a-f]{64}$",
            "MinLength": 64,
            "MaxLength": 64,
            "ConstraintDescription": "the SHA-256 make deploy and make restore compute (the one "
            "supported path: docs/deploy.md)",
            "Description": "make deploy and make restore set it: a hash of the functions and of "
            "the parameters they read; each new value publishes a version of every function. A "
            "parameter the functions read changed any other way reaches no function",
        },
        "RollbackOnAlarms": {
            "Type": "String",
            "AllowedValues": ["true", "false"],
            "Default": "true",
            "Description": "false: a prod deploy's canary ignores the new version's alarms "
            "(make deploy ROLLBACK_ALARMS=0, to land a fix that the alarms would refuse)",
        },
    }
    found["DeployAllAtOnce"] = {
        "Type": "String",
        "AllowedValues": ["true", "false"],
        "Default": "false",
        "Description": "true: a prod deploy moves the API to the new version at once, with no "
        "rollback alarm and no PreTraffic hook (make deploy ALL_AT_ONCE=1, the emergency switch)",
    }
    if stage != "prod":  # no canary outside prod
        del found["RollbackOnAlarms"], found["DeployAllAtOnce"]
    return found


def conditions(stage: str) -> dict[str, Any]:
    found = {
        "ManagesApiGatewayAccount": {"Fn::Equals": [{"Ref": "ManageApiGatewayAccount"}, "true"]}
    }
    if stage == "prod":
        found["DeploysAllAtOnce"] = {"Fn::Equals": [{"Ref": "DeployAllAtOnce"}, "true"]}
        found["RollbackOnAlarms"] = {
            "Fn::And": [
                {"Fn::Equals": [{"Ref": "RollbackOnAlarms"}, "true"]},
                {"Fn::Not": [{"Condition": "DeploysAllAtOnce"}]},
            ]
        }
    return found


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


def _referenced(value: Any, template: dict[str, Any], found: set[str]) -> None:
    """Names a value refers to: `Ref`, `${Name}` in `Fn::Sub`, and the parameters of the
    conditions its `Fn::If`s test."""
    if isinstance(value, list):
        for item in value:
            _referenced(item, template, found)
        return
    if not isinstance(value, dict):
        return
    for key, inner in value.items():
        if key == "Ref" and isinstance(inner, str):
            found.add(inner)
        elif key == "Fn::Sub":
            text = inner if isinstance(inner, str) else inner[0]
            found.update(re.findall(r"\$\{([A-Za-z0-9]+)\}", text))
            if isinstance(inner, list):
                _referenced(inner[1:], template, found)
        elif key == "Fn::If":
            condition = template.get("Conditions", {}).get(inner[0], {})
            _referenced(condition, template, found)
            _referenced(inner[1:], template, found)
        else:
            _referenced(inner, template, found)


def function_parameters(template: dict[str, Any]) -> list[str]:
    """The stack parameters the functions' own properties read (their environment, mostly)."""
    found: set[str] = set()
    for resource in template["Resources"].values():
        if resource.get("Type") == "AWS::Serverless::Function":
            properties = resource.get("Properties", {})
            own = {k: v for k, v in properties.items() if k not in NOT_THE_FUNCTION}
            _referenced(own, template, found)
    return sorted(found & (set(template.get("Parameters", {})) - {SETTINGS_DIGEST}))


def settings_digest(template: dict[str, Any], values: dict[str, str]) -> str:
    """SettingsDigest: a hash of every function's properties (its code's location, which names
    the zip's hash, included) and of the values of the parameters they read (a parameter not
    given takes its default, as the stack does)."""
    parameters = template.get("Parameters", {})
    settings = {
        name: str(values.get(name, parameters[name].get("Default", "")))
        for name in function_parameters(template)
    }
    functions = {
        logical: {
            k: v for k, v in resource.get("Properties", {}).items() if k not in NOT_THE_FUNCTION
        }
        for logical, resource in template["Resources"].items()
        if resource.get("Type") == "AWS::Serverless::Function"
    }
    text = json.dumps({"functions": functions, "settings": settings}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()
