"""`make restore` and a changed setting, rehearsed on the stack CloudFormation makes of the real
package (issues 38, 48): the prod template `make package` writes, expanded by the pinned
aws-sam-translator (the transform CloudFormation applies) with the parameters `make deploy` and
`make restore` pass. After a change of any parameter the functions read, every function publishes
a version, and every alias (which every queue, stream, schedule and the API invoke) names it; the
version is published from the function as updated, whose environment holds the new value.

SAM named each version after the function's properties with the parameters unresolved
(aws-sam-translator #1640): a change of BaseUrl, MailSenderDomain or TableNames alone published
no version, and every alias kept the old environment."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from infra.deploy import with_settings_digest
from infra.operations import ALIAS, FUNCTIONS
from infra.restore import PARAMETER, RestoreError, format_names, parse_names, restore
from infra.rollout import CHECK_ALIASES, function_parameters
from tests.support.sam_stack import (
    json_templates_read_as_json,
    moto_stack,
    package_prod,
    translated,
)

CODE = "s3://agora-code/deployment.zip"
# What make deploy passes (with SettingsDigest, which it computes), and a second value of each
# parameter the functions read.
DEPLOYED = {
    "BaseUrl": "https://community.example.org",
    "AlarmEmail": "ops@example.org",
    "MailSenderDomain": "",
    "ManageApiGatewayAccount": "true",
    "RollbackOnAlarms": "true",
}
CHANGED = {
    "BaseUrl": "https://club.example.net",
    "MailSenderDomain": "mail.example.net",
    "MailInboundDomain": "in.example.net",
    PARAMETER: "agora-prod-posts.20261126T080000Z",
}
RESTORED = "agora-prod-posts.20261126T080000Z"


@pytest.fixture(scope="module")
def packaged(tmp_path_factory) -> tuple[dict[str, Any], Path]:
    """The prod template as `make package STAGE=prod` writes it (the zip holds Agora's code
    only: infra.package --template-only), and its zip."""
    from infra import yaml_text

    template = package_prod(tmp_path_factory.mktemp("package"))
    return yaml_text.load(template.read_text()), template.parent / "deployment.zip"


def deployed_parameters(template: dict, given: dict[str, str], previous: dict[str, str]) -> dict:
    """The parameter values of the stack after `make deploy` with `given` (infra.deploy's own
    computation, SettingsDigest included), those it keeps from `previous` included."""
    parameters = with_settings_digest(template, given, previous)
    kept = {k: v for k, v in previous.items() if k not in parameters}
    return {**kept, **parameters}


# The translations made in this module, by template and parameters: the deployed parameters are
# translated for `deployed` and for each `prod` stack, and a restore asks for the changed-setting
# cases' own (about a second of CPU each).
_TRANSLATIONS: dict[tuple[int, str], str] = {}


def expanded(template: dict, parameters: dict[str, str]) -> dict:
    """The template SAM makes of `template` with `parameters`, a copy of its own for each call."""
    key = (id(template), json.dumps(parameters, sort_keys=True))
    if key not in _TRANSLATIONS:
        _TRANSLATIONS[key] = json.dumps(translated(template, CODE, parameters))
    return json.loads(_TRANSLATIONS[key])


@pytest.fixture(scope="module")
def deployed(packaged) -> tuple[dict[str, str], dict]:
    """The stack's parameters after a `make deploy` with DEPLOYED, and the template SAM makes of
    them: every changed-setting case starts from it (a translation costs about a second)."""
    template, _ = packaged
    before = deployed_parameters(template, DEPLOYED, {})
    return before, expanded(template, before)


def _condition(template: dict, value: Any, parameters: dict[str, str]) -> Any:
    [(function, argument)] = value.items()
    if function == "Fn::Equals":
        left, right = (resolved(template, a, parameters) for a in argument)
        return left == right
    if function == "Fn::Not":
        return not _condition(template, argument[0], parameters)
    if function == "Fn::And":
        return all(_condition(template, a, parameters) for a in argument)
    if function == "Condition":
        return _condition(template, template["Conditions"][argument], parameters)
    raise AssertionError(f"a condition the test does not evaluate: {value}")


def resolved(template: dict, value: Any, parameters: dict[str, str]) -> Any:
    """A property's value as CloudFormation resolves it with these parameters (the functions
    used in environments; pseudo parameters and resources stay as they are)."""
    if isinstance(value, list):
        return [resolved(template, v, parameters) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        return {k: resolved(template, v, parameters) for k, v in value.items()}
    [(function, argument)] = value.items()
    if function in _INTRINSICS:
        return _INTRINSICS[function](template, argument, parameters)
    return {function: resolved(template, argument, parameters)}


def _parameter(template: dict, name: str, parameters: dict[str, str]) -> str:
    """The value the stack has for one of its parameters: given, or its default."""
    return parameters.get(name, str(template["Parameters"][name].get("Default", "")))


def _ref(template: dict, name: str, parameters: dict[str, str]) -> Any:
    if name in template["Parameters"]:
        return _parameter(template, name, parameters)
    return {"Ref": name}


def _if(template: dict, argument: list, parameters: dict[str, str]) -> Any:
    condition, yes, no = argument
    chosen = _condition(template, template["Conditions"][condition], parameters)
    return resolved(template, yes if chosen else no, parameters)


def _select(template: dict, argument: list, parameters: dict[str, str]) -> Any:
    index, items = argument
    return resolved(template, items, parameters)[index]


def _split(template: dict, argument: list, parameters: dict[str, str]) -> list[str]:
    separator, text = argument
    return resolved(template, text, parameters).split(separator)


def _join(template: dict, argument: list, parameters: dict[str, str]) -> str:
    separator, items = argument
    return separator.join(resolved(template, items, parameters))


def _sub(template: dict, argument: Any, parameters: dict[str, str]) -> str:
    text, variables = argument if isinstance(argument, list) else (argument, {})
    for name, inner in variables.items():
        text = text.replace("${" + name + "}", resolved(template, inner, parameters))
    for name in template["Parameters"]:
        text = text.replace("${" + name + "}", _parameter(template, name, parameters))
    return text


# The intrinsic functions `resolved` evaluates: name -> (template, argument, parameters) -> value.
_INTRINSICS: dict[str, Callable[[dict, Any, dict[str, str]], Any]] = {
    "Ref": _ref,
    "Fn::If": _if,
    "Fn::Select": _select,
    "Fn::Split": _split,
    "Fn::Join": _join,
    "Fn::Sub": _sub,
}


def aliased_functions(template: dict) -> list[str]:
    return sorted(
        logical
        for logical, r in template["Resources"].items()
        if r["Type"] == "AWS::Serverless::Function" and "AutoPublishAlias" in r["Properties"]
    )


def version_of(stack: dict, logical: str) -> str:
    [version] = [
        name
        for name, r in stack["Resources"].items()
        if r["Type"] == "AWS::Lambda::Version"
        and r["Properties"]["FunctionName"] == {"Ref": logical}
    ]
    return version


def invokers(stack: dict) -> dict[str, Any]:
    """What invokes a function, by resource: its queue's or stream's event source mapping, its
    schedule's rule target, the API's integrations and the permissions to invoke."""
    found: dict[str, Any] = {}
    for name, r in stack["Resources"].items():
        properties = r.get("Properties", {})
        if name.startswith(CHECK_ALIASES):
            continue  # check-aliases' own schedule: it calls no alias, it reads them
        if r["Type"] in ("AWS::Lambda::EventSourceMapping", "AWS::Lambda::Permission"):
            found[name] = properties["FunctionName"]
        elif r["Type"] == "AWS::Events::Rule":
            [target] = properties["Targets"]
            if target["Arn"] == {"Fn::GetAtt": ["SesEventsLogGroup", "Arn"]}:
                continue  # SES's mail events into their log group (infra/mail_events.py)
            found[name] = target["Arn"]
    body = json.dumps(stack["Resources"]["RestAPI"]["Properties"]["Body"])
    found["RestAPI"] = (
        {"Ref": f"APIHandlerAlias{ALIAS}"} if f"APIHandlerAlias{ALIAS}" in body else body
    )
    return found


# What each parameter must become in every function's environment.
EXPECTED = {
    "BaseUrl": ("AGORA_BASE_URL", CHANGED["BaseUrl"]),
    "MailSenderDomain": ("AGORA_MAIL_SENDER", "noreply@" + CHANGED["MailSenderDomain"]),
    PARAMETER: ("AGORA_TABLE_NAMES", CHANGED[PARAMETER]),
    "MailInboundDomain": ("AGORA_MAIL_INBOUND_DOMAIN", CHANGED["MailInboundDomain"]),
}
# Settings only some functions read (the others still publish a version: SettingsDigest).
READ_BY_SOME = {"MailInboundDomain"}


@pytest.mark.parametrize("parameter", sorted(CHANGED))
def test_a_changed_setting_publishes_every_function_and_moves_every_alias(
    packaged, deployed, parameter
):
    template, _ = packaged
    before, old = deployed
    after = deployed_parameters(template, {**DEPLOYED, parameter: CHANGED[parameter]}, before)
    new = expanded(template, after)
    functions = aliased_functions(template)
    assert len(functions) == len(FUNCTIONS)  # every aliased function of infra.operations
    # Every parameter the functions read is one of the cases (issue 57: each setting).
    assert sorted(CHANGED) == function_parameters(template)
    variable, value = EXPECTED[parameter]
    for logical in functions:
        version = version_of(new, logical)
        assert version != version_of(old, logical), f"{logical}: no new version for {parameter}"
        function = new["Resources"][logical]["Properties"]
        # Lambda publishes a version only of a function that changed: SAM writes the digest in
        # its description, so it does even when the environment did not change.
        assert function["Description"] != old["Resources"][logical]["Properties"]["Description"]
        environment = resolved(template, function["Environment"]["Variables"], after)
        if parameter not in READ_BY_SOME or variable in environment:
            assert environment[variable] == value, logical
        alias = new["Resources"][f"{logical}Alias{ALIAS}"]["Properties"]
        assert alias["FunctionVersion"] == {"Fn::GetAtt": [version, "Version"]}
        assert alias["FunctionName"] == {"Ref": logical}
    callers = invokers(new)
    # 4 queues and the outbox stream, 3 schedules (and their permissions), the API.
    assert len([c for c in callers if c.endswith(("SqsEventSource", "OutboxStream"))]) == 5
    assert len([c for c in callers if c.endswith("Event")]) == 3
    for name, target in callers.items():
        assert target in [{"Ref": f"{logical}Alias{ALIAS}"} for logical in functions], name


def test_new_code_publishes_every_function_and_a_deploy_around_make_deploy_is_alarmed(
    packaged, deployed
):
    """Issue 57: new code through make deploy (the zip's key names its hash) publishes a version
    of every function; a deploy by another path, which keeps the previous SettingsDigest,
    publishes none (SAM names a version after the digest alone), and check-aliases' alarm, like
    make deploy's own check (tests/infra/test_alias_check.py), is what sees it."""
    import copy

    from infra.deploy import with_code_in

    template, _ = packaged
    before, old = deployed
    moved = with_code_in(
        copy.deepcopy(template), "agora-deploy-1-us-east-1", "prod/deployment-2.zip"
    )
    new = expanded(moved, deployed_parameters(moved, DEPLOYED, before))
    bypassed = expanded(moved, before)
    for logical in aliased_functions(template):
        assert version_of(new, logical) != version_of(old, logical), logical
        assert version_of(bypassed, logical) == version_of(old, logical), logical
    alarm = bypassed["Resources"]["AliasesBehindAlarm"]["Properties"]
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]
    # And a deploy that gives no digest at all is refused by the template (no default).
    assert "Default" not in template["Parameters"]["SettingsDigest"]


def test_a_deploy_not_given_a_setting_keeps_it_and_publishes_nothing(packaged):
    """Issue 57: the settings a deploy keeps (UsePreviousValue) are in SettingsDigest with their
    deployed values, so leaving MAIL_SENDER_DOMAIN or PAGE_EMAIL out changes nothing."""
    template, _ = packaged
    before = deployed_parameters(
        template, {**DEPLOYED, "MailSenderDomain": "mail.example.org", "PageEmail": "p@e.org"}, {}
    )
    given = {k: v for k, v in DEPLOYED.items() if k != "MailSenderDomain"}
    again = deployed_parameters(template, given, before)
    assert again["SettingsDigest"] == before["SettingsDigest"]
    assert again["MailSenderDomain"] == "mail.example.org" and again["PageEmail"] == "p@e.org"


def test_a_deploy_that_changes_nothing_publishes_nothing(packaged):
    template, _ = packaged
    before = deployed_parameters(template, DEPLOYED, {})
    again = deployed_parameters(template, DEPLOYED, before)
    assert again == before
    # The alarms' parameters are not the functions': a changed email address publishes nothing.
    other = deployed_parameters(template, {**DEPLOYED, "AlarmEmail": "pager@example.org"}, before)
    assert other["SettingsDigest"] == before["SettingsDigest"]


class TransformingCloudFormation:
    """moto's CloudFormation as CloudFormation runs a SAM template (botocore hooks on the calls
    make restore makes): GetTemplate of the original stage answers the SAM template, and an
    UpdateStack with the previous template expands it again with the new parameters."""

    STACK = "agora-prod"

    def __init__(self, session, template: dict, parameters: dict[str, str]) -> None:
        # Every parameter given (moto keeps no default for an update's UsePreviousValue).
        defaults = {k: str(p.get("Default", "")) for k, p in template["Parameters"].items()}
        self.template, self.parameters = template, {**defaults, **parameters}
        self.cloudformation = session.client("cloudformation")
        self.cloudformation.create_stack(
            StackName=self.STACK,
            TemplateBody=json.dumps(self.moto_ready()),
            Parameters=self.given(),
            Capabilities=["CAPABILITY_IAM"],
        )
        self.session = session
        self.move_aliases()
        # The session's: make restore makes its own client from it.
        events = session.events
        events.register("provide-client-params.cloudformation.UpdateStack", self.update)
        events.register("after-call.cloudformation.UpdateStack", self.move_aliases)
        events.register("before-call.cloudformation.GetTemplate", self.original)

    def move_aliases(self, **_kwargs) -> None:
        """What SAM's AWS::Lambda::Version and AWS::Lambda::Alias do, which moto does not (it
        makes no alias, and a new version resource publishes nothing on an update): when the
        stack's versions are new ones, each function publishes a version of itself as updated,
        and its alias live names it."""
        versions = self.version_ids()
        if versions == getattr(self, "versions", None):
            return
        self.versions = versions
        lambdas = self.session.client("lambda")
        for function in lambdas.list_functions()["Functions"]:
            name = function["FunctionName"]
            if name.endswith("check-aliases") or "pre-traffic" in name:
                continue  # unaliased
            version = lambdas.publish_version(FunctionName=name)["Version"]
            try:
                lambdas.update_alias(FunctionName=name, Name=ALIAS, FunctionVersion=version)
            except lambdas.exceptions.ResourceNotFoundException:
                lambdas.create_alias(FunctionName=name, Name=ALIAS, FunctionVersion=version)

    def version_ids(self) -> set[str]:
        resources = self.cloudformation.describe_stack_resources(StackName=self.STACK)
        return {
            r["LogicalResourceId"]
            for r in resources["StackResources"]
            if r.get("ResourceType") == "AWS::Lambda::Version"
        }

    def moto_ready(self) -> dict:
        stack, _, _ = moto_stack(expanded(self.template, self.parameters))
        return stack

    def given(self) -> list[dict[str, str]]:
        return [{"ParameterKey": k, "ParameterValue": v} for k, v in self.parameters.items()]

    def original(self, params, **_kwargs):
        if params.get("body", {}).get("TemplateStage") != "Original":
            return None
        from botocore.awsrequest import AWSResponse

        return AWSResponse("", 200, {}, None), {"TemplateBody": json.dumps(self.template)}

    def update(self, params, **_kwargs):
        if not params.pop("UsePreviousTemplate", False):
            return
        for entry in params["Parameters"]:
            if not entry.get("UsePreviousValue"):
                self.parameters[entry["ParameterKey"]] = entry["ParameterValue"]
        params.update(TemplateBody=json.dumps(self.moto_ready()), Parameters=self.given())


@pytest.fixture
def prod(packaged, monkeypatch):
    """A prod stack made from the package, as make deploy leaves it, and its posts table with
    what the stack gives it (deletion protection, TTL) and one item."""
    import boto3
    from moto import mock_aws

    template, zip_path = packaged
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    json_templates_read_as_json(monkeypatch)
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        s3 = session.client("s3")
        s3.create_bucket(Bucket="agora-code")
        s3.put_object(Bucket="agora-code", Key="deployment.zip", Body=zip_path.read_bytes())
        stack = TransformingCloudFormation(
            session, template, deployed_parameters(template, DEPLOYED, {})
        )
        dynamodb = session.client("dynamodb")
        dynamodb.update_time_to_live(
            TableName="agora-prod-posts",
            TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"},
        )
        dynamodb.put_item(TableName="agora-prod-posts", Item={"id": {"S": "kept"}})
        yield session, stack


def stack_parameter(session, name: str = PARAMETER) -> str:
    [stack] = session.client("cloudformation").describe_stacks(StackName="agora-prod")["Stacks"]
    return {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]}[name]


def function_environments(session) -> dict[str, dict[str, str]]:
    """Each aliased function's environment, by function name (the PreTraffic hook has none)."""
    return {
        f["FunctionName"]: f["Environment"]["Variables"]
        for f in session.client("lambda").list_functions()["Functions"]
        if "AGORA_TABLE_NAMES" in f.get("Environment", {}).get("Variables", {})
    }


def stack_versions(session) -> set[str]:
    """The logical ids of the stack's function versions (SAM names one per function)."""
    resources = session.client("cloudformation").describe_stack_resources(StackName="agora-prod")
    return {
        r["LogicalResourceId"]
        for r in resources["StackResources"]
        if r.get("ResourceType") == "AWS::Lambda::Version"
    }


def test_a_table_is_restored_and_every_function_publishes_a_version_on_it(
    prod, monkeypatch, capsys
):
    session, stack = prod
    dynamodb = session.client("dynamodb")
    before = function_environments(session)
    assert len(before) == len(FUNCTIONS)
    assert {e["AGORA_TABLE_NAMES"] for e in before.values()} == {""}
    versions = stack_versions(session)
    assert len(versions) == len(FUNCTIONS)

    # A write the API made to the damaged table after the restore time (moto restores the
    # table as it is when asked).
    def late_write(**_kwargs):
        dynamodb.put_item(TableName="agora-prod-posts", Item={"id": {"S": "late"}})

    session.events.register("after-call.dynamodb.RestoreTableToPointInTime", late_write)
    table = restore(session, "prod", "posts", "2026-11-26T08:00:00Z")
    session.events.unregister("after-call.dynamodb.RestoreTableToPointInTime", late_write)
    # Issue 57: which writes after the restore time are not in the restored table, to copy back.
    said = capsys.readouterr().out
    assert "writes to agora-prod-posts after 2026-11-26T08:00:00+00:00" in said
    assert (
        "1 item(s) of it differ from the restored table" in said and '{"id": {"S": "late"}}' in said
    )
    # Every alias at once (no 10-minute canary leaving the API's writes on the damaged table).
    assert stack_parameter(session, "DeployAllAtOnce") == "true"

    assert table == RESTORED
    assert dynamodb.scan(TableName=table)["Items"] == [{"id": {"S": "kept"}}]
    backups = dynamodb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    assert dynamodb.describe_table(TableName=table)["Table"]["DeletionProtectionEnabled"] is True
    ttl = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expiresAt"
    assert stack_parameter(session) == table
    # The damaged table stays, untouched, for a person to compare with.
    assert "agora-prod-posts" in dynamodb.list_tables()["TableNames"]
    # Every function reads the restored table, and the stack holds a new version of each, which
    # CloudFormation publishes after the function's update (the version names the function), and
    # which its alias names (the test above: moto has no alias, nor that order of an update).
    after = function_environments(session)
    assert set(after) == set(before)
    assert {e["AGORA_TABLE_NAMES"] for e in after.values()} == {table}
    restored_versions = stack_versions(session)
    assert len(restored_versions) == len(FUNCTIONS) and not restored_versions & versions
    # The DynamoDB throttles alarm names the restored table (the dashboard's search takes the
    # stage's prefix, which the restored name starts with).
    expanded_now = expanded(stack.template, stack.parameters)
    alarm = expanded_now["Resources"]["DynamoDbThrottlesAlarm"]["Properties"]
    [query] = [
        resolved(stack.template, m["Expression"], stack.parameters) for m in alarm["Metrics"]
    ]
    assert f"TableName = '{table}'" in query and "TableName = 'agora-prod-users'" in query
    body = expanded_now["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    [throttles] = [
        w for w in json.loads(body)["widgets"] if w["properties"]["title"].startswith("DynamoDB")
    ]
    searches = [metric[0]["expression"] for metric in throttles["properties"]["metrics"]]
    assert searches and all("TableName" in q and '"agora-prod"' in q for q in searches)

    # The functions read the restored table: the store's models take the override.
    from chalicelib.settings import reload_settings
    from chalicelib.store.base import table_meta

    monkeypatch.setenv("AGORA_TABLE_PREFIX", "agora-prod-")
    monkeypatch.setenv("AGORA_TABLE_NAMES", stack_parameter(session))
    reload_settings()
    try:
        assert table_meta("posts").table_name == table
        assert table_meta("users").table_name == "agora-prod-users"
    finally:
        monkeypatch.delenv("AGORA_TABLE_NAMES")
        monkeypatch.delenv("AGORA_TABLE_PREFIX")
        reload_settings()

    # Back to the original table, nothing restored: again a version on it.
    assert restore(session, "prod", "posts", "original") == "agora-prod-posts"
    assert stack_parameter(session) == ""
    assert {e["AGORA_TABLE_NAMES"] for e in function_environments(session).values()} == {""}
    assert not stack_versions(session) & restored_versions


def test_a_restore_run_again_resumes_the_one_started(prod, capsys):
    """Issue 57: a restore of a large table outlasts make restore's wait; the same command again
    waits for the table an earlier run started restoring, and switches the stack onto it."""
    session, _ = prod
    dynamodb = session.client("dynamodb")
    dynamodb.restore_table_to_point_in_time(
        SourceTableName="agora-prod-posts",
        TargetTableName=RESTORED,
        RestoreDateTime=datetime(2026, 11, 26, 8, tzinfo=UTC),
    )
    restored = []
    session.events.register(
        "before-call.dynamodb.RestoreTableToPointInTime", lambda **kw: restored.append(kw)
    )
    assert restore(session, "prod", "posts", "2026-11-26T08:00:00Z") == RESTORED
    assert restored == [] and f"resuming: {RESTORED} exists already" in capsys.readouterr().out
    assert stack_parameter(session) == RESTORED


def test_what_is_not_restored_says_why(prod):
    session, _ = prod
    with pytest.raises(RestoreError, match="stream"):
        restore(session, "prod", "outbox", "2026-11-26T08:00:00Z")
    with pytest.raises(RestoreError, match="time zone"):
        restore(session, "prod", "posts", "2026-11-26T08:00:00")
    with pytest.raises(RestoreError, match="no table agora-prod-nothing"):
        restore(session, "prod", "nothing", "2026-11-26T08:00:00Z")
    assert stack_parameter(session) == ""


@pytest.mark.fast
def test_table_names_round_trip():
    names = {"users": "agora-prod-users.20261126T080000Z", "posts": "agora-prod-posts.x"}
    assert parse_names(format_names(names), "agora-prod-") == names
    # Hostile or old entries: a stem=name entry still names its table; what names no table of
    # the stage (another prefix, no stem) is ignored.
    assert parse_names(" , posts = p ,bad,agora-prod-,agora-dev-users.x", "agora-prod-") == {
        "posts": "p"
    }
    from chalicelib.settings import Settings

    settings = Settings(table_prefix="agora-prod-", table_names="agora-prod-posts.x")
    assert settings.table_name("posts") == "agora-prod-posts.x"
    assert settings.table_name("post") == "agora-prod-post"


def test_only_the_api_is_deployed_by_canary_and_its_own_5xx_roll_it_back(packaged):
    """Issue 48, on the expanded prod package: one CodeDeploy deployment group, the API's, whose
    rollback alarms include its version's 5xx answers; no job can roll the stack back. The
    emergency switch (DeployAllAtOnce) moves it at once without them."""
    template, _ = packaged
    parameters = deployed_parameters(template, DEPLOYED, {})
    stack = expanded(template, parameters)
    groups = {
        name: r["Properties"]
        for name, r in stack["Resources"].items()
        if r["Type"] == "AWS::CodeDeploy::DeploymentGroup"
    }
    assert list(groups) == ["APIHandlerDeploymentGroup"]
    [group] = groups.values()
    alarms = resolved(template, group["AlarmConfiguration"], parameters)
    alarmed = json.dumps(alarms)
    assert "APIHandlerServerErrorsAlarm" in alarmed and "APIHandlerErrorsAlarm" in alarmed
    config = json.dumps(group["DeploymentConfigName"])
    assert "Canary10Percent10Minutes" in config and "AllAtOnce" in config
    # The PreTraffic hook runs before the canary, and the emergency switch skips it (issue 57).
    policy = stack["Resources"][f"APIHandlerAlias{ALIAS}"]["UpdatePolicy"]
    hook = policy["CodeDeployLambdaAliasUpdate"]["BeforeAllowTrafficHook"]
    assert resolved(template, hook, parameters) == {"Ref": "PreTraffic"}
    emergency = {**parameters, "DeployAllAtOnce": "true"}
    assert resolved(template, hook, emergency) == {"Ref": "AWS::NoValue"}
    # The jobs' aliases move with the stack: no update policy waits on CodeDeploy for them.
    for logical in aliased_functions(template):
        alias = stack["Resources"][f"{logical}Alias{ALIAS}"]
        assert ("UpdatePolicy" in alias) == (logical == "APIHandler"), logical
    # Silence is alarmed, and there are two topics (infra.paging, infra.watch).
    names = {r["Properties"].get("AlarmName") for r in stack["Resources"].values()
             if r["Type"] in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")}  # fmt: skip
    assert {"agora-prod-drain-outbox-silent", "agora-prod-purge-comments-heartbeat",
            "agora-prod-api-version-5xx", "agora-prod-api-down"} <= names  # fmt: skip
    topics = [r for r in stack["Resources"].values() if r["Type"] == "AWS::SNS::Topic"]
    assert len(topics) >= 3  # the page, the tickets, SES's feedback
