"""Mail in by push in AWS (CONTRACT §13): SES receiving for the stack parameter MailInboundDomain
(AGORA_MAIL_INBOUND_DOMAIN). Merged into the template by `infra.build`; nothing of it exists while
the parameter is empty (condition ReceivesMail), except the dead-letter queue (alarmed:
infra/alarms.py).

One receipt rule for the domain, three actions in order:
1. `mail-verdict` (Lambda, RequestResponse): STOP_RULE unless a recipient is one of Agora's
   addresses (chalicelib/jobs/mail_push.py `verdict`), so the rest is never stored, and dropped
   without a bounce to a sender who may be forged. SES itself refuses at RCPT every address
   outside the rule's domain.
2. S3: the raw mail in the inbound bucket under `inbound/<SES message id>` (encrypted, private,
   deleted after INBOUND_DAYS).
3. `receive-mail` (Lambda, Event): reads it and hands it to mail in; Lambda retries a failed
   invocation twice, then sends it to the dead-letter queue (alarmed).

SES keeps one active receipt rule set per account and region: the stack makes its own
(`agora-<stage>-inbound`) unless MailInboundRuleSet names an existing one to add its rule to
(the account's active set, whose other rules keep working). Activating a set is not a
CloudFormation resource: docs/deploy.md's checklist says how.
"""

from __future__ import annotations

from typing import Any

from chalicelib.jobs.mail_push import INBOUND_PREFIX

# Days a raw mail stays in the bucket: long enough to read one back after a failure (its dead
# letter names it), short enough that the bucket holds no archive of members' mail.
INBOUND_DAYS = 14
# Lambda's own retries of a failed asynchronous invocation (its maximum).
RECEIVE_RETRIES = 2


def bucket_name(stage: str) -> dict[str, Any]:
    """Bucket names are global: the account and region make it this stack's own."""
    return {"Fn::Sub": f"agora-{stage}-inbound-mail-${{AWS::AccountId}}-${{AWS::Region}}"}


def bucket_pattern(stage: str) -> str:
    """What a policy file (which cannot name the account) grants: this stage's bucket."""
    return f"arn:aws:s3:::agora-{stage}-inbound-mail-*/{INBOUND_PREFIX}*"


def parameters() -> dict[str, Any]:
    return {
        "MailInboundDomain": {
            "Type": "String",
            "Default": "",
            "Description": "Domain whose mail Agora receives itself through SES "
            "(AGORA_MAIL_INBOUND_DOMAIN: <group slug>@<domain>); its MX must point at SES "
            "inbound in this region. Empty: no mail in by push",
            "AllowedPattern": r"^$|^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$",
            "ConstraintDescription": "a domain name such as mail.example.org, or empty",
        },
        "MailInboundRuleSet": {
            "Type": "String",
            "Default": "",
            "Description": "An existing SES receipt rule set (the account's active one) to add "
            "Agora's rule to; empty: the stack makes agora-<stage>-inbound (activate it once)",
        },
    }


def conditions() -> dict[str, Any]:
    receives = {"Fn::Not": [{"Fn::Equals": [{"Ref": "MailInboundDomain"}, ""]}]}
    return {
        "ReceivesMail": receives,
        "MakesRuleSet": {
            "Fn::And": [
                {"Condition": "ReceivesMail"},
                {"Fn::Equals": [{"Ref": "MailInboundRuleSet"}, ""]},
            ]
        },
    }


def _ses_may_invoke(function: str) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::Permission",
        "Condition": "ReceivesMail",
        "Properties": {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Ref": f"{function}.Alias"},
            "Principal": "ses.amazonaws.com",
            "SourceAccount": {"Ref": "AWS::AccountId"},
        },
    }


def _bucket(stage: str) -> dict[str, Any]:
    kept = "Retain" if stage == "prod" else "Delete"
    return {
        "Type": "AWS::S3::Bucket",
        "Condition": "ReceivesMail",
        "DeletionPolicy": kept,
        "UpdateReplacePolicy": kept,
        "Properties": {
            "BucketName": bucket_name(stage),
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                ]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
            "VersioningConfiguration": {"Status": "Suspended"},
            "LifecycleConfiguration": {
                "Rules": [
                    {
                        "Id": "raw-mail-expires",
                        "Status": "Enabled",
                        "Prefix": INBOUND_PREFIX,
                        "ExpirationInDays": INBOUND_DAYS,
                        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                    }
                ]
            },
        },
    }


def _bucket_policy(stage: str) -> dict[str, Any]:
    bucket = {"Fn::GetAtt": ["InboundMailBucket", "Arn"]}
    objects = {"Fn::Sub": "${InboundMailBucket.Arn}/*"}
    return {
        "Type": "AWS::S3::BucketPolicy",
        "Condition": "ReceivesMail",
        "Properties": {
            "Bucket": {"Ref": "InboundMailBucket"},
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "SesStoresInboundMail",
                        "Effect": "Allow",
                        "Principal": {"Service": "ses.amazonaws.com"},
                        "Action": "s3:PutObject",
                        "Resource": {"Fn::Sub": "${InboundMailBucket.Arn}/" + INBOUND_PREFIX + "*"},
                        "Condition": {
                            "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                            "ArnLike": {
                                "aws:SourceArn": {
                                    "Fn::Sub": "arn:${AWS::Partition}:ses:${AWS::Region}:"
                                    "${AWS::AccountId}:receipt-rule-set/*:receipt-rule/"
                                    f"agora-{stage}-inbound"
                                }
                            },
                        },
                    },
                    {
                        "Sid": "TlsOnly",
                        "Effect": "Deny",
                        "Principal": "*",
                        "Action": "s3:*",
                        "Resource": [bucket, objects],
                        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    },
                ],
            },
        },
    }


def _rule(stage: str) -> dict[str, Any]:
    return {
        "Type": "AWS::SES::ReceiptRule",
        "Condition": "ReceivesMail",
        "DependsOn": [
            "InboundMailBucketPolicy",
            "MailVerdictSesPermission",
            "ReceiveMailSesPermission",
        ],
        "Properties": {
            "RuleSetName": {
                "Fn::If": ["MakesRuleSet", {"Ref": "InboundRuleSet"}, {"Ref": "MailInboundRuleSet"}]
            },
            "Rule": {
                "Name": f"agora-{stage}-inbound",
                "Enabled": True,
                "ScanEnabled": True,
                "TlsPolicy": "Optional",
                "Recipients": [{"Ref": "MailInboundDomain"}],
                "Actions": [
                    {
                        "LambdaAction": {
                            "FunctionArn": {"Ref": "MailVerdict.Alias"},
                            "InvocationType": "RequestResponse",
                        }
                    },
                    {
                        "S3Action": {
                            "BucketName": {"Ref": "InboundMailBucket"},
                            "ObjectKeyPrefix": INBOUND_PREFIX,
                        }
                    },
                    {
                        "LambdaAction": {
                            "FunctionArn": {"Ref": "ReceiveMail.Alias"},
                            "InvocationType": "Event",
                        }
                    },
                ],
            },
        },
    }


def inbound_resources(stage: str, names: dict[str, str]) -> dict[str, Any]:
    domain = {"AGORA_MAIL_INBOUND_DOMAIN": {"Ref": "MailInboundDomain"}}
    return {
        "InboundMailBucket": _bucket(stage),
        "InboundMailBucketPolicy": _bucket_policy(stage),
        "InboundRuleSet": {
            "Type": "AWS::SES::ReceiptRuleSet",
            "Condition": "MakesRuleSet",
            "Properties": {"RuleSetName": f"agora-{stage}-inbound"},
        },
        "InboundReceiptRule": _rule(stage),
        "MailVerdictSesPermission": _ses_may_invoke("MailVerdict"),
        "ReceiveMailSesPermission": _ses_may_invoke("ReceiveMail"),
        "InboundMailDeadLetterQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": names["inbound_dead_letters"],
                "MessageRetentionPeriod": 1209600,
            },
        },
        # The functions: who receives (its bucket, its retries and dead letters), who decides.
        "ReceiveMail": {
            "Properties": {
                "Environment": {
                    "Variables": {
                        **domain,
                        "AGORA_MAIL_INBOUND_BUCKET": {
                            "Fn::If": ["ReceivesMail", {"Ref": "InboundMailBucket"}, ""]
                        },
                        # It reads mail: DKIM and DMARC checked by Agora itself, SES's
                        # verdicts never trusted over them (CONTRACT §2, §13).
                        "AGORA_MAIL_AUTH": "verify",
                    }
                },
                "EventInvokeConfig": {
                    "MaximumRetryAttempts": RECEIVE_RETRIES,
                    "DestinationConfig": {
                        "OnFailure": {
                            "Type": "SQS",
                            "Destination": {"Fn::GetAtt": ["InboundMailDeadLetterQueue", "Arn"]},
                        }
                    },
                },
            }
        },
        "MailVerdict": {"Properties": {"Environment": {"Variables": domain}}},
        # The email-to-post settings answer each group's inboundAddress.
        "APIHandler": {"Properties": {"Environment": {"Variables": domain}}},
    }
