"""SES bounce and complaint notifications, taken off the SQS queue that their SNS topic feeds.

`app.py`'s SQS-triggered function and the tests call `handle_from_queue`. A body is either SNS's
envelope (`{"Type": "Notification", "Message": "<the SES JSON>"}`) or, with raw message delivery,
the SES JSON itself. A body that is neither is logged and dropped: retrying it cannot help.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib import deps
from chalicelib.logs import get_logger

log = get_logger("jobs.ses_feedback")


def unwrap(body: str) -> dict[str, Any] | None:
    try:
        data = json.loads(body)
        if isinstance(data, dict) and data.get("Type") == "Notification":
            data = json.loads(data.get("Message", ""))
    except (TypeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def handle_from_queue(bodies: list[str], *, service: Any = None) -> dict[str, int]:

    service = service or deps.suppression_service()
    suppressed = ignored = 0
    for body in bodies:
        notification = unwrap(body)
        if notification is None:
            ignored += 1
            log.warning("not an SES notification; dropped", extra={"body": body[:200]})
            continue
        suppressed += len(service.record(notification))
    return {"suppressed": suppressed, "ignored": ignored}
