"""Does each alias `live` run its function's $LATEST (code and environment)? make deploy and
make restore ask after the stack update; the stack's check-aliases function (this file as its
inline code, infra.rollout) asks every hour and puts AliasesBehind, which an alarm watches.
A deploy that bypassed make deploy updates $LATEST but publishes no version (SettingsDigest).
Standard library and boto3 only: Lambda runs this file as it is."""

import json
import os

ALIAS = "live"
METRIC = "AliasesBehind"


def _same(config):
    return config.get("CodeSha256"), config.get("Environment", {}).get("Variables", {})


def behind(lambda_client, functions, alias=ALIAS):
    """One line per function whose alias runs other code or another environment than $LATEST
    (a canary moving the alias to $LATEST's version is not behind)."""
    found = []
    for function in functions:
        latest = _same(lambda_client.get_function_configuration(FunctionName=function))
        aliased = lambda_client.get_alias(FunctionName=function, Name=alias)
        versions = [aliased["FunctionVersion"]]
        versions += list(aliased.get("RoutingConfig", {}).get("AdditionalVersionWeights", {}))
        differs = []
        for version in versions:
            config = lambda_client.get_function_configuration(
                FunctionName=function, Qualifier=version
            )
            code, environment = _same(config)
            if (code, environment) == latest:
                differs = []
                break
            what = [] if code == latest[0] else ["code"]
            if environment != latest[1]:
                what.append("environment")
            differs.append(f"version {version} ({' and '.join(what)})")
        if differs:
            found.append(f"{function}: alias {alias} runs {', '.join(differs)}, not $LATEST's")
    return found


def handler(event, context):
    import boto3

    functions = [f for f in os.environ["AGORA_ALIASED_FUNCTIONS"].split(",") if f]
    found = behind(boto3.client("lambda"), functions)
    for line in found:
        print(json.dumps({"level": "ERROR", "message": "alias behind $LATEST", "detail": line}))
    boto3.client("cloudwatch").put_metric_data(
        Namespace="Agora",
        MetricData=[
            {
                "MetricName": METRIC,
                # Those the alarm reads: a metric is its exact set of dimensions.
                "Dimensions": [
                    {"Name": "Stage", "Value": os.environ["AGORA_STACK"]},
                    {"Name": "service", "Value": os.environ["AGORA_SERVICE"]},
                ],
                "Value": len(found),
                "Unit": "Count",
            }
        ],
    )
    return {"behind": found}
