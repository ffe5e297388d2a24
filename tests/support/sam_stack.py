"""The packaged SAM template as CloudFormation expands it (aws-sam-translator), and that expansion
made ready for moto's CloudFormation, which lacks some resource types (each with its reason)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from tests.support import REPO_ROOT
from tests.support.running import run_module

# Every resource of the translated template that moto's CloudFormation does not create, by type,
# and why that is acceptable (what checks it instead). A type missing here fails the test.
MOTO_LACKS = {
    "AWS::CloudWatch::Alarm": "no alarm model in moto's CloudFormation: each alarm is created "
    "through CloudWatch's API instead (put_alarms), which checks its properties",
    "AWS::CloudWatch::CompositeAlarm": "no composite alarm in moto's CloudFormation: the page "
    "per cause (infra.paging) is asserted on the template, its members made through CloudWatch",
    "AWS::Lambda::Alias": "no alias model: references to an alias become the function itself "
    "(alias_as_function); the alias and its rollout are asserted on the translated template",
    "AWS::CodeDeploy::Application": "no CodeDeploy in moto: the canary's deployment group, "
    "alarms and rollback are asserted on the translated template",
    "AWS::CodeDeploy::DeploymentGroup": "as AWS::CodeDeploy::Application",
    "AWS::ApiGateway::Stage": "no stage model: its access log format and throttling are "
    "asserted on the translated template",
    "AWS::ApiGateway::Account": "an account-wide API Gateway setting moto does not model",
    "AWS::S3::BucketPolicy": "no bucket policy model: the inbound bucket's (SES may store, TLS "
    "only) is asserted on the template (tests/jobs/test_mail_push.py)",
    "AWS::SES::ReceiptRuleSet": "no SES receiving in moto's CloudFormation: the rule set and its "
    "rule are asserted on the template (tests/jobs/test_mail_push.py)",
    "AWS::SES::ReceiptRule": "as AWS::SES::ReceiptRuleSet",
    "AWS::SecretsManager::Secret": "no secret model: the token secret's run-time reading is "
    "tests/runtime/test_signing_keys.py's, on a secret made through Secrets Manager's API",
    "AWS::SES::ConfigurationSet": "no SES in moto's CloudFormation: sending with the "
    "configuration set is tests/jobs' (moto SES API)",
    "AWS::SES::ConfigurationSetEventDestination": "as AWS::SES::ConfigurationSet; the path "
    "SNS -> SQS -> ses-feedback is tested from the queue on (tests/jobs)",
    "AWS::SES::EmailIdentity": "conditional on MailSenderDomain, empty here; no SES model",
    "AWS::SNS::Subscription": "no subscription model: the queue's subscription is asserted on "
    "the template",
    "AWS::SQS::QueuePolicy": "no queue-policy model: the policy is asserted on the template",
    "AWS::Lambda::EventInvokeConfig": "no model in moto's CloudFormation: the schedules' retries "
    "and on-failure queue are asserted on the template (check_operations)",
    "AWS::Logs::MetricFilter": "no metric-filter model in moto's CloudFormation: the 429 "
    "filter and its alarm are asserted on the template",
    "AWS::Backup::BackupVault": "no AWS Backup in moto's CloudFormation (and conditional on "
    "BackupRegion): the daily copy to the second region is asserted on the template (test_infra)",
    "AWS::Backup::BackupPlan": "as AWS::Backup::BackupVault",
    "AWS::Backup::BackupSelection": "as AWS::Backup::BackupVault",
    "AWS::Budgets::Budget": "no Budgets in moto: its amount and subscriber are asserted on the "
    "template (test_prod_template_sees_silent_failures_and_keeps_its_data)",
}
# Resources the test takes out before creating the stack, and why.
TAKEN_OUT = {
    "AWS::ApiGateway::Deployment": "moto's RestApi ignores the OpenAPI Body, so a deployment "
    "fails with 'no methods'; the API itself is exercised by the smoke run on the tables",
}


class _NoManagedPolicies:
    """The translator looks up managed policies by name only for a function's `Policies`;
    Chalice gives each function a Role, so there is nothing to look up."""

    def load(self) -> dict[str, str]:
        return {}


def package_prod(out: Path) -> Path:
    """The prod template as `make package STAGE=prod` writes it, into `out` beside its zip (which
    holds Agora's code only: infra.package --template-only); its path. The packaging runs on this
    process's environment as it is when called."""
    done = run_module(
        "infra.package", "--template-only", "--stage", "prod",
        "--merge-template", "infra/prod.yaml", str(out),
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "AWS_DEFAULT_REGION": "us-east-1"},
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return out / "sam.yaml"


def translated(packaged: dict, code_uri: str, parameters: dict[str, str]) -> dict:
    """The SAM template as CloudFormation would expand it (aws-sam-translator), with these
    parameter values."""
    import copy

    from samtranslator.translator.transform import transform

    template = copy.deepcopy(packaged)
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = code_uri
    return transform(template, parameters, _NoManagedPolicies())


def alias_as_function(template: dict) -> dict:
    """References to an alias (which moto cannot make) become its function's ARN."""
    resources = template["Resources"]
    aliases = {
        name: r["Properties"]["FunctionName"]["Ref"]
        for name, r in resources.items()
        if r["Type"] == "AWS::Lambda::Alias"
    }

    # moto answers a Ref to a version with its object, which an environment variable (the
    # PreTraffic hook's) cannot hold: a version's ARN is written out as CloudFormation gives it.
    versions = {
        name: r["Properties"]["FunctionName"]["Ref"]
        for name, r in resources.items()
        if r["Type"] == "AWS::Lambda::Version"
    }

    def resolve(value):
        if isinstance(value, dict):
            if set(value) == {"Ref"} and value["Ref"] in aliases:
                return {"Fn::GetAtt": [aliases[value["Ref"]], "Arn"]}
            if set(value) == {"Ref"} and value["Ref"] in versions:
                return {"Fn::Join": [":", [{"Fn::GetAtt": [versions[value["Ref"]], "Arn"]}, "1"]]}
            return {k: resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        return value

    template = resolve(template)
    for resource in template["Resources"].values():
        # CloudFormation makes an event source mapping after its function, which waits for its
        # queue (DependsOn); moto follows only the mapping's own DependsOn.
        if resource["Type"] == "AWS::Lambda::EventSourceMapping":
            function = resource["Properties"]["FunctionName"]["Fn::GetAtt"][0]
            resource["DependsOn"] = template["Resources"][function].get("DependsOn", [])
    return template


def moto_stack(template: dict) -> tuple[dict, dict[str, str], dict]:
    """What moto's CloudFormation is given, what it will skip (logical id -> type) and the
    alarms, which are made through CloudWatch's API. Fails on a skip without a reason."""
    from moto.cloudformation.parsing import get_model_map

    created = set(get_model_map())
    resources = alias_as_function(template)["Resources"]
    skipped = {
        name: r["Type"]
        for name, r in resources.items()
        if r["Type"] not in created and r.get("Condition") != "HasMailSenderDomain"
    }
    unexplained = sorted({kind for kind in skipped.values() if kind not in MOTO_LACKS})
    assert not unexplained, f"moto would skip these without a reason in MOTO_LACKS: {unexplained}"
    kept = {n: r for n, r in resources.items() if r["Type"] not in TAKEN_OUT}
    alarms = {n: r for n, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"}
    # An output of a resource moto skips (the SES identity's DKIM records) cannot be resolved by
    # moto; what it says is the template's (test_privileges checks the identity).
    outputs = {
        name: output
        for name, output in template.get("Outputs", {}).items()
        if not any(f'"{logical}"' in json.dumps(output) for logical in skipped)
    }
    stack = {**template, "Resources": kept, "Outputs": outputs}
    return stack, skipped, alarms


class _JsonFirstYaml:
    """PyYAML as moto's CloudFormation uses it, except that a template body in JSON (the tests'
    own `json.dumps`, of which JSON is the YAML) is read by `json.loads`: moto reads every body
    with PyYAML's pure-Python loader, about 2 s of CPU for the translated prod template, five
    times in tests/infra/test_restore.py. Any other body goes to PyYAML as before."""

    def __getattr__(self, name: str) -> Any:
        import yaml

        return getattr(yaml, name)

    @staticmethod
    def load(stream: Any, Loader: Any) -> Any:  # noqa: N803 (PyYAML's own keyword)
        import yaml

        if isinstance(stream, str) and stream.lstrip().startswith("{"):
            try:
                return json.loads(stream)
            except ValueError:
                pass
        return yaml.load(stream, Loader=Loader)


def json_templates_read_as_json(monkeypatch: Any) -> None:
    """moto's CloudFormation reads JSON template bodies with `json.loads` (_JsonFirstYaml) for
    the rest of the test."""
    for module in ("moto.cloudformation.models", "moto.cloudformation.responses"):
        monkeypatch.setattr(f"{module}.yaml", _JsonFirstYaml())


# --- the translated template's references, resolved as CloudFormation resolves them ------------

ACCOUNT, REGION, STACK = "123456789012", "us-east-1", "agora-dev"


class Resolver:
    """Evaluates the intrinsic functions of a translated template (Ref, Fn::GetAtt, Fn::Sub,
    Fn::If, Fn::Join, Fn::Select, Fn::Split, conditions) against one stack: its parameter values
    and what each resource became (`made`: logical id -> attribute -> value, "Ref" included;
    a resource not in it gets the name and ARN CloudFormation would give it)."""

    def __init__(self, template: dict, parameters: dict[str, str], made: dict[str, dict]) -> None:
        self.template = template
        self.resources = template["Resources"]
        self.parameters = {
            name: str(parameters.get(name, spec.get("Default", "")))
            for name, spec in template.get("Parameters", {}).items()
        }
        self.made = made

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.template["Conditions"][name]))

    def name(self, logical: str) -> str:
        """The physical name of a resource CloudFormation names (or its template's name)."""
        resource = self.resources[logical]
        properties = resource.get("Properties", {})
        for key in ("TableName", "QueueName", "FunctionName", "LogGroupName", "Name",
                    "TopicName", "AliasName", "BucketName"):  # fmt: skip
            if key in properties:
                return str(self.resolve(properties[key]))
        return f"{STACK}-{logical}"

    def attribute(self, logical: str, attribute: str) -> Any:
        if attribute in self.made.get(logical, {}):
            return self.made[logical][attribute]
        kind = self.resources[logical]["Type"]
        name = self.name(logical)
        service_arn = {
            "AWS::DynamoDB::Table": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}",
            "AWS::SQS::Queue": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}",
            "AWS::Lambda::Function": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}",
            "AWS::Logs::LogGroup": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{name}:*",
            "AWS::IAM::Role": f"arn:aws:iam::{ACCOUNT}:role/{name}",
            "AWS::Events::EventBus": f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{name}",
            "AWS::SNS::Topic": f"arn:aws:sns:{REGION}:{ACCOUNT}:{name}",
        }
        if kind == "AWS::Lambda::Version":
            function = self.resources[logical]["Properties"]["FunctionName"]
            return f"{self.resolve({'Fn::GetAtt': [function['Ref'], 'Arn']})}:1"
        if attribute == "Arn" and kind in service_arn:
            return service_arn[kind]
        if attribute == "Ref":
            if kind == "AWS::SQS::Queue":
                return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
            if kind in ("AWS::SNS::Topic",):
                return service_arn[kind]
            return name
        raise AssertionError(f"no value for {logical}.{attribute} ({kind})")

    def ref(self, name: str) -> Any:
        pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::StackName": STACK,
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        logical, _, attribute = name.partition(".")  # SAM's `Function.Version`
        if attribute:
            return self.attribute(logical, attribute)
        return self.attribute(name, "Ref")

    def sub(self, text: str, variables: dict[str, Any]) -> str:
        import re

        def value(match: Any) -> str:
            name = match.group(1)
            if name in variables:
                return str(self.resolve(variables[name]))
            logical, _, attribute = name.partition(".")
            if attribute and logical in self.resources:
                return str(self.attribute(logical, attribute))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}!]+)\}", value, text)

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1:
            return {k: self.resolve(v) for k, v in value.items()}
        [(function, argument)] = value.items()
        intrinsic = self.INTRINSICS.get(function)
        if intrinsic is None:
            return {function: self.resolve(argument)}
        return intrinsic(self, argument)

    def _get_att(self, argument: Any) -> Any:
        logical, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
        return self.attribute(logical, attribute)

    def _sub(self, argument: Any) -> str:
        text, variables = argument if isinstance(argument, list) else (argument, {})
        return self.sub(text, variables)

    def _if(self, argument: list) -> Any:
        name, yes, no = argument
        return self.resolve(yes if self.condition(name) else no)

    def _join(self, argument: list) -> str:
        separator, parts = argument
        return separator.join(str(self.resolve(part)) for part in parts)

    def _select(self, argument: list) -> Any:
        index, items = argument
        return self.resolve(items)[int(index)]

    def _split(self, argument: list) -> list[str]:
        separator, text = argument
        return str(self.resolve(text)).split(separator)

    def _equals(self, argument: list) -> Any:
        left, right = (self.resolve(v) for v in argument)
        return left == right

    # Each intrinsic function (and condition) the translated templates use: name -> its value.
    INTRINSICS: ClassVar[dict[str, Callable[[Resolver, Any], Any]]] = {
        "Ref": lambda self, name: self.ref(name),
        "Fn::GetAtt": _get_att,
        "Fn::Sub": _sub,
        "Fn::If": _if,
        "Fn::Join": _join,
        "Fn::Select": _select,
        "Fn::Split": _split,
        "Fn::Equals": _equals,
        "Fn::Not": lambda self, argument: not self.resolve(argument[0]),
        "Fn::And": lambda self, argument: all(self.resolve(v) for v in argument),
        "Fn::Or": lambda self, argument: any(self.resolve(v) for v in argument),
        "Condition": lambda self, name: self.condition(name),
    }


def stream_records(dynamodb: Any, streams: Any, table: str) -> tuple[str, list[dict]]:
    """The table's stream ARN and every record its shards hold, read from the start
    (TRIM_HORIZON) with the clients given, as Lambda's DynamoDB Streams mapping reads them."""
    arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    records = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records += streams.get_records(ShardIterator=iterator)["Records"]
    return arn, records
