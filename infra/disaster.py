"""A region outage (issue 57): what is copied out of the region, and who is paged (prod only).

- **A copy in a second region**: with `BackupRegion` set (`make deploy BACKUP_REGION=…`), AWS
  Backup takes every table of the stage once a day and copies each recovery point to the vault
  `agora-<stage>-copy` of that region (made there by hand once: docs/deploy.md), kept 35 days.
  DynamoDB's cross-region copies need AWS Backup's advanced DynamoDB features (an account setting,
  in the first-deploy checklist).
- **A page** (its alarm is infra/alarms.py's): a Route 53 health check asks the API's OpenAPI document from Route 53's checkers
  in several regions, every 30 s; `agora-<stage>-region-outage` pages when it fails 3 minutes
  running. Route 53's metrics are in us-east-1 only, so the alarm is made where the stack is in
  us-east-1; elsewhere docs/deploy.md gives the one command that makes it there.

What is accepted (docs/deploy.md, "Region outage"): within the region, point-in-time recovery
(RPO minutes, `make restore`); for the loss of the region, RPO 24 hours (the daily copy) and RTO
4 hours (restore the copies in the second region and `make deploy` there).
"""

from __future__ import annotations

from typing import Any

from infra.privileges import assumed_by

BACKUP_REGION = "BackupRegion"
COPY_KEPT_DAYS = 35
BACKUP_SCHEDULE = "cron(0 5 * * ? *)"  # 05:00 UTC, after the night's digests are queued
HEALTH_PATH = "/api/v1/en_US/openapi.json"
# Minutes of failed checks before the page (each minute: most checkers failed).
OUTAGE_MINUTES = 3


def parameters() -> dict[str, Any]:
    return {
        BACKUP_REGION: {
            "Type": "String",
            "Default": "",
            "AllowedPattern": "^([a-z]{2}(-[a-z]+)+-[0-9])?$",
            "Description": "prod: the second region that AWS Backup copies every table to once a "
            "day, into its vault agora-<stage>-copy (make deploy BACKUP_REGION=...); empty: no "
            "copy out of the region",
        }
    }


def conditions() -> dict[str, Any]:
    return {
        "HasBackupRegion": {"Fn::Not": [{"Fn::Equals": [{"Ref": BACKUP_REGION}, ""]}]},
        "InUsEast1": {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]},
    }


def disaster_resources(stage: str, tables: dict[str, str]) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    table_arns = [
        {
            "Fn::Sub": f"arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/{name}"
        }
        for name in sorted(tables.values())
    ]
    copy_vault = {
        "Fn::Sub": "arn:${AWS::Partition}:backup:${BackupRegion}:${AWS::AccountId}:backup-vault:"
        f"{prefix}-copy"
    }
    backed_up = {"Condition": "HasBackupRegion"}
    return {
        "BackupVault": {
            "Type": "AWS::Backup::BackupVault",
            **backed_up,
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {"BackupVaultName": prefix},
        },
        "BackupRole": {
            "Type": "AWS::IAM::Role",
            **backed_up,
            "Properties": {
                "AssumeRolePolicyDocument": assumed_by("backup.amazonaws.com"),
                "ManagedPolicyArns": [
                    {
                        "Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/service-role/"
                        "AWSBackupServiceRolePolicyForBackup"
                    }
                ],
            },
        },
        "BackupPlan": {
            "Type": "AWS::Backup::BackupPlan",
            **backed_up,
            "Properties": {
                "BackupPlan": {
                    "BackupPlanName": prefix,
                    "BackupPlanRule": [
                        {
                            "RuleName": "daily-copy-out-of-region",
                            "TargetBackupVault": {"Ref": "BackupVault"},
                            "ScheduleExpression": BACKUP_SCHEDULE,
                            "StartWindowMinutes": 60,
                            "CompletionWindowMinutes": 480,
                            "Lifecycle": {"DeleteAfterDays": 7},
                            "CopyActions": [
                                {
                                    "DestinationBackupVaultArn": copy_vault,
                                    "Lifecycle": {"DeleteAfterDays": COPY_KEPT_DAYS},
                                }
                            ],
                        }
                    ],
                }
            },
        },
        "BackupSelection": {
            "Type": "AWS::Backup::BackupSelection",
            **backed_up,
            "Properties": {
                "BackupPlanId": {"Ref": "BackupPlan"},
                "BackupSelection": {
                    "SelectionName": "every-table",
                    "IamRoleArn": {"Fn::GetAtt": ["BackupRole", "Arn"]},
                    "Resources": table_arns,
                },
            },
        },
        "ApiHealthCheck": {
            "Type": "AWS::Route53::HealthCheck",
            "Properties": {
                "HealthCheckConfig": {
                    "Type": "HTTPS",
                    "FullyQualifiedDomainName": {
                        "Fn::Sub": "${RestAPI}.execute-api.${AWS::Region}.${AWS::URLSuffix}"
                    },
                    "ResourcePath": f"/api{HEALTH_PATH}",
                    "RequestInterval": 30,
                    "FailureThreshold": 3,
                },
                "HealthCheckTags": [{"Key": "Name", "Value": f"{prefix}-api"}],
            },
        },
    }
