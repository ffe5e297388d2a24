"""What became of each mail SES took (issue 57): its events kept, so "why did member X not get the
notification of post Y" is answered from the logs.

The configuration set every mail is sent with (infra/build.py `feedback_resources`) sends each
mail's events (sent, delivered, delayed, bounced, complained, rejected) to the account's default
EventBridge bus as well; a rule takes the stage's own (its configuration set's) into the log group
`/aws/events/agora-<stage>-ses-events`, one JSON event a line, kept as long as the functions' logs.
deliver-notifications' log says, per recipient, why a notification was not sent or the SES
message id it was sent as (services/notify/delivery.py): docs/deploy.md shows the query that
joins the two.
"""

from __future__ import annotations

import json
from typing import Any

from infra.rollout import LOG_RETENTION_DAYS

EVENT_TYPES = ["send", "delivery", "deliveryDelay", "bounce", "complaint", "reject"]


def log_group_name(stage: str) -> str:
    return f"/aws/events/agora-{stage}-ses-events"


def rule_name(stage: str) -> str:
    return f"agora-{stage}-ses-events"


def mail_event_resources(stage: str, names: dict[str, str]) -> dict[str, Any]:
    group = log_group_name(stage)
    group_arn = {
        "Fn::Sub": f"arn:${{AWS::Partition}}:logs:${{AWS::Region}}:${{AWS::AccountId}}:"
        f"log-group:{group}:*"
    }
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "SesEventsToLogs",
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "delivery.logs.amazonaws.com"]},
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "${GroupArn}",
            }
        ],
    }
    return {
        "SesEventsLogGroup": {
            "Type": "AWS::Logs::LogGroup",
            "Properties": {"LogGroupName": group, "RetentionInDays": LOG_RETENTION_DAYS[stage]},
        },
        "SesEventsLogPolicy": {
            "Type": "AWS::Logs::ResourcePolicy",
            "Properties": {
                "PolicyName": rule_name(stage),
                "PolicyDocument": {"Fn::Sub": [json.dumps(policy), {"GroupArn": group_arn}]},
            },
        },
        "SesEventsDestination": {
            "Type": "AWS::SES::ConfigurationSetEventDestination",
            "Properties": {
                "ConfigurationSetName": {"Ref": "SesConfigurationSet"},
                "EventDestination": {
                    "Name": "every-event-to-eventbridge",
                    "Enabled": True,
                    "MatchingEventTypes": EVENT_TYPES,
                    "EventBridgeDestination": {
                        "EventBusArn": {
                            "Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:"
                            "${AWS::AccountId}:event-bus/default"
                        }
                    },
                },
            },
        },
        "SesEventsRule": {
            "Type": "AWS::Events::Rule",
            "DependsOn": ["SesEventsLogPolicy"],
            "Properties": {
                "Name": rule_name(stage),
                "Description": "The stage's SES mail events into its log group",
                "EventPattern": {
                    "source": ["aws.ses"],
                    "detail": {
                        "mail": {"tags": {"ses:configuration-set": [names["configuration_set"]]}}
                    },
                },
                "Targets": [
                    {
                        "Id": "ses-events-log",
                        "Arn": {"Fn::GetAtt": ["SesEventsLogGroup", "Arn"]},
                        # What EventBridge could not write waits with the schedules' failures.
                        "DeadLetterConfig": {
                            "Arn": {"Fn::GetAtt": ["ScheduledFailuresQueue", "Arn"]}
                        },
                    }
                ],
            },
        },
    }
