"""Each function's role, as the translated template makes it, in two halves.

moto enforces IAM (its access control, once `INITIAL_NO_AUTH_ACTION_COUNT` requests have been
answered) on every service it serves through its common request path, DynamoDB, DynamoDB
Streams, KMS, SQS, SES, Secrets Manager, EventBridge and CloudWatch among them, but only in part
(moto/iam/access_control.py, moto 5.2): it checks the action of each call, the resource only for
SQS (the queue's ARN), S3 (the bucket and key) and IAM, and no condition. For every other service the resource it checks
is "*", which a statement naming its tables or secret never matches, and a statement with a
condition is refused outright. So the role moto holds (`for_moto`) keeps each statement's actions,
its resources for SQS and S3 only, and no condition; and what moto cannot check, every resource and
condition, is checked here (`refused`) on each call the function made, as the runtime recorded
it (tests/rehearsal/bootstrap.py), against the role's policies exactly as the template writes
them, resolved against the stack (`role_policies`). Lambda and CodeDeploy, which moto does not
serve here (the hook's calls go to the rehearsal's own stand-in), are checked this way only.
"""

from __future__ import annotations

import copy
import fnmatch
from typing import Any
from urllib.parse import unquote

from tests.support.sam_stack import ACCOUNT, REGION, Resolver

# The services moto checks resources for: a statement of these keeps its resources in moto.
MOTO_CHECKS_RESOURCES = ("sqs:", "s3:")
# DynamoDB authorises a transaction by each item's own action on its table; moto asks for
# the transaction's name, which IAM does not have: moto's copy grants it with the item actions.
DYNAMODB_TRANSACTIONS = {
    "dynamodb:TransactWriteItems": ("dynamodb:PutItem", "dynamodb:UpdateItem",
                                    "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"),
    "dynamodb:TransactGetItems": ("dynamodb:GetItem",),
}  # fmt: skip
# moto names an action after the service's signing name, which is not always IAM's prefix:
# CloudWatch signs as `monitoring`. moto's copy grants the action under both names.
MOTO_PREFIXES = {"cloudwatch:": "monitoring:"}
# SQS authorises a batch call by its single action's permission; moto asks for the batch
# call's own name, which no policy grants: moto's copy grants it with the single action.
SQS_BATCHES = {
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def role_of(template: dict, function: str) -> str:
    """The logical id of the function's role."""
    role = template["Resources"][function]["Properties"]["Role"]
    return role["Fn::GetAtt"][0]


def role_policies(template: dict, resolver: Resolver, function: str) -> list[dict]:
    """Every policy document the template attaches to the function's role (its inline policies,
    each AWS::IAM::Policy naming it: logs, mail sending, the hook's invoke), resolved."""
    resources = template["Resources"]
    role = role_of(template, function)
    properties = resources[role]["Properties"]
    assert not properties.get("ManagedPolicyArns"), f"{role}: a managed policy to resolve"
    documents = [p["PolicyDocument"] for p in properties.get("Policies", [])]
    for resource in resources.values():
        if (
            resource["Type"] == "AWS::IAM::Policy"
            and {"Ref": role} in resource["Properties"]["Roles"]
        ):
            documents.append(resource["Properties"]["PolicyDocument"])
    return [resolver.resolve(document) for document in documents]


def for_moto(document: dict) -> dict:
    """The policy moto can enforce: actions (and SQS resources), no conditions (above). moto
    checks sqs:GetQueueUrl against "*" (the call names a queue, not its URL): it gets a statement
    of its own on "*", and its queue is checked here."""
    made = copy.deepcopy(document)
    for statement in list(made["Statement"]):
        statement.pop("Condition", None)
        actions = _listed(statement["Action"])
        actions = actions + [
            moto + action.removeprefix(iam)
            for action in actions
            for iam, moto in MOTO_PREFIXES.items()
            if action.startswith(iam)
        ]
        statement["Action"] = actions
        if not all(action.startswith(MOTO_CHECKS_RESOURCES) for action in actions):
            statement["Resource"] = "*"
            statement["Action"] = actions + [
                name
                for name, items in DYNAMODB_TRANSACTIONS.items()
                if any(item in actions for item in items)
            ]
            continue
        statement["Action"] = actions + [b for b, a in SQS_BATCHES.items() if a in actions]
        if "sqs:GetQueueUrl" in actions:
            statement["Action"] = [a for a in statement["Action"] if a != "sqs:GetQueueUrl"]
            made["Statement"].append(
                {"Effect": "Allow", "Action": ["sqs:GetQueueUrl"], "Resource": "*"}
            )
    return made


def _matches(patterns: Any, value: str) -> bool:
    return any(fnmatch.fnmatchcase(value, pattern) for pattern in _listed(patterns))


def _conditions_hold(statement: dict, context: dict[str, str]) -> bool:
    for operator, tests in statement.get("Condition", {}).items():
        for key, expected in tests.items():
            if operator not in ("StringEquals", "ForAnyValue:StringEquals"):
                raise AssertionError(f"a condition the check does not evaluate: {operator}")
            if key not in context or context[key] not in _listed(expected):
                return False
    return True


def allowed(documents: list[dict], action: str, resource: str, context: dict[str, str]) -> bool:
    """IAM's answer for one call (Allow statements: Agora's policies have no Deny)."""
    for document in documents:
        for statement in _listed(document["Statement"]):
            assert statement["Effect"] == "Allow"
            if (
                _matches(statement["Action"], action)
                and _matches(statement["Resource"], resource)
                and _conditions_hold(statement, context)
            ):
                return True
    return False


class Names:
    """What a call's parameters name, as the ARNs IAM checks (the stack's own resources)."""

    def __init__(self, secrets: dict[str, str], key_arn: str, key_alias: str, stream: str) -> None:
        self.secrets = secrets  # name -> ARN (Secrets Manager adds a random suffix)
        self.key_arn = key_arn
        self.key_alias = key_alias
        # The stack's one stream (the outbox's): a GetRecords names only its shard iterator.
        self.stream = stream

    def table(self, name: str, index: str | None = None) -> str:
        arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
        return f"{arn}/index/{index}" if index else arn

    @staticmethod
    def queue(url_or_name: str) -> str:
        return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{url_or_name.rstrip('/').rsplit('/', 1)[-1]}"

    def secret(self, secret_id: str) -> str:
        return secret_id if secret_id.startswith("arn:") else self.secrets.get(secret_id, secret_id)


_TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
             "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}  # fmt: skip


# What IAM checks for one call: (action, resource, condition context) each.
Grants = list[tuple[str, str, dict[str, str]]]


def _dynamodb(call: dict, names: Names) -> Grants:
    operation, params = call["operation"], call["params"]
    if call["service"] == "streams.dynamodb":
        return [(f"dynamodb:{operation}", params.get("StreamArn", names.stream), {})]
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [(f"dynamodb:{operation}", names.table(t), {}) for t in params["RequestItems"]]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        needed = []
        for item in params["TransactItems"]:
            [(kind, body)] = item.items()
            needed.append((f"dynamodb:{_TRANSACT[kind]}", names.table(body["TableName"]), {}))
        return needed
    return [
        (f"dynamodb:{operation}", names.table(params["TableName"], params.get("IndexName")), {})
    ]


def _sqs(call: dict, names: Names) -> Grants:
    params = call["params"]
    queue = params.get("QueueUrl") or params.get("QueueName", "")
    action = SQS_BATCHES.get(f"sqs:{call['operation']}", f"sqs:{call['operation']}")
    return [(action, names.queue(queue), {})]


def _s3_get(call: dict, names: Names) -> Grants:
    params = call["params"]
    return [("s3:GetObject", f"arn:aws:s3:::{params['Bucket']}/{params['Key']}", {})]


def _secret(call: dict, names: Names) -> Grants:
    return [(f"secretsmanager:{call['operation']}", names.secret(call["params"]["SecretId"]), {})]


def _kms(call: dict, names: Names) -> Grants:
    return [(f"kms:{call['operation']}", names.key_arn, {"kms:ResourceAliases": names.key_alias})]


def _ses_send(call: dict, names: Names) -> Grants:
    operation, params = call["operation"], call["params"]
    sender = call.get("from_address") or params.get("Source", "")
    context = {"ses:FromAddress": sender}
    needed = [
        (f"ses:{operation}", f"arn:aws:ses:{REGION}:{ACCOUNT}:identity/{domain}", context)
        for domain in {sender.rpartition("@")[2]}
    ]
    if params.get("ConfigurationSetName"):
        arn = f"arn:aws:ses:{REGION}:{ACCOUNT}:configuration-set/"
        needed.append((f"ses:{operation}", arn + params["ConfigurationSetName"], context))
    return needed


def _put_events(call: dict, names: Names) -> Grants:
    buses = {entry.get("EventBusName", "default") for entry in call["params"]["Entries"]}
    arn = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/"
    return [("events:PutEvents", bus if bus.startswith("arn:") else arn + bus, {}) for bus in buses]


def _function_arn(params: dict) -> str:
    """The ARN of the function a Lambda call names (by name or ARN, URL-quoted), unqualified."""
    function = unquote(params["FunctionName"])
    if not function.startswith("arn:"):
        function = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function}"
    return function


def _invoke(call: dict, names: Names) -> Grants:
    params = call["params"]
    function = _function_arn(params)
    if params.get("Qualifier"):
        function += f":{params['Qualifier']}"
    return [("lambda:InvokeFunction", function, {})]


def _read_function(call: dict, names: Names) -> Grants:
    params = call["params"]
    function = _function_arn(params)
    qualifier = params.get("Qualifier") or params.get("Name")
    return [
        (f"lambda:{call['operation']}", f"{function}:{qualifier}" if qualifier else function, {})
    ]


def _put_metric_data(call: dict, names: Names) -> Grants:
    context = {"cloudwatch:namespace": call["params"]["Namespace"]}
    return [("cloudwatch:PutMetricData", "*", context)]


def _hook_status(call: dict, names: Names) -> Grants:
    # The deployment's group: SAM's application and group, as CloudFormation names them.
    group = (f"arn:aws:codedeploy:{REGION}:{ACCOUNT}:deploymentgroup:"
             "agora-dev-ServerlessDeploymentApplication-1A2B3C/agora-dev-APIHandlerDeploymentGroup-4D5E6F")  # fmt: skip
    return [(f"codedeploy:{call['operation']}", group, {})]


def _write_log(call: dict, names: Names) -> Grants:
    group, stream = call["params"]["logGroupName"], call["params"]["logStreamName"]
    arn = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{group}:log-stream:{stream}"
    return [(f"logs:{call['operation']}", arn, {})]


def _always_allowed(call: dict, names: Names) -> Grants:
    return []


# By the call's signing name: every operation of the service; or by (signing name, operation).
_BY_SERVICE = {"dynamodb": _dynamodb, "sqs": _sqs, "secretsmanager": _secret, "kms": _kms}
_BY_OPERATION = {
    ("s3", "GetObject"): _s3_get,
    ("ses", "SendRawEmail"): _ses_send,
    ("ses", "SendEmail"): _ses_send,
    ("events", "PutEvents"): _put_events,
    ("lambda", "Invoke"): _invoke,
    ("lambda", "GetFunctionConfiguration"): _read_function,
    ("lambda", "GetAlias"): _read_function,
    ("monitoring", "PutMetricData"): _put_metric_data,
    ("codedeploy", "PutLifecycleEventHookExecutionStatus"): _hook_status,
    ("logs", "CreateLogStream"): _write_log,
    ("logs", "PutLogEvents"): _write_log,
    ("sts", "GetCallerIdentity"): _always_allowed,
}


def grants_needed(call: dict, names: Names) -> Grants:
    """The (action, resource, condition context) IAM checks for one recorded call."""
    service, operation = call["signing_name"], call["operation"]
    grants = _BY_SERVICE.get(service) or _BY_OPERATION.get((service, operation))
    if grants is None:
        raise AssertionError(
            f"a call the rehearsal does not know how IAM checks: {service}:{operation}"
        )
    return grants(call, names)


def refused(documents: list[dict], calls: list[dict], names: Names) -> list[str]:
    """Each call (action on resource) the role's policies do not allow."""
    found = []
    for call in calls:
        for action, resource, context in grants_needed(call, names):
            if not allowed(documents, action, resource, context):
                found.append(f"{action} on {resource}" + (f" ({context})" if context else ""))
    return sorted(set(found))
