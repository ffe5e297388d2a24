"""Who is woken, and for what (issues 48, 57): two topics instead of one that mailed every alarm
on alarm and on recovery.

- **Page** (`agora-<stage>-page`, PageEmail or else AlarmEmail): one composite alarm per cause,
  over the alarms that cause fires together, so a cause pages once, and its recovery once: the
  API down for members, mail-in stopped for everyone, notifications stopped for everyone, digests
  stopped for everyone, SES about to stop the account's sending (its quota used up, a bounce or
  complaint rate near SES's pause), outbox records lost, dead letters about to expire. A page is
  a rate or a silence, never a single error: one 500, one failed invocation and 80% of the SES
  quota are tickets.
- **Ticket** (`agora-<stage>-alarms`, AlarmEmail): every alarm, a composite's members too, mailed
  when it fires only (its recovery is in the console; a ticket is closed by a person). A member
  that stays red (a dead letter for 14 days) keeps its composite red, so a second cause under the
  same page pages nobody: its own ticket still says it.

Who each alarm pages is a column of infra/alarms.py's table (`pages`), and the causes are its
CAUSES: this module makes the page topic and the composites from them. The members still roll a
deploy back (CodeDeploy reads their state) and show in the console.
"""

from __future__ import annotations

from typing import Any

from infra.cloudwatch import ITSELF, PAGE_TOPIC, TICKET, Alarm, composite


def parameters() -> dict[str, Any]:
    return {
        "PageEmail": {
            "Type": "String",
            "Default": "",
            "Description": "Address paged for data loss, an API members cannot use and mail "
            "stopped for everyone (make deploy PAGE_EMAIL=...); empty: AlarmEmail",
        }
    }


def conditions() -> dict[str, Any]:
    return {"HasPageEmail": {"Fn::Not": [{"Fn::Equals": [{"Ref": "PageEmail"}, ""]}]}}


def topics(stage: str) -> dict[str, Any]:
    prefix = f"agora-{stage}"
    return {
        PAGE_TOPIC: {
            "Type": "AWS::SNS::Topic",
            "Properties": {
                "TopicName": f"{prefix}-page",
                "DisplayName": f"Agora {stage} PAGE",
                "Subscription": [
                    {
                        "Protocol": "email",
                        "Endpoint": {
                            "Fn::If": ["HasPageEmail", {"Ref": "PageEmail"}, {"Ref": "AlarmEmail"}]
                        },
                    }
                ],
            },
        }
    }


def route(stage: str, declared: list[Alarm], causes: dict[str, str]) -> dict[str, Any]:
    """The page topic, and one composite per cause over the alarms that name it (`pages`), in
    the table's order."""
    found: dict[str, Any] = topics(stage)
    paged = {alarm.pages for alarm in declared} - {TICKET, ITSELF}
    if paged - set(causes):
        raise ValueError(f"alarms page under no declared cause: {sorted(paged - set(causes))}")
    for logical, about in causes.items():
        members = [alarm for alarm in declared if alarm.pages == logical]
        if not members:
            raise ValueError(f"{logical} pages for no alarm")
        found[logical] = composite(stage, logical, about, members)
    return found
