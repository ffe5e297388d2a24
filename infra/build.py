"""Writes the deployment resources from the code, so that they cannot drift from it.

    python -m infra.build          # rewrite infra/<stage>.yaml and .chalice/policy-<stage>.json
    python -m infra.build --check  # exit 1 when a committed file differs (make test runs this)

For each stage: every DynamoDB table and index the PynamoDB models define (on-demand billing,
point-in-time recovery, TTL where items expire, deletion protection in prod), the KMS key that
encrypts stored secrets, the mailbox queue with its dead-letter queue, the token secret in
Secrets Manager, and API Gateway throttling and gateway responses in the envelope. The policy
file grants exactly the calls the code makes, on exactly these resources (Chalice's policy
analyser cannot see PynamoDB's calls, hence autogen_policy false).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chalicelib.mail.outgoing import SENDERS
from chalicelib.services.canary import SECRET_VARIABLE as CANARY_SECRET_VARIABLE
from chalicelib.settings import Settings
from infra import (
    alarms,
    cloudwatch,
    disaster,
    inbound,
    monitoring,
    operations,
    paging,
    privileges,
    restore,
    rollout,
    watch,
)

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("dev", "prod")

# Answers API Gateway gives itself (unknown path, throttling, its own failures) in the envelope.
ENVELOPE = (
    '{"success": false, "message": $context.error.messageString, '
    '"timestamp": "$context.requestTimeEpoch", "errors": [], "object": null}'
)
GATEWAY_RESPONSES = {
    "MISSING_AUTHENTICATION_TOKEN": 404,  # what API Gateway answers for a path it does not know
    "RESOURCE_NOT_FOUND": 404,
    "THROTTLED": 429,
    "REQUEST_TOO_LARGE": 413,
    "DEFAULT_4XX": None,
    "DEFAULT_5XX": None,
}


# Functions whose code reads AGORA_TOKEN_SECRET (chalicelib.auth.signing_keys): the API, the
# jobs that send mail (unsubscribe links, reply keys), and the mail poll, which checks the reply
# key of each reply to the comments mailbox. Each one's role reads the secret
# (infra.privileges `token_secret`): tests/rehearsal runs each function with both. receive-mail
# (mail in by push) reads reply keys as the poll does.
TOKEN_SECRET_READERS = (
    "APIHandler",
    "DrainOutbox",
    "DeliverNotifications",
    "DeliverDigests",
    "PollMailbox",
    "ReceiveMail",
)
# Functions that read the deploy canary's password: migrate makes the account, the hook signs in.
CANARY_SECRET_READERS = ("Migrate", "PreTraffic")


def stage_names(stage: str) -> dict[str, str]:
    return {
        "table_prefix": f"agora-{stage}-",
        "queue": f"agora-{stage}-mailbox-jobs",
        "dead_letters": f"agora-{stage}-mailbox-jobs-dead",
        "notify_queue": f"agora-{stage}-notification-jobs",
        "notify_dead_letters": f"agora-{stage}-notification-jobs-dead",
        "digest_queue": f"agora-{stage}-digest-jobs",
        "digest_dead_letters": f"agora-{stage}-digest-jobs-dead",
        "outbox_dead_letters": f"agora-{stage}-outbox-dead",
        "feedback_queue": f"agora-{stage}-ses-feedback",
        "feedback_dead_letters": f"agora-{stage}-ses-feedback-dead",
        "feedback_undelivered": f"agora-{stage}-ses-feedback-undelivered",
        "feedback_topic": f"agora-{stage}-ses-feedback",
        "configuration_set": f"agora-{stage}",
        "event_bus": f"agora-{stage}-events",
        "key_alias": f"alias/agora-{stage}",
        "secret": f"agora-{stage}-token-secret",
        "canary_secret": f"agora-{stage}-canary-secret",
        "scheduled_failures": f"agora-{stage}-scheduled-failures",
        "inbound_dead_letters": f"agora-{stage}-inbound-mail-dead",
    }


def _models(stage: str) -> list[Any]:
    os.environ["AGORA_TABLE_PREFIX"] = stage_names(stage)["table_prefix"]
    from chalicelib.settings import reload_settings

    reload_settings()
    # Table names are read when a model class is made: import the store afresh for each stage.
    for name in [m for m in sys.modules if m.startswith("chalicelib.store")]:
        del sys.modules[name]
    from chalicelib.store.tables import all_models

    return sorted(all_models(), key=lambda m: m.Meta.table_name)


def _logical_id(table_name: str, prefix: str) -> str:
    stem = table_name[len(prefix) :]
    return "".join(part.title() for part in stem.split("-")) + "Table"


def _keys(key_schema: list[dict[str, str]]) -> list[dict[str, str]]:
    # CloudFormation wants the HASH key first; PynamoDB lists keys in attribute order.
    ordered = sorted(key_schema, key=lambda key: key["KeyType"] != "HASH")
    return [{"AttributeName": key["AttributeName"], "KeyType": key["KeyType"]} for key in ordered]


def _index(index: dict[str, Any]) -> dict[str, Any]:
    return {
        "IndexName": index["index_name"],
        "KeySchema": _keys(index["key_schema"]),
        "Projection": index["projection"],
    }


def table_resource(model: Any, stage: str) -> dict[str, Any]:
    from pynamodb.attributes import TTLAttribute

    schema = model._get_schema()
    properties: dict[str, Any] = {
        "TableName": model.Meta.table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": sorted(
            schema["attribute_definitions"], key=lambda a: a["AttributeName"]
        ),
        "KeySchema": _keys(schema["key_schema"]),
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "SSESpecification": {"SSEEnabled": True},
        "DeletionProtectionEnabled": stage == "prod",
    }
    if schema["global_secondary_indexes"]:
        properties["GlobalSecondaryIndexes"] = [
            _index(i) for i in schema["global_secondary_indexes"]
        ]
    if schema["local_secondary_indexes"]:
        properties["LocalSecondaryIndexes"] = [_index(i) for i in schema["local_secondary_indexes"]]
    ttl = [a.attr_name for a in model.get_attributes().values() if isinstance(a, TTLAttribute)]
    if ttl:
        properties["TimeToLiveSpecification"] = {"AttributeName": ttl[0], "Enabled": True}
    stream = getattr(model.Meta, "stream_view_type", None)
    if stream:
        properties["StreamSpecification"] = {"StreamViewType": stream}
    return {
        "Type": "AWS::DynamoDB::Table",
        "DeletionPolicy": "Retain" if stage == "prod" else "Delete",
        "UpdateReplacePolicy": "Retain" if stage == "prod" else "Delete",
        "Properties": properties,
    }


def template(stage: str) -> dict[str, Any]:
    names = stage_names(stage)
    resources: dict[str, Any] = {}
    tables: dict[str, str] = {}
    for model in _models(stage):
        logical = _logical_id(model.Meta.table_name, names["table_prefix"])
        resources[logical] = table_resource(model, stage)
        tables[logical] = model.Meta.table_name
    resources.update(_secrets_key(stage, names))
    resources.update(_trigger_queues(names))
    resources.update(_secrets(stage, names))
    for logical in CANARY_SECRET_READERS:
        merge(
            resources.setdefault(logical, {}),
            {
                "DependsOn": ["CanarySecret"],
                "Properties": {
                    "Environment": {"Variables": {CANARY_SECRET_VARIABLE: names["canary_secret"]}}
                },
            },
        )
    # The SQS trigger names the queue; the queue must exist before its event source mapping.
    # A function reading the token secret is made after it.
    resources["PollMailbox"] = {"DependsOn": ["MailboxQueue", "TokenSecret"]}
    resources["DeliverNotifications"] = {"DependsOn": ["NotificationQueue", "TokenSecret"]}
    resources["DeliverDigests"] = {"DependsOn": ["DigestQueue", "TokenSecret"]}
    resources.update(feedback_resources(names))
    resources.update(outbox_resources(names))
    resources["SesFeedback"] = {"DependsOn": ["SesFeedbackQueue"]}
    # Every function that sends mail draws from AGORA_MAIL_SEND_RATE (mail/outgoing.py); the
    # daily schedule reads it too (it warns when the day's digests cannot fit in the day).
    rate = str(Settings.model_fields["mail_send_rate"].default)
    for logical in (*(sender.logical_id for sender in SENDERS.values()), "SendDigests"):
        merge(
            resources.setdefault(logical, {}),
            {"Properties": {"Environment": {"Variables": {"AGORA_MAIL_SEND_RATE": rate}}}},
        )
    # Domain events for the organisation's own systems (services/event_bus.py, README).
    resources["EventBus"] = {
        "Type": "AWS::Events::EventBus",
        "Properties": {"Name": names["event_bus"]},
    }
    # A reference, read at run time (chalicelib/auth.py): the secret never sits in the
    # environment, and a rotation needs no redeploy.
    # Every function that signs or checks with it: the API (tokens, feed keys, unsubscribe
    # links), the jobs that send mail (each notification and digest carries an unsubscribe
    # link) and the mail poll (reply keys). The others never read it, so they are not given it.
    reference = "secretsmanager:" + names["secret"]
    for logical in TOKEN_SECRET_READERS:
        resources.setdefault(logical, {}).setdefault("DependsOn", ["TokenSecret"])
        merge(
            resources[logical],
            {"Properties": {"Environment": {"Variables": {"AGORA_TOKEN_SECRET": reference}}}},
        )
    # Only the poll reads mail: in AWS it checks DKIM and DMARC itself (CONTRACT §2), whatever the
    # mail server in front of it did. (Not a stage variable: chalice's test client would apply it
    # to every test.)
    merge(
        resources.setdefault("PollMailbox", {}),
        {"Properties": {"Environment": {"Variables": {"AGORA_MAIL_AUTH": "verify"}}}},
    )
    resources["RestAPI"] = {
        "Properties": {
            # A fixed name: the API 5XX alarm's ApiName dimension.
            "Name": f"agora-{stage}",
            # No X-Ray (issue 38): traces without a tracer showed only Lambda's own segments,
            # and Powertools' tracer costs every cold start its import; the logs' correlationId
            # follows a request instead.
            "TracingEnabled": False,
            "MethodSettings": [
                {
                    "ResourcePath": "/*",
                    "HttpMethod": "*",
                    "ThrottlingBurstLimit": 200,
                    "ThrottlingRateLimit": 100,
                }
            ],
            "GatewayResponses": _gateway_responses(),
        }
    }
    resources["MailSendingPolicy"] = mail_sending_policy(stage)
    merge(resources, operations.operations_resources(stage, names, sender_domain, sender_address))
    merge(resources, monitoring.monitoring_resources(stage, names, tables))
    merge(resources, watch.watch_resources(stage, names))
    # Every alarm, declared in one table (infra/alarms.py): what rolls a prod deploy back, the
    # alarms themselves, and (after the resources they watch) the page topic and one composite
    # per cause.
    declared = alarms.declared(stage, names, tables)
    rollback = [alarm.logical for alarm in declared if alarm.rollback]
    merge(resources, rollout.rollout_resources(stage, rollback))
    if stage == "prod":  # a copy out of the region, and its outage paged (infra.disaster)
        merge(resources, disaster.disaster_resources(stage, tables))
    # Mail in by push: SES receiving for MailInboundDomain (infra/inbound.py).
    merge(resources, inbound.inbound_resources(stage, names))
    resources.update({alarm.logical: cloudwatch.resource(alarm) for alarm in declared})
    resources.update(paging.route(stage, declared, alarms.CAUSES))
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"Agora ({stage}): tables, secrets key, queues, token secret, API limits, "
        "alarms",
        "Parameters": {
            **operations.parameters(stage),
            **watch.parameters(),
            **rollout.parameters(stage),
            **restore.parameters(),
            **paging.parameters(),
            **(disaster.parameters() if stage == "prod" else {}),
            **inbound.parameters(),
        },
        "Conditions": {
            **operations.conditions(),
            **rollout.conditions(stage),
            **paging.conditions(),
            **(disaster.conditions() if stage == "prod" else {}),
            **inbound.conditions(),
        },
        "Resources": resources,
        "Outputs": operations.outputs(),
    }


def _secrets_key(stage: str, names: dict[str, str]) -> dict[str, Any]:
    """The KMS key of the stored secrets, and its alias."""
    resources: dict[str, Any] = {}
    resources["SecretsKey"] = {
        "Type": "AWS::KMS::Key",
        # What it encrypted outlives the stack; a first create that failed encrypted nothing,
        # and leaves no key behind.
        "DeletionPolicy": "RetainExceptOnCreate",
        "UpdateReplacePolicy": "Retain",
        "Properties": {
            "Description": f"Agora {stage}: encrypts stored POP3 passwords and chat secrets",
            "EnableKeyRotation": True,
            "KeyPolicy": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "AccountAdministers",
                        "Effect": "Allow",
                        "Principal": {
                            "AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}
                        },
                        "Action": "kms:*",
                        "Resource": "*",
                    }
                ],
            },
        },
    }
    resources["SecretsKeyAlias"] = {
        "Type": "AWS::KMS::Alias",
        "Properties": {"AliasName": names["key_alias"], "TargetKeyId": {"Ref": "SecretsKey"}},
    }
    return resources


def _trigger_queues(names: dict[str, str]) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    # Each SQS trigger's queue: visibility six times its function's timeout, as AWS advises,
    # and a dead-letter queue that keeps what failed five times for a person to look at.
    for logical, queue, dead, function_timeout in (
        ("Mailbox", names["queue"], names["dead_letters"], 300),
        ("Notification", names["notify_queue"], names["notify_dead_letters"], 120),
        ("Digest", names["digest_queue"], names["digest_dead_letters"], 120),
        ("SesFeedback", names["feedback_queue"], names["feedback_dead_letters"], 60),
    ):
        resources[f"{logical}DeadLetterQueue"] = {
            "Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": dead, "MessageRetentionPeriod": 1209600},
        }
        resources[f"{logical}Queue"] = {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": queue,
                "VisibilityTimeout": 6 * function_timeout,
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": [f"{logical}DeadLetterQueue", "Arn"]},
                    "maxReceiveCount": 5,
                },
            },
        }
    return resources


def _secrets(stage: str, names: dict[str, str]) -> dict[str, Any]:
    """The token secret, and the deploy canary's password."""
    resources: dict[str, Any] = {}
    resources["TokenSecret"] = {
        "Type": "AWS::SecretsManager::Secret",
        # A new value ends every session and every unsubscribe link and feed key: in prod the
        # secret outlives a deleted or replaced stack (make deploy refuses the replacement too).
        "DeletionPolicy": "RetainExceptOnCreate" if stage == "prod" else "Delete",
        "UpdateReplacePolicy": "Retain" if stage == "prod" else "Delete",
        "Properties": {
            "Name": names["secret"],
            "Description": "Signing secret of Agora access tokens",
            "GenerateSecretString": {"PasswordLength": 64, "ExcludePunctuation": True},
        },
    }
    # The deploy canary's password (services/canary.py): migrate makes its account with it, the
    # PreTraffic hook signs in with it; no other function may read it. A new value is only a
    # new password (the next migrate sets it), so it is not kept past its stack.
    resources["CanarySecret"] = {
        "Type": "AWS::SecretsManager::Secret",
        "DeletionPolicy": "Delete",
        "UpdateReplacePolicy": "Delete",
        "Properties": {
            "Name": names["canary_secret"],
            "Description": "Password of the deploy canary's account (the PreTraffic hook's sign-in)",
            "GenerateSecretString": {"PasswordLength": 64, "ExcludePunctuation": True},
        },
    }
    return resources


def _gateway_responses() -> dict[str, Any]:
    """API Gateway's own answers (a throttle, a missing route...) in Agora's envelope."""
    gateway_responses = {}
    for kind, status in GATEWAY_RESPONSES.items():
        response: dict[str, Any] = {"ResponseTemplates": {"application/json": ENVELOPE}}
        if status is not None:
            response["StatusCode"] = str(status)
        if kind == "THROTTLED":
            # Every 429 says when to come back (CONTRACT §5); the stage's rate limit is per second.
            response["ResponseParameters"] = {"Headers": {"Retry-After": "'1'"}}
        gateway_responses[kind] = response
    return gateway_responses


# The outbox drain's event source (jobs/outbox.py): retried this many times, halving the batch on
# a crash, before the batch's place goes to the dead-letter queue.
OUTBOX_RETRIES = 10
OUTBOX_BATCH = 20  # records per invocation: each may send up to 25 emails inline


def outbox_resources(names: dict[str, str]) -> dict[str, Any]:
    """The outbox table's stream drives `drain-outbox`: in order per shard, new items only, a
    failed record answered as the batch's failure (ReportBatchItemFailures) so what came before
    it is not delivered again; after the retries, the batch's stream position (not its records:
    they stay in the stream for 24 hours) goes to the dead-letter queue."""
    return {
        "OutboxDeadLetterQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": names["outbox_dead_letters"],
                "MessageRetentionPeriod": 1209600,
            },
        },
        "DrainOutbox": {
            "Properties": {
                "Events": {
                    "OutboxStream": {
                        "Type": "DynamoDB",
                        "Properties": {
                            "Stream": {"Fn::GetAtt": ["OutboxTable", "StreamArn"]},
                            "StartingPosition": "TRIM_HORIZON",
                            "BatchSize": OUTBOX_BATCH,
                            "MaximumRetryAttempts": OUTBOX_RETRIES,
                            "BisectBatchOnFunctionError": True,
                            "FunctionResponseTypes": ["ReportBatchItemFailures"],
                            "FilterCriteria": {
                                "Filters": [{"Pattern": json.dumps({"eventName": ["INSERT"]})}]
                            },
                            "DestinationConfig": {
                                "OnFailure": {
                                    "Type": "SQS",
                                    "Destination": {"Fn::GetAtt": ["OutboxDeadLetterQueue", "Arn"]},
                                }
                            },
                        },
                    }
                }
            },
        },
    }


def merge(into: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of template fragments (as `chalice package --merge-template` does)."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
    return into


def feedback_resources(names: dict[str, str]) -> dict[str, Any]:
    """SES bounces and complaints → SNS topic → SQS queue → the `ses-feedback` function.

    Emails are sent with the configuration set (AGORA_SES_CONFIGURATION_SET), whose event
    destination publishes bounce and complaint events to the topic.
    """
    return {
        "SesFeedbackTopic": {
            "Type": "AWS::SNS::Topic",
            "Properties": {"TopicName": names["feedback_topic"]},
        },
        "SesFeedbackSubscription": {
            "Type": "AWS::SNS::Subscription",
            "Properties": {
                "TopicArn": {"Ref": "SesFeedbackTopic"},
                "Protocol": "sqs",
                "Endpoint": {"Fn::GetAtt": ["SesFeedbackQueue", "Arn"]},
                "RawMessageDelivery": True,
                # What SNS cannot deliver to the queue (its policy, the queue gone) waits here,
                # alarmed (infra.alarms), instead of being dropped after SNS's retries.
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": ["SesFeedbackUndeliveredQueue", "Arn"]}
                },
            },
        },
        "SesFeedbackUndeliveredQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": names["feedback_undelivered"],
                "MessageRetentionPeriod": 1209600,
            },
        },
        "SesFeedbackQueuePolicy": {
            "Type": "AWS::SQS::QueuePolicy",
            "Properties": {
                "Queues": [{"Ref": "SesFeedbackQueue"}, {"Ref": "SesFeedbackUndeliveredQueue"}],
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "sns.amazonaws.com"},
                            "Action": "sqs:SendMessage",
                            "Resource": [
                                {"Fn::GetAtt": [queue, "Arn"]}
                                for queue in ("SesFeedbackQueue", "SesFeedbackUndeliveredQueue")
                            ],
                            "Condition": {
                                "ArnEquals": {"aws:SourceArn": {"Ref": "SesFeedbackTopic"}}
                            },
                        }
                    ],
                },
            },
        },
        "SesConfigurationSet": {
            "Type": "AWS::SES::ConfigurationSet",
            "Properties": {"Name": names["configuration_set"]},
        },
        "SesFeedbackDestination": {
            "Type": "AWS::SES::ConfigurationSetEventDestination",
            "Properties": {
                "ConfigurationSetName": {"Ref": "SesConfigurationSet"},
                "EventDestination": {
                    "Name": "bounces-and-complaints",
                    "Enabled": True,
                    "MatchingEventTypes": ["bounce", "complaint"],
                    "SnsDestination": {"TopicARN": {"Ref": "SesFeedbackTopic"}},
                },
            },
        },
    }


def _table_arns(names: dict[str, str], stems: tuple[str, ...]) -> list[str]:
    arns = []
    for stem in sorted(stems):
        table = names["table_prefix"] + stem
        arns += [
            f"arn:aws:dynamodb:*:*:table/{table}",
            f"arn:aws:dynamodb:*:*:table/{table}/index/*",
            # The same table restored to a point in time (`make restore`: `<table>.<time>`,
            # and its indexes): no stem holds a dot, so no other table matches.
            f"arn:aws:dynamodb:*:*:table/{table}.*",
        ]
    return arns


def policy(stage: str, function: str) -> dict[str, Any]:
    """The function's own role policy: exactly what `privileges.FUNCTIONS` declares it calls.
    Sending mail is granted in the template (`mail_sending_policy`): it names the stack's SES
    identity, which a policy file cannot."""
    names = stage_names(stage)
    needs = privileges.FUNCTIONS[function]
    tables = {m.Meta.table_name[len(names["table_prefix"]) :] for m in _models(stage)}
    unknown = sorted((set(needs.reads) | set(needs.writes) | set(needs.scans)) - tables)
    if unknown:
        raise ValueError(f"{function} declares tables the models do not define: {unknown}")
    # Its log lines (and the metrics, written as log lines) are granted in the template, on the
    # function's own log group (infra.operations.log_policies): a policy file cannot name it.
    statements = _table_statements(names, needs) + _other_statements(stage, names, needs)
    return {"Version": "2012-10-17", "Statement": statements}


def _table_statements(names: dict[str, str], needs: privileges.Needs) -> list[dict[str, Any]]:
    """The tables a function reads (and only reads), writes and scans."""
    statements: list[dict[str, Any]] = []
    reads_only = tuple(set(needs.reads) - set(needs.writes))
    if reads_only:
        statements.append(
            {
                "Sid": "ReadTables",
                "Effect": "Allow",
                "Action": list(privileges.READ),
                "Resource": _table_arns(names, reads_only),
            }
        )
    if needs.writes:
        statements.append(
            {
                "Sid": "WriteTables",
                "Effect": "Allow",
                "Action": sorted(privileges.WRITE),
                "Resource": _table_arns(names, needs.writes),
            }
        )
    if needs.scans:
        statements.append(
            {
                "Sid": "ScanTables",
                "Effect": "Allow",
                "Action": ["dynamodb:Scan"],
                "Resource": _table_arns(names, needs.scans),
            }
        )
    return statements


def _other_statements(
    stage: str, names: dict[str, str], needs: privileges.Needs
) -> list[dict[str, Any]]:
    """The rest of what a function's role may do: the key, queues, secrets, the inbound mail,
    the outbox stream, the event bus, the deploy hook."""
    statements: list[dict[str, Any]] = []
    if needs.kms:
        statements.append(
            {
                "Sid": "SecretsKey",
                "Effect": "Allow",
                "Action": sorted(needs.kms),
                "Resource": "arn:aws:kms:*:*:key/*",
                # Only the key behind this stage's alias, whichever id it was given.
                "Condition": {
                    "ForAnyValue:StringEquals": {"kms:ResourceAliases": names["key_alias"]}
                },
            }
        )
    if needs.sends_to:
        statements.append(
            {
                "Sid": "SendToQueues",
                "Effect": "Allow",
                "Action": list(privileges.SEND),
                "Resource": [f"arn:aws:sqs:*:*:{names[q]}" for q in sorted(needs.sends_to)],
            }
        )
    if needs.triggered_by:
        statements.append(
            {
                "Sid": "TriggerQueue",
                "Effect": "Allow",
                "Action": list(privileges.TRIGGER),
                "Resource": f"arn:aws:sqs:*:*:{names[needs.triggered_by]}",
            }
        )
    if needs.token_secret:
        statements.append(
            {
                # The token signing secret, read at run time (both labels during a rotation).
                "Sid": "TokenSecret",
                "Effect": "Allow",
                "Action": ["secretsmanager:GetSecretValue"],
                "Resource": f"arn:aws:secretsmanager:*:*:secret:{names['secret']}-??????",
            }
        )
    if needs.canary_secret:
        statements.append(
            {
                # The deploy canary's password (services/canary.py): this one secret only.
                "Sid": "CanarySecret",
                "Effect": "Allow",
                "Action": ["secretsmanager:GetSecretValue"],
                "Resource": f"arn:aws:secretsmanager:*:*:secret:{names['canary_secret']}-??????",
            }
        )
    if needs.reads_inbound_mail:
        statements.append(
            {
                # The raw mail SES receiving stored (infra/inbound.py), read once.
                "Sid": "InboundMail",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": inbound.bucket_pattern(stage),
            }
        )
    if needs.drains_outbox:
        statements.append(
            {
                # The outbox table's stream: its event source mapping reads it with this role.
                "Sid": "OutboxStream",
                "Effect": "Allow",
                "Action": [
                    "dynamodb:DescribeStream",
                    "dynamodb:GetRecords",
                    "dynamodb:GetShardIterator",
                    "dynamodb:ListStreams",
                ],
                "Resource": f"arn:aws:dynamodb:*:*:table/{names['table_prefix']}outbox/stream/*",
            }
        )
    if needs.domain_events:
        statements.append(
            {
                "Sid": "DomainEvents",
                "Effect": "Allow",
                "Action": ["events:PutEvents"],
                "Resource": f"arn:aws:events:*:*:event-bus/{names['event_bus']}",
            }
        )
    if needs.deploy_hook:
        statements.append(
            {
                # SAM's deployment application, whatever the stack is called.
                "Sid": "DeployHook",
                "Effect": "Allow",
                "Action": ["codedeploy:PutLifecycleEventHookExecutionStatus"],
                "Resource": "arn:aws:codedeploy:*:*:deploymentgroup:"
                "*-ServerlessDeploymentApplication-*/*",
            }
        )
    return statements


def sender_domain() -> dict[str, Any]:
    """The domain of the one sending identity: MailSenderDomain, or the host of BaseUrl when it
    is empty. (A new dict at each use: YAML anchors are not CloudFormation.)"""
    return {
        "Fn::If": [
            "HasMailSenderDomain",
            {"Ref": "MailSenderDomain"},
            {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "BaseUrl"}]}]},
        ]
    }


def sender_address() -> dict[str, Any]:
    """AGORA_MAIL_SENDER in the stack: noreply@ the sending identity's domain."""
    return {"Fn::Sub": ["noreply@${Domain}", {"Domain": sender_domain()}]}


def mail_sending_policy(stage: str) -> dict[str, Any]:
    """ses:SendRawEmail for the functions that send mail, on the stack's verified identity and
    from its one address only (AGORA_MAIL_SENDER): no group can speak as another address."""
    names = stage_names(stage)
    roles = [
        {"Ref": operations.role_id(function)}
        for function, needs in privileges.FUNCTIONS.items()
        if needs.sends_mail
    ]
    return {
        "Type": "AWS::IAM::Policy",
        "Properties": {
            "PolicyName": "send-mail-from-the-stack-identity",
            "Roles": roles,
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "NotificationMail",
                        "Effect": "Allow",
                        "Action": ["ses:SendRawEmail"],
                        "Resource": [
                            {
                                "Fn::Sub": [
                                    "arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}"
                                    ":identity/${Domain}",
                                    {"Domain": sender_domain()},
                                ]
                            },
                            {
                                "Fn::Sub": "arn:${AWS::Partition}:ses:${AWS::Region}:"
                                "${AWS::AccountId}:configuration-set/" + names["configuration_set"]
                            },
                        ],
                        "Condition": {"StringEquals": {"ses:FromAddress": sender_address()}},
                    }
                ],
            },
        },
    }


def chalice_config(stages: tuple[str, ...] = STAGES) -> str:
    """`.chalice/config.json` with each function's own policy file (and no stage-wide one)."""
    path = ROOT / ".chalice" / "config.json"
    config = json.loads(path.read_text())
    for stage in stages:
        settings = config["stages"][stage]
        settings.pop("iam_policy_file", None)
        functions = settings.setdefault("lambda_functions", {})
        for function in privileges.FUNCTIONS:
            functions.setdefault(function, {})["iam_policy_file"] = privileges.policy_file(
                stage, function
            )
    return json.dumps(config, indent=2) + "\n"


def rendered(stage: str) -> dict[Path, str]:
    from infra import yaml_text

    header = (
        "# Generated by `python -m infra.build` from chalicelib/store: edit the models, not this.\n"
    )
    return {
        ROOT / "infra" / f"{stage}.yaml": header
        + yaml_text.dump(template(stage), sort_keys=False, width=100),
    } | {
        ROOT / ".chalice" / privileges.policy_file(stage, function): json.dumps(
            policy(stage, function), indent=2
        )
        + "\n"
        for function in privileges.FUNCTIONS
    }


@contextlib.contextmanager
def _store_restored() -> Iterator[None]:
    """Put back the store modules, the table prefix and the settings `_models` replaced: a test
    (or `make run`) that calls `main` in its own process keeps the model classes it was using."""
    from chalicelib.settings import reload_settings

    modules = {name: m for name, m in sys.modules.items() if name.startswith("chalicelib.store")}
    prefix = os.environ.get("AGORA_TABLE_PREFIX")
    try:
        yield
    finally:
        for name in [m for m in sys.modules if m.startswith("chalicelib.store")]:
            del sys.modules[name]
        sys.modules.update(modules)
        if "chalicelib.store" in modules:
            sys.modules["chalicelib"].store = modules["chalicelib.store"]  # type: ignore[attr-defined]
        if prefix is None:
            os.environ.pop("AGORA_TABLE_PREFIX", None)
        else:
            os.environ["AGORA_TABLE_PREFIX"] = prefix
        reload_settings()


def _differs(committed: str, generated: str, suffix: str) -> bool:
    """A template differs when its document does: libyaml's emitter and PyYAML's pure-Python one
    (where libyaml is missing) fold long strings differently, and both read back the same."""
    if suffix != ".yaml" or committed == generated:
        return committed != generated
    from infra import yaml_text

    return bool(yaml_text.load(committed) != yaml_text.load(generated))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.build", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--check", action="store_true", help="fail when a committed file is out of date"
    )
    args = parser.parse_args(argv)
    stale = []
    with _store_restored():
        files = {ROOT / ".chalice" / "config.json": chalice_config()}
        for stage in STAGES:
            files.update(rendered(stage))
        for path, text in files.items():
            if args.check:
                if not path.exists() or _differs(path.read_text(), text, path.suffix):
                    stale.append(str(path.relative_to(ROOT)))
            else:
                path.write_text(text)
    if stale:
        print("out of date (run `python -m infra.build`): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
