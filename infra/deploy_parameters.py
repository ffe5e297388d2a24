"""The stack parameters `make deploy` passes (issue 57): a deploy keeps what it is not given.

Every optional parameter that the deploy's arguments leave out keeps the stack's deployed value
(`UsePreviousValue`); a new stack takes the template's default. An argument given empty
(`make deploy PAGE_EMAIL=`) sets it empty. `make restore`'s `TableNames` is only ever kept. The
canary's switches (`RollbackOnAlarms`, `DeployAllAtOnce`) are for one deploy: each deploy sets
them, off unless asked.

The SES sending identity is a create-only resource named after the sending domain
(`MailSenderDomain`, or the host of `BaseUrl` when it is empty): a deploy that changes that
domain deletes the verified identity and creates a new one, and all mail fails until the new
one's DKIM records verify. Such a deploy is refused unless asked (`REPLACE_SENDER_IDENTITY=1`),
and says what it will do either way.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

# Optional parameter -> the argument (infra.deploy's) that sets it; None: not given, kept.
OPTIONAL = {
    "MailSenderDomain": "mail_sender_domain",
    "PageEmail": "page_email",
    "SesDailyQuota": "ses_daily_quota",
    "MonthlyBudgetUsd": "monthly_budget_usd",
    "ManageApiGatewayAccount": "api_gateway_account",
    "BackupRegion": "backup_region",  # prod only (infra.disaster)
    # Mail in by push (infra/inbound.py): SES receiving for this domain; a rule set to join.
    "MailInboundDomain": "mail_inbound_domain",
    "MailInboundRuleSet": "mail_inbound_rule_set",
}
# Numbers: an empty argument is no value, so it is not given either.
NUMBERS = ("SesDailyQuota", "MonthlyBudgetUsd")
# Set by make restore only: every deploy keeps it.
ONLY_KEPT = ("TableNames",)
KEPT_PARAMETERS = (*OPTIONAL, *ONLY_KEPT)


class ParameterError(Exception):
    """One line for the operator."""


@dataclass
class Parameters:
    given: dict[str, str]
    kept: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def values(self, previous: dict[str, str]) -> dict[str, str]:
        """Every parameter's value after the deploy (a default one is absent)."""
        return {**{k: previous[k] for k in self.kept}, **self.given}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def sending_domain(values: dict[str, str]) -> str:
    """The SES identity's domain, as the template's `sender_domain` resolves it."""
    if values.get("MailSenderDomain"):
        return values["MailSenderDomain"]
    return urlsplit(values.get("BaseUrl", "")).netloc


def stack_parameters(args: argparse.Namespace, previous: dict[str, str] | None) -> Parameters:
    """What to pass for a deploy with `args` to a stack whose parameters are `previous` (None:
    no stack yet)."""
    if args.stage != "prod" and getattr(args, "backup_region", None):
        raise ParameterError("BACKUP_REGION is a prod stack's (the copy out of the region)")
    stack = previous or {}
    given = {"BaseUrl": args.base_url, "AlarmEmail": args.alarm_email}
    optional = {
        k: v for k, v in _optional(args).items() if k != "BackupRegion" or args.stage == "prod"
    }
    given.update({k: v for k, v in optional.items() if v is not None})
    kept = [k for k in KEPT_PARAMETERS if k in stack and optional.get(k) is None]
    if args.stage == "prod":
        given.update(_canary_switches(args))
    found = Parameters(given, kept)
    if previous is not None:
        found.notes += _identity_change(args, previous, found.values(previous))
    return found


def _canary_switches(args: argparse.Namespace) -> dict[str, str]:
    """A prod deploy's canary switches, for this deploy only."""
    return {
        "RollbackOnAlarms": "false" if getattr(args, "no_rollback_alarms", False) else "true",
        "DeployAllAtOnce": "true" if getattr(args, "all_at_once", False) else "false",
    }


def _optional(args: argparse.Namespace) -> dict[str, str | None]:
    """Each optional parameter's value as given, None when not given (an empty number is none)."""
    found = {}
    for parameter, argument in OPTIONAL.items():
        value = _text(getattr(args, argument, None))
        found[parameter] = None if value == "" and parameter in NUMBERS else value
    return found


def _identity_change(
    args: argparse.Namespace, previous: dict[str, str], after: dict[str, str]
) -> list[str]:
    old, new = sending_domain(previous), sending_domain(after)
    if old == new:
        return []
    what = (
        f"the SES sending identity {old} is replaced by {new}: CloudFormation deletes the "
        f"verified identity {old} and creates {new}, and every notification and digest fails "
        f"until {new}'s three DKIM records (the output MailSenderDkimRecords) are in its DNS "
        "and SES has verified them"
    )
    if not getattr(args, "replace_sender_identity", False):
        raise ParameterError(
            f"{what}. Nothing was changed: run make deploy again with REPLACE_SENDER_IDENTITY=1 "
            f"to do it, or with MAIL_SENDER_DOMAIN={old} to keep it"
        )
    return [what]
