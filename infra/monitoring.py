"""The schedules' fixed rule names and the stage's one dashboard; the alarms that watch them are
infra/alarms.py's (QUEUES and SCHEDULES are its tables). Merged into the template by
`infra.build`.
"""

from __future__ import annotations

from typing import Any

from infra import dashboard as board
from infra.alarms import QUEUES, SCHEDULES


def schedule_rule_name(stage: str, function: str) -> str:
    return f"agora-{stage}-{function}"


def schedule_names(stage: str) -> dict[str, Any]:
    """Fragments that give each schedule's EventBridge rule a fixed name (the alarm's dimension)."""
    # An invocation EventBridge itself could not make (the function gone, its permission
    # missing) goes to the scheduled-failures queue too, beside the runs that failed (ES4000).
    dead_letters = {"Arn": {"Fn::GetAtt": ["ScheduledFailuresQueue", "Arn"]}}
    resources: dict[str, Any] = {
        logical: {
            "Properties": {
                "Events": {
                    f"{logical}Event": {
                        "Properties": {
                            "Name": schedule_rule_name(stage, name),
                            "DeadLetterConfig": dead_letters,
                        }
                    }
                }
            }
        }
        for logical, name in SCHEDULES.items()
    }
    resources["ScheduledFailuresQueuePolicy"] = {
        "Type": "AWS::SQS::QueuePolicy",
        "Properties": {
            "Queues": [{"Ref": "ScheduledFailuresQueue"}],
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "ScheduleDeadLetters",
                        "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": {"Fn::GetAtt": ["ScheduledFailuresQueue", "Arn"]},
                        "Condition": {
                            "ArnEquals": {
                                "aws:SourceArn": [
                                    {
                                        "Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:"
                                        "${AWS::AccountId}:rule/" + schedule_rule_name(stage, name)
                                    }
                                    for name in (*SCHEDULES.values(), "check-aliases", "ses-events")
                                ]
                            }
                        },
                    }
                ],
            },
        },
    }
    return resources


def dashboard(stage: str, names: dict[str, str]) -> dict[str, Any]:
    """API latency and errors, mail outcomes, queues, notifications, DynamoDB throttles, SES
    reputation (infra/dashboard.py lays them out)."""
    queues = [names[q] for q, _, _ in QUEUES.values()]
    dead = [names[d] for _, d, _ in QUEUES.values()]
    dead += [names["outbox_dead_letters"], names["scheduled_failures"]]
    failures = names["scheduled_failures"]
    return board.dashboard(f"agora-{stage}", queues, dead, list(SCHEDULES.values()), failures)


def monitoring_resources(
    stage: str, names: dict[str, str], tables: dict[str, str]
) -> dict[str, Any]:
    """The schedules' names and the dashboard."""
    return {
        **schedule_names(stage),
        "Dashboard": dashboard(stage, names),
    }
